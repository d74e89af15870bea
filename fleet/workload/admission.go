package workload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// AdmissionGate is the scheduling gate (spec.schedulingGates) train's
// quota admission holds a job's pods behind until it admits the job.
// kube-scheduler leaves a gated pod out of its queues (its PreEnqueue
// plugin SchedulingGates turns it away, and only the gate's removal
// brings it back), so a job that is not admitted costs the scheduler no
// attempt however long it waits.
const AdmissionGate = "ghostfleet.io/admission"

// Admission modes (TrainOptions.Admission): none sends every job's pods
// to the scheduler at once; quota holds each job behind AdmissionGate
// until the fleet's free GPUs cover the whole job, as a quota-based
// admission layer such as Kueue does.
const (
	AdmissionNone  = "none"
	AdmissionQuota = "quota"
)

// AdmissionModes are what --admission allows.
var AdmissionModes = []string{AdmissionNone, AdmissionQuota}

// AdmissionResult is what quota admission did in a training run.
type AdmissionResult struct {
	Mode string `json:"mode"`
	// JobsAdmitted are the jobs whose gate it removed; the rest of the
	// run's jobs were still held when it ended, and stay held (their
	// pods gated) until deleted.
	JobsAdmitted int `json:"jobsAdmitted"`
	// GateRemovalErrors are gate removals the apiserver refused or
	// failed; each was tried again on the next pass.
	GateRemovalErrors int `json:"gateRemovalErrors"`
}

// ungatePatch removes AdmissionGate, the only gate train gives a pod; the
// test makes it fail rather than remove another gate.
var ungatePatch = []byte(`[{"op":"test","path":"/spec/schedulingGates/0/name","value":"` + AdmissionGate + `"},{"op":"remove","path":"/spec/schedulingGates/0"}]`)

// admitter follows the fleet's free GPUs for a run's jobs from one
// watch of the cluster's pods, and, under quota admission (gate), admits
// the run's gated jobs in the order given, one job at a time while its
// GPUs fit in the free GPUs (strict FIFO, as Kueue's StrictFIFO queueing:
// a job that does not fit holds back the ones after it), removing the
// gate from every pod of an admitted job, including pods the Job
// controller creates later. Free GPUs are the fake nodes' allocatable
// GPUs less those held by bound, unfinished pods; under admission, each
// admitted job counts its whole request from admission instead, bound or
// not, as Kueue counts an admitted workload's quota. It sends nothing but
// the gate removals; one that fails is counted and tried again on the
// next pass. Either way it keeps when the free GPUs last rose to cover a
// job (fits), for TrainResult.StartAfterFit.
type admitter struct {
	cs      kubernetes.Interface
	ns      string
	total   int64 // the fake nodes' allocatable GPUs at the start
	jobGPUs int64 // GPUs one job asks for
	gate    bool
	report  progress.Func

	mu   sync.Mutex
	pods map[types.UID]admitPod
	// others and run are the GPUs bound pods hold: the run's jobs' pods
	// (of its namespace, with a Job's label), and the rest.
	others, run int64
	order       []string        // the run's jobs, in creation order
	admitted    map[string]bool // by job name
	patched     map[types.UID]bool
	errors      int
	// fits are the moments free GPUs rose from less than a job's to at
	// least that (the first, at the start, if they covered one then).
	fits    []time.Time
	covered bool
	// listing: the pods are being read in from the first list, whose
	// partial sums are no moment of the fleet's.
	listing bool
	changed chan struct{}
}

// admitPod is what the admitter keeps of a pod.
type admitPod struct {
	name string
	job  string // the Job's name for a pod of the run's namespace, else ""
	// bound: the GPUs the pod holds on its node (0 until bound).
	bound int64
	// gated: the pod still has AdmissionGate.
	gated bool
}

