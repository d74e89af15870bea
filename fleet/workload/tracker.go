package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// podTimes is one pod's way to Running, at the points ClusterLoader2's
// PodStartupLatency names: create, schedule, run (= watch).
//   - created: for a pod GhostFleet sent, just before the request left
//     (client clock, ms); for any other pod, its creationTimestamp
//     (apiserver clock, whole seconds), and createdBySend says which.
//   - seen: when the watch (or the list before it) first delivered the
//     pod (ms; a pod made by a controller has no finer creation time).
//   - scheduled: when the watch first saw spec.nodeName set (ms; includes
//     the watch's delivery lag).
//   - watched: when the watch first saw the pod Running (ms). CL2 takes
//     its run and watch points both from this one event (its run_to_watch
//     is 0 by construction), and kwok's container startedAt has only
//     whole seconds, so GhostFleet reports no run→watch phase.
//   - ended: when the watch first saw the pod Failed or Succeeded, being
//     deleted (an eviction, a Job replacing it) or gone (ms).
type podTimes struct {
	created, seen, scheduled, watched, ended time.Time
	createdBySend                            bool
	unschedulable, failed                    bool
	reason                                   string // the scheduler's message when unschedulable
	name, group, node                        string
	boundVersion                             string
}

// PodTimes is one tracked pod: its UID and name, its group (the value of the
// tracker's group label), node, and when it was created, first seen by
// the watch (or the list before it), seen bound, seen running and seen
// ending (zero when not yet). BoundVersion is the resource version of
// the first copy seen bound, if that copy was not yet running (its
// binding's, when nothing else wrote the pod in between); empty if not.
type PodTimes struct {
	UID, Name                                string
	Group                                    string
	Node                                     string
	Created, Seen, Scheduled, Running, Ended time.Time
	BoundVersion                             string
}

// Tracker follows a workload's pods through a watch and keeps only their
// timestamps, never the objects.
type Tracker struct {
	mu   sync.Mutex
	pods map[string]*podTimes
	// sent is when each pod GhostFleet creates was sent, by name.
	sent map[string]time.Time
	// groupLabel, when set, names the pod label whose value groups pods
	// (a training job, a pod size).
	groupLabel string
	now        func() time.Time
	stopWatch  func()
}

// Counts is how many tracked pods reached each state; Ended counts the
// pods seen running that have since ended.
type Counts struct {
	Seen, Scheduled, Running, Unschedulable, Failed, Ended int
}

// Create-time sources, as Startup.CreateTime reports them.
const (
	CreateTimeSend              = "client send time (ms)"
	CreateTimeCreationTimestamp = "creationTimestamp (whole seconds)"
	CreateTimeMixed             = "client send time (ms) for pods GhostFleet sent, creationTimestamp (whole seconds) for the rest"
)

// Startup is the pod startup latency split by phase, named and cut as
// ClusterLoader2's PodStartupLatency does (create_to_schedule,
// schedule_to_run, pod_startup = create to watch).
type Startup struct {
	CreateToSchedule Percentiles `json:"createToSchedule"`
	ScheduleToRun    Percentiles `json:"scheduleToRun"`
	// PodStartup is the SLI of the pod startup SLO: create to the watch
	// seeing the pod Running.
	PodStartup Percentiles `json:"podStartup"`
	// CreateTime says where the create times came from.
	CreateTime string `json:"createTime,omitempty"`
}

func newTracker(now func() time.Time) *Tracker {
	return &Tracker{pods: map[string]*podTimes{}, sent: map[string]time.Time{}, now: now}
}

// Sending records that the pod called name is being sent now: call it
// just before the create request, so that its startup is timed from the
// real start and not from when the watch first sees it.
func (t *Tracker) Sending(name string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent[name] = now
}

