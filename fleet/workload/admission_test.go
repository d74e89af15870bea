package workload

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestAdmissible(t *testing.T) {
	tests := []struct {
		name          string
		free, jobGPUs int64
		waiting, want int
	}{
		{"none waiting", 800, 800, 0, 0},
		{"one GPU short", 792, 800, 20, 0},
		{"exactly one", 800, 800, 20, 1},
		{"two of three", 1700, 800, 3, 2},
		{"all that wait", 8000, 800, 3, 3},
		{"over-committed", -16, 8, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := admissible(tc.free, tc.jobGPUs, tc.waiting); got != tc.want {
				t.Errorf("admissible(%d, %d, %d) = %d, want %d", tc.free, tc.jobGPUs, tc.waiting, got, tc.want)
			}
		})
	}
}

// warnings collects the warnings an admitter reports.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) report(e progress.Event) {
	if e.Kind == progress.Warn {
		w.mu.Lock()
		w.got = append(w.got, e.Message)
		w.mu.Unlock()
	}
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// gatedPod is pod i of job in ns, gated as CreateTrainJob's pods are.
func gatedPod(ns, job string, i, gpus int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", job, i), Namespace: ns, UID: types.UID(fmt.Sprintf("%s-%s-%d", ns, job, i)),
			Labels: map[string]string{jobNameLabel: job, LabelRun: "train-1"}},
		Spec: PodSpec(gpus),
	}
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: AdmissionGate}}
	return p
}

