package workload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// AdmissionGate is the scheduling gate (spec.schedulingGates) train's
// quota admission holds a job's pods behind until it admits the job.
// kube-scheduler keeps a gated pod out of its active and back-off
// queues (its PreEnqueue plugin SchedulingGates turns it away, and only
// the gate's removal brings it back), so a job that is not admitted costs
// the scheduler no attempt however long it waits.
const AdmissionGate = "ghostfleet.io/admission"

// Admission modes (TrainOptions.Admission): none sends every job's pods
// to the scheduler at once; quota holds each job back (behind
// AdmissionGate, or suspended: TrainOptions.AdmitBy) until the fleet's
// free GPUs cover the whole job, as a quota-based admission layer such
// as Kueue does.
const (
	AdmissionNone  = "none"
	AdmissionQuota = "quota"
)

// AdmissionModes are what --admission allows.
var AdmissionModes = []string{AdmissionNone, AdmissionQuota}

// How quota admission holds a job back (TrainOptions.AdmitBy): gate
// creates its pods behind AdmissionGate and removes the gate from each
// (Kueue's way with pods and pod groups); suspend creates the Job
// suspended (spec.suspend), so the Job controller creates no pod until
// admission unsuspends it (Kueue's way with a batch Job).
const (
	AdmitByGate    = "gate"
	AdmitBySuspend = "suspend"
)

// AdmitByModes are what --admit-by allows.
var AdmitByModes = []string{AdmitByGate, AdmitBySuspend}

// AdmissionResult is what quota admission did in a training run.
type AdmissionResult struct {
	Mode string `json:"mode"`
	// By is how jobs were held back: AdmitByGate or AdmitBySuspend.
	By string `json:"by"`
	// JobsAdmitted are the jobs it released (their pods' gates removed,
	// or their Jobs unsuspended), JobsHeld the run's other jobs, still
	// held when it ended; they stay held until deleted.
	JobsAdmitted int `json:"jobsAdmitted"`
	JobsHeld     int `json:"jobsHeld"`
	// LeftGated are pods of admitted jobs still gated at the end: the
	// Job controller made them too late, or their gate's removal failed.
	// LeftSuspended are admitted Jobs still suspended at the end (their
	// unsuspending failed).
	LeftGated     int `json:"leftGated"`
	LeftSuspended int `json:"leftSuspended"`
	// GateRemovalErrors are gate removals (or, by suspend, unsuspendings)
	// the apiserver refused or failed; each was tried again on the next
	// pass.
	GateRemovalErrors int `json:"gateRemovalErrors"`
	// WatchError, when set, is why the pods watch ended early: from then
	// on no job was admitted and no fit seen.
	WatchError string `json:"watchError,omitempty"`
	// UngateWorkers is how many gate removals were in flight at once
	// (TrainOptions.UngateWorkers).
	UngateWorkers int `json:"ungateWorkers"`
	// AdmittedAt is when each admitted job was admitted, in order
	// (strict FIFO: the run's jobs in creation order), and AdmittedSpan
	// the seconds from the first of them to the last (0 with fewer than
	// two): how close together jobs that free GPUs came to cover at once
	// were released, those GPUs freeing as the pods holding them ended.
	AdmittedAt   []time.Time `json:"admittedAt,omitempty"`
	AdmittedSpan float64     `json:"admittedSpan"`
	// For each admitted job that started whole (its last gate removed
	// before it did: not a replacement's, after), its StartAfterFit in
	// three parts, which add up to it: AdmitAfterFit, from the fit (or
	// the job's creation, if later) to its admission; Ungate, from its
	// admission to the answer to its last gate removal (by suspend, to
	// its unsuspending); StartAfterUngate, from then to the job running
	// whole (by suspend, the Job controller's creating its pods; the
	// scheduler's cycles, the binds, kwok's start, the watches). Absent
	// when the watch ended early.
	AdmitAfterFit    *Percentiles `json:"admitAfterFit,omitempty"`
	Ungate           *Percentiles `json:"ungate,omitempty"`
	StartAfterUngate *Percentiles `json:"startAfterUngate,omitempty"`
	// StartAfterUngate in three parts, which add up to it per job, read
	// from the run's pods watch for the pods that ran the job whole:
	// PodsCreated, from the last gate removal (the unsuspending) to the
	// watch having seen every one of them (0 when all existed before it,
	// as gated pods do; by suspend, the Job controller's creating them);
	// PodsBound, from then to the watch having seen them all bound (the
	// scheduler's cycles and binds); PodsRunning, from then to the job
	// running whole (kwok's start). Each end is a watch event's arrival:
	// PodsCreated, from the client's clock, holds one delivery by the
	// watch; the later parts, from one arrival to another, hold only the
	// difference between two deliveries.
	PodsCreated *Percentiles `json:"podsCreated,omitempty"`
	PodsBound   *Percentiles `json:"podsBound,omitempty"`
	PodsRunning *Percentiles `json:"podsRunning,omitempty"`
	// PodsBound in three parts, which add up to it per job, from the
	// apiserver's audit log of the same pods' bindings (absent when the
	// fleet keeps none): ToFirstBind, from the watch having seen them all
	// created to the apiserver receiving the first of their bindings (the
	// scheduler's pod-group cycle that placed them and its Permit, which
	// holds a gang's pods until minCount are assumed, and any cycle or
	// back-off before it; below 0 when the scheduler bound a pod before
	// the run's watch had seen the last one); Binds, from then to the last
	// of their bindings answered (the scheduler's binding cycles: the
	// POSTs on its client's rate limiter, which the status PATCHes of pods
	// that waited at Permit share, and the apiserver's time on them);
	// BindsSeen, from then to the watch having seen them all bound (one
	// delivery by the watch, less any before the answer). BindsUnsplit
	// counts the jobs left out, one or more of whose pods' bindings the
	// log lacks.
	ToFirstBind  *Percentiles `json:"toFirstBind,omitempty"`
	Binds        *Percentiles `json:"binds,omitempty"`
	BindsSeen    *Percentiles `json:"bindsSeen,omitempty"`
	BindsUnsplit int          `json:"bindsUnsplit,omitempty"`
	// Jobs are the same figures job by job, for each admitted job that
	// started whole, in the order admitted: the percentiles above cannot
	// say which of jobs freed together was the slowest, nor whether its
	// parts are one job's. Absent when the watch ended early.
	Jobs []AdmittedJob `json:"jobs,omitempty"`
}

