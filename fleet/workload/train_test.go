package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrainAccounting(t *testing.T) {
	at := secondsFrom(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"a": at(0), "b": at(0), "c": at(0)}
	pods := []PodTimes{
		// Job a: both pods bound at 1s, running at 2s and 4s: started at 4s.
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(2)},
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(4)},
		// Job b: one pod runs from 2s, the other never binds: partial.
		{Group: "b", Created: at(0), Scheduled: at(2), Running: at(2)},
		{Group: "b", Created: at(0)},
		// Job c: nothing bound.
		{Group: "c", Created: at(0)},
		{Group: "c", Created: at(0)},
	}
	res, _ := trainAccounting(TrainResult{Jobs: 3, PodsPerJob: 2, GPUsPerPod: 8}, pods, created, at(10), nil)
	if res.JobsStarted != 1 || res.JobsPartial != 1 || res.JobsWaiting != 1 {
		t.Errorf("jobs started/partial/waiting %d/%d/%d, want 1/1/1", res.JobsStarted, res.JobsPartial, res.JobsWaiting)
	}
	if res.StartLatency.Count != 1 || res.StartLatency.P50 != 4 {
		t.Errorf("start latency %+v, want one job at 4s", res.StartLatency)
	}
	if !slices.Equal(res.JobsStartedAt, []time.Time{at(4)}) {
		t.Errorf("jobs started at %v, want job a at 4s", res.JobsStartedAt)
	}
	// a: 2 pods × 3s × 8 GPUs = 48; b: 1 pod × 8s × 8 = 64.
	if res.PartialGPUSeconds != 112 {
		t.Errorf("partial GPU-seconds %v, want 112", res.PartialGPUSeconds)
	}
	if res.PeakPartialGPUs != 24 || res.StrandedGPUs != 8 {
		t.Errorf("peak %d, stranded %d; want 24 (a's 16 + b's 8 from 2s to 4s), 8", res.PeakPartialGPUs, res.StrandedGPUs)
	}
}