// Two jobs that free GPUs come to cover within one pass are admitted
// together: the two other pods that held their 32 GPUs end one right
// after the other (the pass waits 100 ms after a change), and the span
// of their admissions is 0; the third job waits.
func TestAdmitterTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	var others []runtime.Object
	for i := range 3 {
		o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Namespace: "gf-load", UID: types.UID(fmt.Sprintf("other-%d", i))}, Spec: PodSpec(16)}
		o.Spec.NodeName = fmt.Sprintf("n%d", i)
		others = append(others, o)
	}
	cs := fake.NewClientset(append(others, gatedPod(ns, "a", 0, 16), gatedPod(ns, "b", 0, 16), gatedPod(ns, "c", 0, 16))...)
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 48, 16, true, AdmitByGate, 1, progress.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"a", "b", "c"} {
		adm.add(job)
	}
	time.Sleep(1500 * time.Millisecond) // more than a pass's tick: nothing fits
	for i, o := range others[:2] {
		p := o.(*corev1.Pod)
		p.ResourceVersion = fmt.Sprint(10 + i)
		w.Delete(p)
	}
	for !func() bool { adm.mu.Lock(); defer adm.mu.Unlock(); return adm.admitted == 2 }() {
		if ctx.Err() != nil {
			t.Fatal("two jobs not admitted within 30s of their GPUs freeing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // a pass more: c must still wait
	end := stop()
	if at := end.AdmittedAt; end.JobsAdmitted != 2 || len(at) != 2 || !at[0].Equal(at[1]) || end.AdmittedSpan != 0 {
		t.Errorf("admitted %d at %v, span %vs; want a and b admitted in one pass (one time, span 0), c held", end.JobsAdmitted, at, end.AdmittedSpan)
	}
}

// On a fleet of 32 GPUs where another workload's pod holds 8: the first
// job of 16 GPUs is admitted, the second (16 more, 8 free) is held, and
// so is the third, in line behind it. A pod the Job controller creates
// later for the admitted job loses its gate too; once the other
// workload's pod ends, the second job is admitted, and the third still
// waits.
func TestAdmitter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "gf-load", UID: "other"}, Spec: PodSpec(8)}
	other.Spec.NodeName = "n1"
	cs := fake.NewClientset(other, gatedPod(ns, "a", 0, 8), gatedPod(ns, "b", 0, 8), gatedPod(ns, "b", 1, 8), gatedPod(ns, "c", 0, 8))
	// The fake's own watch sends objects without a resourceVersion, which
	// the admitter's retrying watch refuses: the test sends the events.
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 32, 16, true, AdmitByGate, 1, progress.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"a", "b", "c"} {
		adm.add(job)
	}
	gated := func(name string) bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return hasGate(p, AdmissionGate)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not within 30s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a1 := gatedPod(ns, "a", 1, 8)
	if err := cs.Tracker().Add(a1); err != nil {
		t.Fatal(err)
	}
	a1.ResourceVersion = "10"
	w.Add(a1)
	waitFor("job a's two pods ungated", func() bool { return !gated("a-0") && !gated("a-1") })
	time.Sleep(1500 * time.Millisecond) // more than a pass's tick
	for _, name := range []string{"b-0", "b-1", "c-0"} {
		if !gated(name) {
			t.Errorf("pod %s was ungated with 8 GPUs free for its job's 16 (or behind one that does not fit)", name)
		}
	}
	other.ResourceVersion = "11"
	w.Delete(other)
	waitFor("job b's pods ungated once 16 GPUs are free", func() bool { return !gated("b-0") && !gated("b-1") })
	end := stop()
	if r := end.AdmissionResult; r.JobsAdmitted != 2 || r.JobsHeld != 1 || r.LeftGated != 0 || r.GateRemovalErrors != 0 || !gated("c-0") {
		t.Errorf("admission %+v, c-0 gated %v; want 2 admitted, 1 held, none left gated, no errors, c-0 gated (a and b hold all 32 GPUs)", r, gated("c-0"))
	}
	// Free GPUs covered a job at the start (24), and again when the
	// other pod ended (8 after a's admission, then 16).
	if len(end.times.fits) != 2 {
		t.Errorf("free GPUs rose to cover a job at %v; want twice", end.times.fits)
	}
	// Each admitted job's last gate came off after its admission; the
	// job held was neither.
	for _, job := range []string{"a", "b"} {
		if admitted, ungated := end.times.admitted(job, time.Now()); admitted.IsZero() || ungated.Before(admitted) {
			t.Errorf("job %s admitted at %v, its last gate removed at %v; want both, in that order", job, admitted, ungated)
		}
	}
	if admitted, ungated := end.times.admitted("c", time.Now()); !admitted.IsZero() || !ungated.IsZero() {
		t.Errorf("held job c admitted at %v, ungated at %v; want neither", admitted, ungated)
	}
	if end.UngateWorkers != 1 {
		t.Errorf("ungate workers %d recorded; want the 1 it ran with", end.UngateWorkers)
	}
	// a and b were admitted in that order, more than 1.5 s apart (the
	// wait above), and the span is the time between them.
	a, _ := end.times.admitted("a", time.Now())
	b, _ := end.times.admitted("b", time.Now())
	if at, span := end.AdmittedAt, end.AdmittedSpan; len(at) != 2 || !at[0].Equal(a) || !at[1].Equal(b) || span < 1.5 || span != b.Sub(a).Seconds() {
		t.Errorf("admitted at %v, span %vs; want a's then b's admission (%v, %v), and the span between them", at, span, a, b)
	}
}