// AdmittedJob is one admitted job's figures, in seconds (see
// AdmissionResult for each): StartAfterFit is its parts' sum,
// AdmitAfterFit + Ungate + StartAfterUngate, and StartAfterUngate is
// PodsCreated + PodsBound + PodsRunning.
type AdmittedJob struct {
	// Job is the job's name, Order its place among those admitted (1 is
	// the first; jobs admitted in one pass have one AdmittedAt).
	Job              string  `json:"job"`
	Order            int     `json:"order"`
	StartAfterFit    float64 `json:"startAfterFit"`
	AdmitAfterFit    float64 `json:"admitAfterFit"`
	Ungate           float64 `json:"ungate"`
	StartAfterUngate float64 `json:"startAfterUngate"`
	PodsCreated      float64 `json:"podsCreated"`
	PodsBound        float64 `json:"podsBound"`
	PodsRunning      float64 `json:"podsRunning"`
	// BindSplit is the job's PodsBound split at its pods' bindings, from
	// the audit log; nil when not split.
	BindSplit *JobBinds `json:"bindSplit,omitempty"`
}

// JobBinds is one admitted job's PodsBound split at its pods' bindings
// (see AdmissionResult.ToFirstBind; ToFirstBind + Binds + BindsSeen is
// PodsBound), and its Binds seen two ways: Sent, from the apiserver
// receiving the first of the bindings to receiving the last (the
// scheduler's binding cycles sending them, each after a token from its
// client's limiter), and ServedMax, the longest the apiserver took to
// answer one of them (APF's queue and the binding itself). Sent <= Binds
// <= Sent + ServedMax: the last answer comes after the last receipt, and
// after its own binding's receipt by no more than ServedMax. Received is
// when the apiserver read the request: time in the client's connection
// counts as sending.
type JobBinds struct {
	ToFirstBind float64 `json:"toFirstBind"`
	Binds       float64 `json:"binds"`
	BindsSeen   float64 `json:"bindsSeen"`
	Sent        float64 `json:"sent"`
	ServedMax   float64 `json:"servedMax"`
}

// DefaultUngateWorkers are the gate removals in flight at once unless
// told otherwise: as Kueue's pod-group integration ungates a group's
// pods (its parallelize.Until, 8 workers by default).
const DefaultUngateWorkers = 8

// MaxUngateWorkers bounds TrainOptions.UngateWorkers.
const MaxUngateWorkers = 64