func TestTrainOptionsValidate(t *testing.T) {
	c := Capacity{FakeNodes: 10, FreeGPUs: 80, MaxNodeGPUs: 8}
	bad := []struct {
		o    TrainOptions
		want string
	}{
		{TrainOptions{Jobs: 0, PodsPerJob: 2, GPUsPerPod: 8, Timeout: time.Minute}, "job count 0"},
		{TrainOptions{Jobs: 1, PodsPerJob: 0, GPUsPerPod: 8, Timeout: time.Minute}, "pods per job 0"},
		{TrainOptions{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 9, Timeout: time.Minute}, "GPUs per pod 9 is out of range: allowed are 1-8"},
		{TrainOptions{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 8}, "timeout 0s"},
	}
	for _, tt := range bad {
		if _, err := tt.o.Validate(c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
	o := TrainOptions{Jobs: 6, PodsPerJob: 2, GPUsPerPod: 8, Timeout: time.Minute}
	if w, err := o.Validate(c); err != nil || len(w) != 1 || !strings.Contains(w[0], "need 96 GPUs; 80 are free") {
		t.Errorf("over capacity: %v, %v", w, err)
	}
}

func TestBinpackSizesAndMix(t *testing.T) {
	mix, err := ParseMix("1:40, 2:30,4:20,8:10")
	if err != nil {
		t.Fatal(err)
	}
	o := BinpackOptions{Mix: mix, Seed: 7}
	sizes := o.Sizes(7600)
	var sum int
	count := map[int]int{}
	for _, s := range sizes {
		sum += s
		count[s]++
	}
	if sum != 7600 {
		t.Errorf("sizes add up to %d, want exactly 7600", sum)
	}
	if count[1] < count[8] || count[2] < count[8] {
		t.Errorf("size counts %v do not follow the 40/30/20/10 mix", count)
	}
	again := o.Sizes(7600)
	if len(again) != len(sizes) || again[0] != sizes[0] || again[len(again)-1] != sizes[len(sizes)-1] {
		t.Error("the same seed drew different sizes")
	}
	for _, bad := range []string{"", "1", "x:3", "0:5", "2:-1", "1:0,2:0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
}

func TestBinpackAccounting(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A 10-GPU fleet: pods of 4, 4, 1 bound in turn; a 2-GPU pod never fits.
	pods := []PodTimes{
		{Group: "4", Created: at(0), Scheduled: at(10)},
		{Group: "4", Created: at(100), Scheduled: at(120)},
		{Group: "1", Created: at(200), Scheduled: at(250)},
		{Group: "2", Created: at(300)},
	}
	res := binpackAccounting(BinpackResult{}, pods, 10, 0)
	if res.ScheduledGPUs != 9 || res.Occupancy != 0.9 || res.UnschedulableBySize[2] != 1 {
		t.Errorf("result %+v", res)
	}
	// Bound at 0% (first), 40% (second) and 80% (third) occupancy.
	want := map[string]float64{"0-10%": 0.010, "40-50%": 0.020, "80-90%": 0.050}
	if len(res.Deciles) != 3 {
		t.Fatalf("deciles %+v", res.Deciles)
	}
	for _, d := range res.Deciles {
		if w, ok := want[d.Occupancy]; !ok || d.Latency.P50 != w {
			t.Errorf("decile %s latency %v, want %v", d.Occupancy, d.Latency.P50, w)
		}
	}
}

// The fragmentation left: nodes by free GPUs, and the free GPUs on
// partly used nodes, which no whole-node pod can use; the same whether
// GPUs are nvidia.com/gpu or DRA devices (the caller says what each node
// has and uses).
func TestFreeHistogram(t *testing.T) {
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	nodes := []corev1.Node{node("empty"), node("part"), node("full"), node("other")}
	has := map[string]int64{"empty": 8, "part": 8, "full": 8, "other": 4}
	used := map[string]int64{"part": 3, "full": 8, "other": 1}
	hist, stranded := freeHistogram(nodes, has, used, 8)
	if want := []int{1, 0, 0, 1, 0, 1, 0, 0, 1}; !slices.Equal(hist, want) {
		t.Errorf("nodes by free GPUs %v, want %v", hist, want)
	}
	// part's 5 and other's 3: a node with fewer than 8 GPUs never fits
	// an 8-GPU pod either.
	if stranded != 8 {
		t.Errorf("stranded %d, want 8", stranded)
	}
}

// Workers that end after their job started break it until replacements
// run; one that ends before the start only shortens what it held.
func TestTrainAccountingBreaks(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"a": at(0), "d": at(0), "e": at(0)}
	pods := []PodTimes{
		// a starts at 4s; a worker fails at 6s, its replacement runs at 9s.
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(2)},
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(4), Ended: at(6)},
		{Group: "a", Created: at(6), Scheduled: at(7), Running: at(9)},
		// d starts at 2s; a worker is evicted at 5s and never replaced.
		{Group: "d", Created: at(0), Scheduled: at(1), Running: at(2)},
		{Group: "d", Created: at(0), Scheduled: at(1), Running: at(2), Ended: at(5)},
		// e: a worker fails at 2s before e started; e starts at 3s.
		{Group: "e", Created: at(0), Scheduled: at(1), Running: at(1), Ended: at(2)},
		{Group: "e", Created: at(0), Scheduled: at(1), Running: at(2.5)},
		{Group: "e", Created: at(2), Scheduled: at(3), Running: at(3)},
	}
	res, _ := trainAccounting(TrainResult{Jobs: 3, PodsPerJob: 2, GPUsPerPod: 8}, pods, created, at(10), nil)
	if res.JobsStarted != 3 || res.JobsBroken != 2 || res.JobsDown != 1 || res.WorkersEnded != 2 {
		t.Errorf("started %d, broken %d, down %d, workers ended %d; want 3, 2, 1, 2", res.JobsStarted, res.JobsBroken, res.JobsDown, res.WorkersEnded)
	}
	if res.Recovery.Count != 1 || res.Recovery.P50 != 3 {
		t.Errorf("recovery %+v, want one break of 3s (a, 6s to 9s)", res.Recovery)
	}
	// a: 1 worker × 3s; d: 1 worker × 5s (to the end); × 8 GPUs.
	if res.BrokenGPUSeconds != 64 {
		t.Errorf("broken GPU-seconds %v, want 64", res.BrokenGPUSeconds)
	}
	// Only survivors held them; a's one replacement made it whole at
	// once; no break lost all its earlier workers.
	if res.SurvivorGPUSeconds != 64 || res.ReplacementGPUSeconds != 0 || res.Assembly.Count != 1 || res.Assembly.Max != 0 || res.Teardown.Count != 0 {
		t.Errorf("survivor GPU-seconds %v, assembly %+v, teardown %+v; want 64, one of 0s, none", res.SurvivorGPUSeconds, res.Assembly, res.Teardown)
	}
	// Before the starts: a 2 × 3s, d 2 × 1s, e 1s + 2s + 0s; × 8 GPUs.
	if res.PartialGPUSeconds != 8*(6+2+3) {
		t.Errorf("partial GPU-seconds %v, want %d", res.PartialGPUSeconds, 8*(6+2+3))
	}
	if res.StartLatency.Max != 4 || res.StrandedGPUs != 0 {
		t.Errorf("start latency %+v, stranded %d", res.StartLatency, res.StrandedGPUs)
	}
}