// Without admission, free GPUs are what bound pods leave: a pod of the
// run binding takes them below a job's, its end brings them back.
func TestAdmitterFollowsFreeGPUs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	cs := fake.NewClientset()
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	a, stop, err := startAdmitter(ctx, cs, ns, "train-1", 16, 16, false, AdmitByGate, 1, progress.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p := gatedPod(ns, "a", 0, 8)
	p.Spec.SchedulingGates, p.Spec.NodeName, p.ResourceVersion = nil, "n1", "2"
	w.Add(p) // 8 free: not a job's 16
	p = p.DeepCopy()
	p.Status.Phase, p.ResourceVersion = corev1.PodSucceeded, "3"
	w.Modify(p) // 16 free again
	for {
		a.mu.Lock()
		n := len(a.fits)
		a.mu.Unlock()
		if n >= 2 || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	end := stop()
	if fits := end.times.fits; end.JobsAdmitted != 0 || len(fits) != 2 || !fits[0].Before(fits[1]) {
		t.Errorf("admitted %d, fits %v; want none admitted, and two fits (the start, the pod's end)", end.JobsAdmitted, fits)
	}
}

func TestStartAfterFit(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"a": at(0), "b": at(0), "c": at(5), "d": at(0)}
	pods := []PodTimes{
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(2)},   // fit at 0 (the start): 2s
		{Group: "b", Created: at(0), Scheduled: at(11), Running: at(12)}, // fit at 10: 2s
		{Group: "c", Created: at(5), Scheduled: at(6), Running: at(7)},   // fit at 0, created later: 2s
		{Group: "d", Created: at(0)},                                     // never started
	}
	times := &admissionTimes{fits: []time.Time{at(0), at(10), at(15)},
		// b: admitted 0.5s after its fit, its gates all off 0.25s later,
		// running whole 1.25s after that, then a replacement worker's
		// gate removed at 14s (of no start); c's gates all came off
		// after it started (by a clock skew), so it has no parts.
		order:      []string{"c", "b"},
		admittedAt: map[string]time.Time{"b": at(10.5), "c": at(5)},
		ungatedAt:  map[string][]time.Time{"b": {at(10.6), at(10.75), at(14)}, "c": {at(8)}},
	}
	res, _ := trainAccounting(TrainResult{Jobs: 4, PodsPerJob: 1, GPUsPerPod: 8, Admission: &AdmissionResult{}}, pods, created, at(20), times)
	if got := res.StartAfterFit; got == nil || got.Count != 3 || got.Max != 2 || got.P50 != 2 || res.StartLatency.Max != 12 {
		t.Errorf("start after fit %+v, start latency %+v; want 3 jobs, each 2s after its fit, and up to 12s after its creation", got, res.StartLatency)
	}
	for _, part := range []struct {
		name string
		got  *Percentiles
		want float64
	}{{"admission after the fit", res.Admission.AdmitAfterFit, 0.5}, {"gate removal", res.Admission.Ungate, 0.25}, {"start after the last gate", res.Admission.StartAfterUngate, 1.25}} {
		if part.got == nil || part.got.Count != 1 || part.got.Max != part.want {
			t.Errorf("%s %+v; want job b's alone, %gs", part.name, part.got, part.want)
		}
	}
	// Job by job: b alone, the second admitted, its parts adding up.
	if j := res.Admission.Jobs; len(j) != 1 || j[0].Job != "b" || j[0].Order != 2 || j[0].StartAfterFit != 2 || j[0].AdmitAfterFit != 0.5 || j[0].Ungate != 0.25 || j[0].StartAfterUngate != 1.25 {
		t.Errorf("jobs %+v; want b alone, second admitted, 2s = 0.5 + 0.25 + 1.25", j)
	}
	if res, _ := trainAccounting(TrainResult{Jobs: 4, PodsPerJob: 1, GPUsPerPod: 8}, pods, created, at(20), nil); res.StartAfterFit != nil {
		t.Errorf("start after fit %+v with free GPUs not followed; want none", res.StartAfterFit)
	}
}