// ungatePatch removes AdmissionGate by name (schedulingGates merge by
// name), leaving any other gate; unsuspendPatch lets a Job's pods be
// created.
var (
	ungatePatch    = []byte(`{"spec":{"schedulingGates":[{"$patch":"delete","name":"` + AdmissionGate + `"}]}}`)
	unsuspendPatch = []byte(`{"spec":{"suspend":false}}`)
)

// admitter follows the fleet's free GPUs for a run's jobs from one
// watch of the cluster's pods, and, under quota admission (gate), admits
// the run's gated jobs in the order given, one job at a time while its
// GPUs fit in the free GPUs (strict FIFO, as Kueue's StrictFIFO queueing:
// a job that does not fit holds back the ones after it), removing the
// gate from every pod of an admitted job, workers PATCHes in flight at
// once, including pods the Job controller creates later (by suspend,
// unsuspending the admitted job's Job instead). Free GPUs are
// a fleet-wide sum, not a placement: the fake nodes' allocatable GPUs at
// the start less those held by bound, unfinished pods; under admission,
// each admitted job counts its whole request from admission instead,
// bound or not, as Kueue counts an admitted workload's quota, and never
// gives it back (train's jobs run until deleted). It sends nothing but
// the gate removals (or unsuspendings); one that fails is counted and
// tried again on the next pass. Either way it keeps the moments free GPUs rose to cover one
// more job (fits), for TrainResult.StartAfterFit.
type admitter struct {
	cs      kubernetes.Interface
	ns, run string // the run's namespace and ID (its pods' LabelRun)
	total   int64  // the fake nodes' allocatable GPUs at the start
	jobGPUs int64  // GPUs one job asks for
	gate    bool
	suspend bool // admit by unsuspending Jobs, not removing pods' gates
	workers int  // gate removals in flight at once
	report  progress.Func

	mu   sync.Mutex
	pods map[types.UID]admitPod
	// mine and others are the GPUs bound pods hold: the run's jobs'
	// pods', and the rest's.
	mine, others int64
	order        []string // the run's jobs, in creation order
	// admitted are how many of order were admitted (the first ones:
	// strict FIFO).
	admitted int
	// admittedAt is when each admitted job was admitted, ungatedAt when
	// each removal of one of its pods' gates (or its unsuspending) was
	// answered, in order.
	admittedAt map[string]time.Time
	ungatedAt  map[string][]time.Time
	// gated are the run's gated pods by job, then UID: their names;
	// suspended the admitted jobs whose Jobs are still to unsuspend.
	gated     map[string]map[types.UID]string
	suspended map[string]bool
	// warned are the pods and Jobs a failed release was warned of, by
	// name (a pod's is its Job's and more, so never a Job's).
	warned map[string]bool
	errors int
	// fits are the moments free GPUs rose to cover one more job than
	// before (the first at the start, if they covered one then); jobs
	// counts how many they covered.
	fits     []time.Time
	jobs     int64
	watchErr error
	changed  chan struct{}
}

// admitPod is what the admitter keeps of a pod.
type admitPod struct {
	name string
	job  string // the Job of a pod of the run's, else ""
	// bound: the GPUs the pod holds on its node (0 until bound).
	bound int64
}

// admitterEnd is how an admitter ended.
type admitterEnd struct {
	AdmissionResult
	// times is nil when the watch ended early.
	times *admissionTimes
}

// admissionTimes are the moments an admitter saw: fits (admitter.fits),
// and, under admission, the admitted jobs in order and each one's
// admittedAt and ungatedAt.
type admissionTimes struct {
	fits       []time.Time
	order      []string
	admittedAt map[string]time.Time
	ungatedAt  map[string][]time.Time
}

// admitted is when job was admitted and when the last of its gates
// removed by started was (the Job unsuspended, by suspend): a
// replacement worker's, later, is of no start. Zero times when it was
// not admitted, or t is nil.
func (t *admissionTimes) admitted(job string, started time.Time) (at, ungated time.Time) {
	if t == nil {
		return time.Time{}, time.Time{}
	}
	for _, u := range t.ungatedAt[job] {
		if !u.After(started) {
			ungated = u
		}
	}
	return t.admittedAt[job], ungated
}