// A job restarted whole: its survivors stop one by one (the teardown),
// then the new workers run one by one (the assembly); the GPU-seconds
// held split between the two.
func TestTrainAccountingRestart(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"r": at(0)}
	pods := []PodTimes{
		// r starts at 2s; a worker fails at 5s; the others stop at 7s and 8s.
		{Group: "r", Created: at(0), Scheduled: at(1), Running: at(2), Ended: at(5)},
		{Group: "r", Created: at(0), Scheduled: at(1), Running: at(2), Ended: at(7)},
		{Group: "r", Created: at(0), Scheduled: at(1), Running: at(2), Ended: at(8)},
		// The new workers run at 10s, 11s and 13s.
		{Group: "r", Created: at(9), Scheduled: at(9), Running: at(10)},
		{Group: "r", Created: at(9), Scheduled: at(9), Running: at(11)},
		{Group: "r", Created: at(9), Scheduled: at(9), Running: at(13)},
	}
	res, _ := trainAccounting(TrainResult{Jobs: 1, PodsPerJob: 3, GPUsPerPod: 8}, pods, created, at(20), nil)
	if res.JobsBroken != 1 || res.JobsDown != 0 || res.Recovery.Max != 8 {
		t.Errorf("broken %d, down %d, recovery %+v; want 1, 0, 8s", res.JobsBroken, res.JobsDown, res.Recovery)
	}
	// Survivors: 2 × 2s + 1 × 1s; replacements: 1 × 1s + 2 × 2s; × 8 GPUs.
	if res.BrokenGPUSeconds != 80 || res.SurvivorGPUSeconds != 40 || res.ReplacementGPUSeconds != 40 {
		t.Errorf("broken GPU-seconds %v, survivors' %v, replacements' %v; want 80, 40, 40", res.BrokenGPUSeconds, res.SurvivorGPUSeconds, res.ReplacementGPUSeconds)
	}
	if res.Teardown.Count != 1 || res.Teardown.Max != 3 || res.Assembly.Count != 1 || res.Assembly.Max != 3 {
		t.Errorf("teardown %+v, assembly %+v; want one of 3s (5s to 8s), one of 3s (10s to 13s)", res.Teardown, res.Assembly)
	}
}