// The part after a job's last gate removal (or unsuspending) splits at
// the watch's seeing every pod that ran the job whole created, then
// bound; a pod that ran and ended before the start, and a replacement
// after it, are of no part, and pods that existed before the removal
// count from it.
func TestStartAfterUngateParts(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	for _, tt := range []struct {
		name                    string
		pods                    []PodTimes
		created, bound, running float64
		names                   string // of the pods that ran the job whole, handed to the audit log
	}{
		{name: "by suspend: the Job controller creates the pods after it",
			pods: []PodTimes{
				{Seen: at(2), Scheduled: at(3.5), Running: at(4.5)},
				{Seen: at(3), Scheduled: at(4), Running: at(5)},
				{Seen: at(3.2), Scheduled: at(3.7), Running: at(3.8), Ended: at(4.2)}, // lost before the start
				{Seen: at(7), Scheduled: at(7.5), Running: at(8)},                     // its replacement, after
			},
			created: 2, bound: 1, running: 1, names: "[p0 p1]"},
		{name: "a worker lost as the last two start",
			pods: []PodTimes{
				{Seen: at(3.5), Scheduled: at(3.7), Running: at(3.8), Ended: at(5)}, // ends as they start
				{Seen: at(2), Scheduled: at(3.5), Running: at(5)},
				{Seen: at(3), Scheduled: at(4), Running: at(5)},
			},
			created: 2, bound: 1, running: 1, names: "[p1 p2]"},
		{name: "by gate: the pods existed before it",
			pods: []PodTimes{
				{Seen: at(0), Scheduled: at(0.9), Running: at(2)}, // its bind seen before the removal's answer
				{Seen: at(0), Scheduled: at(1.4), Running: at(2.5)},
			},
			created: 0, bound: 0.4, running: 1.1, names: "[p0 p1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.pods {
				tt.pods[i].Name, tt.pods[i].Group, tt.pods[i].Created = fmt.Sprint("p", i), "j", at(0)
			}
			times := &admissionTimes{fits: []time.Time{at(0)}, order: []string{"j"}, admittedAt: map[string]time.Time{"j": at(0.5)}, ungatedAt: map[string][]time.Time{"j": {at(1)}}}
			res, spans := trainAccounting(TrainResult{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 8, Admission: &AdmissionResult{}}, tt.pods, map[string]time.Time{"j": at(0)}, at(20), times)
			a := res.Admission
			if a.PodsCreated == nil || a.PodsBound == nil || a.PodsRunning == nil || a.StartAfterUngate == nil || a.PodsCreated.Count != 1 {
				t.Fatalf("admission %+v; want the parts of one job", a)
			}
			got := []float64{a.PodsCreated.Max, a.PodsBound.Max, a.PodsRunning.Max}
			for i, want := range []float64{tt.created, tt.bound, tt.running} {
				if math.Abs(got[i]-want) > 1e-9 {
					t.Errorf("parts created, bound, running %v; want %v, %v, %v", got, tt.created, tt.bound, tt.running)
					break
				}
			}
			if sum := got[0] + got[1] + got[2]; math.Abs(sum-a.StartAfterUngate.Max) > 1e-9 {
				t.Errorf("parts add up to %gs; want startAfterUngate's %gs", sum, a.StartAfterUngate.Max)
			}
			// The one job's own figures are the same.
			if j := a.Jobs; len(j) != 1 || j[0].Job != "j" || j[0].Order != 1 || j[0].PodsCreated != got[0] || j[0].PodsBound != got[1] || j[0].PodsRunning != got[2] || j[0].StartAfterUngate != a.StartAfterUngate.Max {
				t.Errorf("jobs %+v; want j's alone, first admitted, its parts %v", j, got)
			}
			// The audit log splits the bound part of the same pods, over
			// the same span.
			if b := spans.binds; len(b) != 1 || b[0].job != "j" || fmt.Sprint(b[0].pods) != tt.names || math.Abs(b[0].bound.Sub(b[0].seen).Seconds()-a.PodsBound.Max) > 1e-9 {
				t.Errorf("binds handed to the audit log %+v; want one over pods %s, %gs long", b, tt.names, a.PodsBound.Max)
			}
		})
	}
}

// inFlight is a pods client whose gate removals each wait until want
// are in flight at once and 50 ms more (or 5 s pass), counting the most
// there were.
type inFlight struct {
	corev1client.PodInterface
	want      int32
	now, most *atomic.Int32
	full      chan struct{}
	once      *sync.Once
}