// StartTracker watches the pods matching selector in namespace ns. It
// returns once the watch is established, so that no pod created after it
// returns is missed.
func StartTracker(ctx context.Context, cs kubernetes.Interface, ns, selector, groupLabel string) (*Tracker, error) {
	t := newTracker(time.Now)
	t.groupLabel = groupLabel
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range list.Items {
		t.observe(&list.Items[i], false)
	}
	t.stopWatch, err = follow(ctx, "pods", list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return cs.CoreV1().Pods(ns).Watch(ctx, o)
	}, func(ev watch.Event) {
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			t.observe(pod, ev.Type == watch.Deleted)
		}
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Stop ends the watch.
func (t *Tracker) Stop() {
	if t.stopWatch != nil {
		t.stopWatch()
	}
}

// observe takes in a pod the watch delivered; gone says it was deleted.
func (t *Tracker) observe(p *corev1.Pod, gone bool) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.pods[string(p.UID)]
	if pt == nil {
		pt = &podTimes{name: p.Name, group: p.Labels[t.groupLabel], seen: now}
		if sent, ok := t.sent[p.Name]; ok && p.GenerateName == "" {
			pt.created, pt.createdBySend = sent, true
			delete(t.sent, p.Name)
		} else {
			pt.created = p.CreationTimestamp.Time
		}
		t.pods[string(p.UID)] = pt
	}
	ran := p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded
	if p.Spec.NodeName != "" && pt.scheduled.IsZero() {
		pt.scheduled = now
		pt.node = p.Spec.NodeName
		if !ran {
			pt.boundVersion = p.ResourceVersion
		}
	}
	if ran && pt.watched.IsZero() {
		if pt.scheduled.IsZero() {
			pt.scheduled = now
		}
		pt.watched = now
	}
	pt.failed = p.Status.Phase == corev1.PodFailed
	ended := gone || p.DeletionTimestamp != nil || pt.failed || p.Status.Phase == corev1.PodSucceeded
	if ended && pt.ended.IsZero() {
		pt.ended = now
	}
	pt.unschedulable = false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			pt.unschedulable = true
			pt.reason = c.Message
		}
	}
}

// Counts returns how many pods reached each state so far.
func (t *Tracker) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c Counts
	for _, pt := range t.pods {
		c.Seen++
		if !pt.scheduled.IsZero() {
			c.Scheduled++
		} else if pt.unschedulable {
			c.Unschedulable++
		}
		if !pt.watched.IsZero() {
			c.Running++
		}
		if pt.failed {
			c.Failed++
		}
		if !pt.watched.IsZero() && !pt.ended.IsZero() {
			c.Ended++
		}
	}
	return c
}

// UnschedulableReason is the scheduler's most common message on pods that
// are not bound and unschedulable ("" when none is), with how many pods
// carry it when not all do.
func (t *Tracker) UnschedulableReason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	count, total := map[string]int{}, 0
	for _, pt := range t.pods {
		if pt.scheduled.IsZero() && pt.unschedulable {
			count[pt.reason]++
			total++
		}
	}
	best := ""
	for r, n := range count {
		if n > count[best] || (n == count[best] && r < best) {
			best = r
		}
	}
	if best != "" && count[best] < total {
		return fmt.Sprintf("%s (%d of %d unschedulable pods)", best, count[best], total)
	}
	return best
}

// Startup computes the startup latency percentiles of the pods that got
// that far.
func (t *Tracker) Startup() Startup {
	t.mu.Lock()
	defer t.mu.Unlock()
	var toSchedule, toRun, total []time.Duration
	sent, stamped := 0, 0
	for _, pt := range t.pods {
		if pt.createdBySend {
			sent++
		} else {
			stamped++
		}
		if !pt.scheduled.IsZero() {
			toSchedule = append(toSchedule, pt.scheduled.Sub(pt.created))
		}
		if pt.watched.IsZero() {
			continue
		}
		toRun = append(toRun, pt.watched.Sub(pt.scheduled))
		total = append(total, pt.watched.Sub(pt.created))
	}
	s := Startup{CreateToSchedule: Summarise(toSchedule), ScheduleToRun: Summarise(toRun), PodStartup: Summarise(total)}
	switch {
	case sent > 0 && stamped > 0:
		s.CreateTime = CreateTimeMixed
	case sent > 0:
		s.CreateTime = CreateTimeSend
	case stamped > 0:
		s.CreateTime = CreateTimeCreationTimestamp
	}
	return s
}

// Window is when the first pod was created and when the last was
// scheduled and running.
func (t *Tracker) Window() (firstSeen, lastScheduled, lastRunning time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pt := range t.pods {
		if firstSeen.IsZero() || pt.created.Before(firstSeen) {
			firstSeen = pt.created
		}
		if pt.scheduled.After(lastScheduled) {
			lastScheduled = pt.scheduled
		}
		if pt.watched.After(lastRunning) {
			lastRunning = pt.watched
		}
	}
	return
}

// Pods returns a copy of every tracked pod's times.
func (t *Tracker) Pods() []PodTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]PodTimes, 0, len(t.pods))
	for uid, pt := range t.pods {
		out = append(out, PodTimes{UID: uid, Name: pt.name, Group: pt.group, Node: pt.node, Created: pt.created, Seen: pt.seen, Scheduled: pt.scheduled, Running: pt.watched, Ended: pt.ended, BoundVersion: pt.boundVersion})
	}
	return out
}