// The split's edges: a pod the old Job made while the restart deleted it
// belongs to the earlier run; a break whose workers were all lost at once
// has no teardown, and one still open at the end no assembly.
func TestTrainAccountingSplitEdges(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	created := map[string]time.Time{"o": at(0), "z": at(0)}
	pods := []PodTimes{
		// o: a worker fails at 5s and the restart stops another at 5.5s;
		// the old Job's replacement runs at 6s and is stopped at 7s, the
		// last old worker at 8s; the new workers run at 10s, 11s and 12s.
		{Group: "o", Running: at(2), Ended: at(5)},
		{Group: "o", Running: at(2), Ended: at(5.5)},
		{Group: "o", Running: at(2), Ended: at(8)},
		{Group: "o", Running: at(6), Ended: at(7)},
		{Group: "o", Running: at(10)},
		{Group: "o", Running: at(11)},
		{Group: "o", Running: at(12)},
		// z: all three workers lost at 5s; one replacement runs at 7s,
		// the others never.
		{Group: "z", Running: at(2), Ended: at(5)},
		{Group: "z", Running: at(2), Ended: at(5)},
		{Group: "z", Running: at(2), Ended: at(5)},
		{Group: "z", Running: at(7)},
	}
	res, _ := trainAccounting(TrainResult{Jobs: 2, PodsPerJob: 3, GPUsPerPod: 2}, pods, created, at(20), nil)
	if res.JobsBroken != 2 || res.JobsDown != 1 || res.Recovery.Count != 1 || res.Recovery.Max != 7 {
		t.Errorf("broken %d, down %d, recovery %+v; want 2, 1, one of 7s (o)", res.JobsBroken, res.JobsDown, res.Recovery)
	}
	// o: earlier 0.5s + 3s + 1s, new 2s + 1s; z: new 13s (7s to the
	// end); × 2 GPUs.
	if res.BrokenGPUSeconds != 41 || res.SurvivorGPUSeconds != 9 || res.ReplacementGPUSeconds != 32 {
		t.Errorf("broken GPU-seconds %v, earlier workers' %v, replacements' %v; want 41, 9, 32", res.BrokenGPUSeconds, res.SurvivorGPUSeconds, res.ReplacementGPUSeconds)
	}
	if res.Teardown.Count != 1 || res.Teardown.Max != 3 || res.Assembly.Count != 1 || res.Assembly.Max != 2 {
		t.Errorf("teardown %+v, assembly %+v; want only o's: 3s (5s to 8s), 2s (10s to 12s)", res.Teardown, res.Assembly)
	}
}

// A worker stops when its node goes NotReady, not when its pod is
// evicted minutes later; a node down before the pod ran, and back, does
// not count against it.
func TestEndOnDownNodes(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	now := at(0)
	d := &NodeDowns{spans: map[string][]span{}, now: func() time.Time { return now }}
	node := func(name string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	d.observe(node("n1", corev1.ConditionFalse)) // n1 down at 0s, back at 1s
	now = at(1)
	d.observe(node("n1", corev1.ConditionTrue))
	now = at(5)
	d.observe(node("n2", corev1.ConditionUnknown)) // n2 down at 5s for good
	d.observe(node("n2", corev1.ConditionUnknown))
	pods := d.EndOnDownNodes([]PodTimes{
		{Node: "n1", Running: at(2)},                 // ran after n1 came back
		{Node: "n2", Running: at(2), Ended: at(340)}, // evicted at 340s
		{Node: "n2", Running: at(2), Ended: at(3)},   // failed before
		{Node: "n2"}, // never ran
	})
	for i, want := range []time.Time{{}, at(5), at(3), {}} {
		if !pods[i].Ended.Equal(want) {
			t.Errorf("pod %d ended %s, want %s", i, pods[i].Ended, want)
		}
	}
}

// secondsFrom returns a clock reading seconds after t0.
func secondsFrom(t0 time.Time) func(float64) time.Time {
	return func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
}

// The hold starts when the last job first ran whole, not on the poll
// that saw it; with a job that never did, at the fallback.
func TestAllWhole(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	pods := []PodTimes{
		{UID: "a0", Group: "a", Running: at(1)},
		{UID: "a1", Group: "a", Running: at(2), Ended: at(5)}, // lost after a ran whole: still whole from 2
		{UID: "b0", Group: "b", Running: at(3)},
		{UID: "b1", Group: "b", Running: at(4)},
	}
	if got := allWhole(pods, 2, at(9)); !got.Equal(at(4)) {
		t.Errorf("all whole at %v, want %v (b's second worker)", got, at(4))
	}
	if got := allWhole(append(pods, PodTimes{UID: "c0", Group: "c", Running: at(1)}), 2, at(9)); !got.Equal(at(9)) {
		t.Errorf("with a job never whole: %v, want the fallback %v", got, at(9))
	}
}