// startAdmitter starts following the free GPUs for jobs of jobGPUs each
// of run runID in namespace ns against total GPUs and, with gate,
// admitting the jobs added with add, by by (AdmitByGate: workers gate
// removals at once; AdmitBySuspend: unsuspending their Jobs); stop
// ends it, with a last pass (bounded by 10 s) for pods of admitted jobs
// the Job controller made since the one before (admitting no more jobs:
// one admitted then would be left to start after the run, its later pods
// gated).
func startAdmitter(ctx context.Context, cs kubernetes.Interface, ns, runID string, total, jobGPUs int64, gate bool, by string, workers int, report progress.Func) (a *admitter, stop func() admitterEnd, err error) {
	a = &admitter{cs: cs, ns: ns, run: runID, total: total, jobGPUs: jobGPUs, gate: gate, suspend: by == AdmitBySuspend, workers: max(workers, 1), report: report,
		pods: map[types.UID]admitPod{}, gated: map[string]map[types.UID]string{}, suspended: map[string]bool{}, warned: map[string]bool{},
		admittedAt: map[string]time.Time{}, ungatedAt: map[string][]time.Time{}, changed: make(chan struct{}, 1)}
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("following free GPUs: listing pods: %w", err)
	}
	a.mu.Lock()
	for i := range list.Items {
		a.observe(&list.Items[i], false)
	}
	a.noteFree(time.Now())
	a.mu.Unlock()
	stopWatch, err := follow(ctx, "pods", list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Pods("").Watch(ctx, o)
	}, func(ev watch.Event) {
		var lost error
		a.mu.Lock()
		switch p, ok := ev.Object.(*corev1.Pod); {
		case ok:
			a.observe(p, ev.Type == watch.Deleted)
			a.noteFree(time.Now())
		case ev.Type == watch.Error && a.watchErr == nil:
			a.watchErr = apierrors.FromObject(ev.Object)
			lost = a.watchErr
		}
		a.mu.Unlock()
		if lost != nil {
			a.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("free GPUs are no longer followed (no job is admitted, no fit seen): the pods watch ended: %v", lost)})
		}
		a.poke()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("following free GPUs: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !gate {
			<-ctx.Done()
			return
		}
		// A pass 100 ms after a change (events come in bursts), and once
		// a second regardless (a failed removal is retried).
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			a.pass(ctx, true)
			select {
			case <-ctx.Done():
				return
			case <-a.changed:
				time.Sleep(100 * time.Millisecond)
			case <-tick.C:
			}
		}
	}()
	return a, func() admitterEnd {
		cancel()
		<-done
		stopWatch()
		if gate {
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			a.pass(last, false)
			cancel()
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		out := admitterEnd{AdmissionResult: AdmissionResult{Mode: AdmissionQuota, By: by, JobsAdmitted: a.admitted, JobsHeld: len(a.order) - a.admitted,
			LeftSuspended: len(a.suspended), GateRemovalErrors: a.errors, UngateWorkers: a.workers}}
		for _, job := range a.order[:a.admitted] {
			out.LeftGated += len(a.gated[job])
			out.AdmittedAt = append(out.AdmittedAt, a.admittedAt[job].UTC())
		}
		if n := a.admitted; n > 1 {
			out.AdmittedSpan = a.admittedAt[a.order[n-1]].Sub(a.admittedAt[a.order[0]]).Seconds()
		}
		if a.watchErr != nil {
			out.WatchError = a.watchErr.Error()
		} else {
			// The admitter is done: what it kept is handed over.
			out.times = &admissionTimes{fits: a.fits, order: slices.Clip(a.order[:a.admitted]), admittedAt: a.admittedAt, ungatedAt: a.ungatedAt}
		}
		return out
	}, nil
}

// add queues job for admission, after the jobs added before it.
func (a *admitter) add(job string) {
	a.mu.Lock()
	a.order = append(a.order, job)
	a.mu.Unlock()
	a.poke()
}

func (a *admitter) poke() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// observe takes in a pod; gone says it was deleted. Called with mu held.
func (a *admitter) observe(p *corev1.Pod, gone bool) {
	old := a.pods[p.UID]
	a.hold(old, -1)
	if g := a.gated[old.job]; g != nil {
		delete(g, p.UID)
	}
	if gone || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(a.pods, p.UID)
		return
	}
	ap := admitPod{name: p.Name}
	if fleet.HoldsGPUs(p) {
		ap.bound = fleet.PodGPUs(p)
	}
	if p.Namespace == a.ns && p.Labels[LabelRun] == a.run {
		ap.job = p.Labels[jobNameLabel]
	}
	a.pods[p.UID] = ap
	a.hold(ap, 1)
	if ap.job != "" && hasGate(p, AdmissionGate) {
		if a.gated[ap.job] == nil {
			a.gated[ap.job] = map[types.UID]string{}
		}
		a.gated[ap.job][p.UID] = p.Name
	}
}