func (p inFlight) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Pod, error) {
	n := p.now.Add(1)
	defer p.now.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	if n >= p.want {
		// Held a little longer: a pool larger than want would show.
		p.once.Do(func() { time.AfterFunc(50*time.Millisecond, func() { close(p.full) }) })
	}
	select {
	case <-p.full:
	case <-time.After(5 * time.Second):
	}
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

type inFlightCore struct {
	corev1client.CoreV1Interface
	pods inFlight
}

func (c inFlightCore) Pods(ns string) corev1client.PodInterface {
	c.pods.PodInterface = c.CoreV1Interface.Pods(ns)
	return c.pods
}

type inFlightClients struct {
	*fake.Clientset
	core inFlightCore
}

func (c inFlightClients) CoreV1() corev1client.CoreV1Interface { return c.core }

// An admitted job's gates come off workers at a time: four of its ten
// pods' removals are in flight together, never more.
func TestAdmitterUngatesInParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns, workers = "gf-train", 4
	var objs []runtime.Object
	for i := range 10 {
		objs = append(objs, gatedPod(ns, "a", i, 8))
	}
	fc := fake.NewClientset(objs...)
	w := watch.NewFake()
	fc.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	pods := inFlight{want: workers, now: new(atomic.Int32), most: new(atomic.Int32), full: make(chan struct{}), once: new(sync.Once)}
	cs := inFlightClients{fc, inFlightCore{fc.CoreV1(), pods}}
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 80, 80, true, AdmitByGate, workers, progress.Discard)
	if err != nil {
		t.Fatal(err)
	}
	adm.add("a")
	for ctx.Err() == nil {
		adm.mu.Lock()
		left := len(adm.gated["a"])
		adm.mu.Unlock()
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	end := stop()
	if got := pods.most.Load(); got != workers || end.LeftGated != 0 || end.UngateWorkers != workers {
		t.Errorf("at most %d removals in flight, %d pods left gated, %d workers recorded; want %d at once, none left", got, end.LeftGated, end.UngateWorkers, workers)
	}
}

// Quota admission counts a bound pod of another run in the same
// namespace as held, not as its own: the job of 16 GPUs waits while that
// pod holds 8 of 16. A gate removal the apiserver refuses is counted,
// warned of once and tried again; one of a pod already gone is done.
func TestAdmitterOtherRunsAndErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	old := gatedPod(ns, "old", 0, 8)
	old.Labels[LabelRun], old.Spec.SchedulingGates, old.Spec.NodeName = "train-0", nil, "n1"
	cs := fake.NewClientset(old, gatedPod(ns, "a", 0, 8), gatedPod(ns, "a", 1, 8))
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	refused := 0
	cs.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		switch name := action.(k8stesting.PatchAction).GetName(); {
		case name == "a-0": // deleted before its gate's removal was sent
			return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		case name == "a-1" && refused < 3:
			refused++
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is slow"))
		}
		return false, nil, nil
	})
	var warned warnings
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 16, 16, true, AdmitByGate, 1, warned.report)
	if err != nil {
		t.Fatal(err)
	}
	adm.add("a")
	time.Sleep(1500 * time.Millisecond) // more than a pass's tick
	adm.mu.Lock()
	early := adm.admitted
	adm.mu.Unlock()
	if early != 0 {
		t.Errorf("job a admitted with another run's pod holding 8 of 16 GPUs")
	}
	old.ResourceVersion = "10"
	w.Delete(old)
	for ctx.Err() == nil {
		if p, _ := cs.CoreV1().Pods(ns).Get(ctx, "a-1", metav1.GetOptions{}); !hasGate(p, AdmissionGate) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	end := stop()
	if r, got := end.AdmissionResult, warned.list(); r.JobsAdmitted != 1 || r.GateRemovalErrors != 3 || r.LeftGated != 0 || len(got) != 1 {
		t.Errorf("admission %+v, warnings %q; want 1 admitted, 3 refused removals of a-1 warned of once, none left gated", r, got)
	}
}