// startAdmitter starts following the free GPUs for jobs of jobGPUs each
// in namespace ns against total GPUs and, with gate, admitting the jobs
// added with add; stop ends it and returns how many jobs it admitted,
// how many gate removals failed and when free GPUs rose to cover a job.
func startAdmitter(ctx context.Context, cs kubernetes.Interface, ns string, total, jobGPUs int64, gate bool, report progress.Func) (a *admitter, stop func() (admitted, errors int, fits []time.Time), err error) {
	a = &admitter{cs: cs, ns: ns, total: total, jobGPUs: jobGPUs, gate: gate, report: report,
		pods: map[types.UID]admitPod{}, admitted: map[string]bool{}, patched: map[types.UID]bool{}, changed: make(chan struct{}, 1)}
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("following free GPUs: listing pods: %w", err)
	}
	a.listing = true
	for i := range list.Items {
		a.observe(&list.Items[i], false)
	}
	a.listing = false
	a.noteFree(time.Now())
	stopWatch, err := follow(ctx, "pods", list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Pods("").Watch(ctx, o)
	}, func(ev watch.Event) {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			a.observe(p, ev.Type == watch.Deleted)
		}
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
		// A pass on every change, at most one a 100 ms, and one a second
		// regardless (a failed removal is retried).
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			a.pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-a.changed:
				time.Sleep(100 * time.Millisecond)
			case <-tick.C:
			}
		}
	}()
	return a, func() (int, int, []time.Time) {
		cancel()
		<-done
		stopWatch()
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.admitted), a.errors, a.fits
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

// observe takes in a pod the watch delivered; gone says it was deleted.
func (a *admitter) observe(p *corev1.Pod, gone bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.pods[p.UID]
	a.hold(old, -1)
	if gone || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(a.pods, p.UID)
		delete(a.patched, p.UID)
	} else {
		ap := admitPod{name: p.Name, gated: hasGate(p, AdmissionGate)}
		if p.Spec.NodeName != "" {
			ap.bound = fleet.PodGPUs(p)
		}
		if p.Namespace == a.ns {
			ap.job = p.Labels[jobNameLabel]
		}
		a.pods[p.UID] = ap
		a.hold(ap, 1)
	}
	if !a.listing {
		a.noteFree(time.Now())
	}
	a.poke()
}

// hold adds (sign 1) or takes away (-1) what p holds.
func (a *admitter) hold(p admitPod, sign int64) {
	if p.job != "" {
		a.run += sign * p.bound
	} else {
		a.others += sign * p.bound
	}
}

// free is the GPUs not held: under admission, admitted jobs hold their
// whole request (a gated job's pods are unbound and hold nothing);
// otherwise the run's bound pods hold what they are bound with. Called
// with mu held.
func (a *admitter) free() int64 {
	if a.gate {
		return a.total - a.others - int64(len(a.admitted))*a.jobGPUs
	}
	return a.total - a.others - a.run
}

// noteFree keeps at as a fit when free GPUs now cover a job and did not
// before. Called with mu held.
func (a *admitter) noteFree(at time.Time) {
	covered := a.free() >= a.jobGPUs
	if covered && !a.covered {
		a.fits = append(a.fits, at)
	}
	a.covered = covered
}

func hasGate(p *corev1.Pod, name string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == name {
			return true
		}
	}
	return false
}

// pass admits what now fits and removes the gates of admitted jobs' pods.
func (a *admitter) pass(ctx context.Context) {
	a.mu.Lock()
	waiting := a.order[len(a.admitted):]
	n := admissible(a.free(), a.jobGPUs, len(waiting))
	for _, job := range waiting[:n] {
		a.admitted[job] = true
	}
	a.noteFree(time.Now())
	var ungate []string
	var uids []types.UID
	for uid, p := range a.pods {
		if p.gated && a.admitted[p.job] && !a.patched[uid] {
			ungate, uids = append(ungate, p.name), append(uids, uid)
		}
	}
	a.mu.Unlock()
	if n > 0 {
		a.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("admitted %s", strings.Join(waiting[:n], ", "))})
	}
	for i, name := range ungate {
		_, err := a.cs.CoreV1().Pods(a.ns).Patch(ctx, name, types.JSONPatchType, ungatePatch, metav1.PatchOptions{})
		if ctx.Err() != nil {
			return
		}
		a.mu.Lock()
		if err != nil {
			a.errors++
		} else {
			a.patched[uids[i]] = true
		}
		a.mu.Unlock()
		if err != nil {
			a.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("admission: removing the gate of pod %s: %v (tried again)", name, err)})
		}
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