// hold adds (sign 1) or takes away (-1) what p holds.
func (a *admitter) hold(p admitPod, sign int64) {
	if p.job != "" {
		a.mine += sign * p.bound
	} else {
		a.others += sign * p.bound
	}
}

// free is the GPUs not held: under admission, admitted jobs hold their
// whole request (a job not admitted has its pods gated, unbound);
// otherwise the run's bound pods hold what they are bound with. Called
// with mu held.
func (a *admitter) free() int64 {
	if a.gate {
		return a.total - a.others - int64(a.admitted)*a.jobGPUs
	}
	return a.total - a.others - a.mine
}

// noteFree keeps at as a fit when free GPUs now cover more jobs than
// before. Called with mu held.
func (a *admitter) noteFree(at time.Time) {
	jobs := max(a.free(), 0) / a.jobGPUs
	if jobs > a.jobs {
		a.fits = append(a.fits, at)
	}
	a.jobs = jobs
}

func hasGate(p *corev1.Pod, name string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == name {
			return true
		}
	}
	return false
}

// pass admits what now fits (with admit) and removes the gates of
// admitted jobs' pods, a.workers at once (or unsuspends their Jobs). A
// pod or Job already gone counts as done; a removal that fails is
// counted, warned of once per pod (or Job) and tried again on the next
// pass.
func (a *admitter) pass(ctx context.Context, admit bool) {
	a.mu.Lock()
	var n int
	waiting := a.order[a.admitted:]
	if admit && a.watchErr == nil {
		n = admissible(a.free(), a.jobGPUs, len(waiting))
	}
	now := time.Now()
	for _, job := range waiting[:n] {
		a.admittedAt[job] = now
		if a.suspend {
			a.suspended[job] = true
		}
	}
	a.admitted += n
	a.noteFree(now)
	// Job by job in admission order, each job's pods by name: a job's
	// gang is whole as soon as its own removals are done.
	var ungate []held
	for _, job := range a.order[:a.admitted] {
		if a.suspended[job] {
			ungate = append(ungate, held{job: job, name: job})
		}
		from := len(ungate)
		for uid, name := range a.gated[job] {
			ungate = append(ungate, held{job, uid, name})
		}
		slices.SortFunc(ungate[from:], func(x, y held) int { return strings.Compare(x.name, y.name) })
	}
	a.mu.Unlock()
	if n > 0 {
		a.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("admitted %s", strings.Join(waiting[:n], ", "))})
	}
	next := make(chan held)
	var wg sync.WaitGroup
	for range min(a.workers, len(ungate)) {
		wg.Go(func() {
			for r := range next {
				a.release(ctx, r)
			}
		})
	}
send:
	for _, r := range ungate {
		select {
		case next <- r:
		case <-ctx.Done():
			break send
		}
	}
	close(next)
	wg.Wait()
}

// held is what holds an admitted job back: the gate of its pod name
// (uid), or, with no uid, its suspended Job name.
type held struct {
	job  string
	uid  types.UID
	name string
}

// release removes what r holds back.
func (a *admitter) release(ctx context.Context, r held) {
	var err error
	what := "removing the gate of pod " + r.name
	if r.uid == "" {
		what = "unsuspending Job " + r.name
		_, err = a.cs.BatchV1().Jobs(a.ns).Patch(ctx, r.name, types.MergePatchType, unsuspendPatch, metav1.PatchOptions{})
	} else {
		_, err = a.cs.CoreV1().Pods(a.ns).Patch(ctx, r.name, types.StrategicMergePatchType, ungatePatch, metav1.PatchOptions{})
	}
	if err != nil && ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	warn := false
	if err == nil || apierrors.IsNotFound(err) {
		if r.uid == "" {
			delete(a.suspended, r.job)
		} else {
			delete(a.gated[r.job], r.uid)
		}
		a.ungatedAt[r.job] = append(a.ungatedAt[r.job], time.Now())
	} else {
		a.errors++
		warn, a.warned[r.name] = !a.warned[r.name], true
	}
	a.mu.Unlock()
	if warn {
		a.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("admission: %s: %v (tried again on every pass)", what, err)})
	}
}

// admissible is how many of waiting jobs of jobGPUs each to admit, in
// order, into free GPUs.
func admissible(free, jobGPUs int64, waiting int) int {
	if jobGPUs <= 0 || free < jobGPUs {
		return 0
	}
	return int(min(int64(waiting), free/jobGPUs))
}