// Under admission, the fit a job's start counts from is the last before
// its admission: a later one (another run's pod ending between the
// admission and the start) covers the next job, not this one.
func TestStartAfterFitAdmitted(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"a": at(0)}
	pods := []PodTimes{{Group: "a", Created: at(0), Scheduled: at(12), Running: at(13)}}
	times := &admissionTimes{fits: []time.Time{at(10), at(12)},
		admittedAt: map[string]time.Time{"a": at(10.1)}, ungatedAt: map[string][]time.Time{"a": {at(11)}}}
	res, _ := trainAccounting(TrainResult{Jobs: 1, PodsPerJob: 1, GPUsPerPod: 8, Admission: &AdmissionResult{}}, pods, created, at(20), times)
	a := res.Admission
	if f := res.StartAfterFit; f == nil || f.Max != 3 || a.AdmitAfterFit == nil || a.AdmitAfterFit.Max < 0.099 || a.AdmitAfterFit.Max > 0.101 || a.StartAfterUngate.Max != 2 {
		t.Errorf("start after fit %+v, admitted after %+v, started after its last gate %+v; want 3s from the fit at 10s, 0.1s, 2s", f, a.AdmitAfterFit, a.StartAfterUngate)
	}
}

// Jobs admitted together have their gates removed job by job, in
// admission order, each job's pods by name.
func TestAdmitterUngatesJobByJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	var objs []runtime.Object
	for _, job := range []string{"b", "a"} {
		for i := range 3 {
			objs = append(objs, gatedPod(ns, job, i, 8))
		}
	}
	cs := fake.NewClientset(objs...)
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	var mu sync.Mutex
	var sent []string
	cs.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		sent = append(sent, action.(k8stesting.PatchAction).GetName())
		mu.Unlock()
		return false, nil, nil
	})
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 48, 24, true, AdmitByGate, 1, progress.Discard)
	if err != nil {
		t.Fatal(err)
	}
	adm.add("b")
	adm.add("a")
	for ctx.Err() == nil {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n >= 6 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b-0", "b-1", "b-2", "a-0", "a-1", "a-2"}; !slices.Equal(sent, want) {
		t.Errorf("gates removed in the order %v; want %v", sent, want)
	}
}

// suspendedJob is a Job of run train-1 created suspended.
func suspendedJob(ns, name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelRun: "train-1"}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true)}}
}

// By suspend, admission unsuspends the Jobs of the jobs that fit and
// leaves the one behind them suspended; no pod exists to ungate. An
// unsuspending the apiserver refuses is counted, warned of once and
// tried again; a Job already gone counts as done.
func TestAdmitterUnsuspends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ns = "gf-train"
	cs := fake.NewClientset(suspendedJob(ns, "a"), suspendedJob(ns, "b"))
	w := watch.NewFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	refused := 0
	cs.PrependReactor("patch", "jobs", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.PatchAction).GetName() == "a" && refused < 2 {
			refused++
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is slow"))
		}
		return false, nil, nil
	})
	var warned warnings
	adm, stop, err := startAdmitter(ctx, cs, ns, "train-1", 32, 16, true, AdmitBySuspend, 1, warned.report)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"gone", "a", "b"} {
		adm.add(job)
	}
	suspended := func(name string) bool {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(j.Spec.Suspend, false)
	}
	for suspended("a") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // more than a pass's tick
	end := stop()
	r, got := end.AdmissionResult, warned.list()
	if suspended("a") || !suspended("b") || r.By != AdmitBySuspend || r.JobsAdmitted != 2 || r.JobsHeld != 1 || r.LeftSuspended != 0 || r.GateRemovalErrors != 2 || len(got) != 1 {
		t.Errorf("a suspended %v, b suspended %v, admission %+v, warnings %q; want a unsuspended after 2 refusals warned of once, the gone Job done, b still suspended",
			suspended("a"), suspended("b"), r, got)
	}
	if admitted, unsuspended := end.times.admitted("a", time.Now()); admitted.IsZero() || unsuspended.Before(admitted) {
		t.Errorf("job a admitted at %v, unsuspended at %v; want both, in that order", admitted, unsuspended)
	}
}
