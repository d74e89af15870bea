package workload

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// The pacer hands out exactly rate slots per second of (fake) time, and a
// rate change applies from the next slot.
func TestPacerIsOpenLoopAndFollowsRateChanges(t *testing.T) {
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	p := NewPacer(clk, 10)
	slots := make(chan time.Time, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			due, err := p.Next(ctx)
			if err != nil {
				close(slots)
				return
			}
			slots <- due
		}
	}()
	// advance moves fake time in 1ms steps, letting the pacer catch up.
	advance := func(d time.Duration) {
		for end := clk.Now().Add(d); clk.Now().Before(end); {
			for !clk.HasWaiters() {
				time.Sleep(50 * time.Microsecond)
			}
			clk.Step(time.Millisecond)
		}
	}
	count := func() int {
		// Let the pacer goroutine deliver what is due.
		for !clk.HasWaiters() {
			time.Sleep(50 * time.Microsecond)
		}
		return len(slots)
	}
	advance(time.Second - time.Millisecond)
	if n := count(); n != 10 {
		t.Fatalf("slots in the first second at 10/s: %d, want 10", n)
	}
	p.SetRate(100)
	advance(time.Second)
	if n := count(); n < 105 || n > 111 {
		t.Fatalf("slots after a second more at 100/s: %d, want ~110", n)
	}
	var prev time.Time
	for i := 0; i < 10; i++ {
		due := <-slots
		if i > 0 && due.Sub(prev) != 100*time.Millisecond {
			t.Errorf("slot %d came %s after the previous, want 100ms", i, due.Sub(prev))
		}
		prev = due
	}
}

func TestSummarise(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	got := Summarise(s)
	want := Percentiles{Count: 100, P50: 0.050, P90: 0.090, P99: 0.099, Max: 0.100}
	if got != want {
		t.Errorf("Summarise(1..100ms) = %+v, want %+v", got, want)
	}
	if got := Summarise(nil); got != (Percentiles{}) {
		t.Errorf("Summarise(nil) = %+v", got)
	}
	if got := Summarise([]time.Duration{3 * time.Second}); got.P50 != 3 || got.P99 != 3 {
		t.Errorf("Summarise(one) = %+v", got)
	}
}

// fakePods answers creates and deletes from memory; create fails with 429
// for every tenth pod, and blocks until the request's context ends when
// block is set.
type fakePods struct {
	mu      sync.Mutex
	pods    map[string]bool
	deletes int
	block   bool
}

func (f *fakePods) Create(ctx context.Context, p *corev1.Pod) error {
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	var i int
	fmt.Sscanf(p.Name[strings.LastIndex(p.Name, "-")+1:], "%d", &i)
	if i%10 == 0 {
		return apierrors.NewTooManyRequests("APF rejected", 1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[p.Name] = true
	return nil
}

func (f *fakePods) Delete(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.pods[name] {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	delete(f.pods, name)
	f.deletes++
	return nil
}

func TestChurnAccountsEverySlot(t *testing.T) {
	api := &fakePods{pods: map[string]bool{}}
	c, err := NewChurn(api, ChurnOptions{RunID: "churn-t", Rate: 100, Duration: 500 * time.Millisecond, Lifetime: 200 * time.Millisecond, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 50 slots; pods 0, 10, 20, 30, 40 get a 429; pods due for deletion
	// inside the window are 0..29, less the three whose create failed.
	if res.Attempted[VerbCreate] != 50 || res.Created != 45 || res.Errors[requests.ErrTooManyRequests] != 5 {
		t.Errorf("creates: attempted %d, created %d, errors %v; want 50, 45, 429=5", res.Attempted[VerbCreate], res.Created, res.Errors)
	}
	if res.Attempted[VerbDelete] != 27 || res.Deleted != 27 || api.deletes != 27 {
		t.Errorf("deletes: attempted %d, deleted %d (api saw %d); want 27", res.Attempted[VerbDelete], res.Deleted, api.deletes)
	}
	if res.CreateRatio != 0.9 {
		t.Errorf("create ratio %v, want 0.9", res.CreateRatio)
	}
	if res.Latency[VerbCreate].Count != 50 || res.Latency[VerbDelete].Count != 27 {
		t.Errorf("latency samples %+v", res.Latency)
	}
	if len(api.pods) != 45-27 {
		t.Errorf("%d pods left, want %d for Cleanup", len(api.pods), 45-27)
	}
}

func TestChurnLimitedShedsWhenEverySlotIsBusy(t *testing.T) {
	api := &fakePods{pods: map[string]bool{}, block: true}
	c, err := NewChurn(api, ChurnOptions{RunID: "churn-l", Rate: 20, Duration: 300 * time.Millisecond, Lifetime: 150 * time.Millisecond,
		Limited: true, Concurrency: 1, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The first create holds the only slot past the end of the run: the
	// other five creates are shed, and so is the one delete that is due
	// (its create has not failed yet). The held create times out.
	if res.Attempted[VerbCreate] != 6 || res.Shed[VerbCreate] != 5 || res.Errors[requests.ErrTimeout] != 1 {
		t.Errorf("creates: attempted %d, shed %v, errors %v; want 6, create=5, timeout=1", res.Attempted[VerbCreate], res.Shed, res.Errors)
	}
	if res.Shed[VerbDelete] != 1 || res.Deleted != 0 {
		t.Errorf("deletes: shed %v, deleted %d; want delete=1, 0", res.Shed, res.Deleted)
	}
}

func TestChurnOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    ChurnOptions
		want string
	}{
		{"zero rate", ChurnOptions{Rate: 0, Duration: time.Minute}, "rate 0 is out of range"},
		{"negative rate", ChurnOptions{Rate: -5, Duration: time.Minute}, "rate -5 is out of range"},
		{"zero duration", ChurnOptions{Rate: 10}, "duration 0s is out of range"},
		{"lifetime too long", ChurnOptions{Rate: 10, Duration: time.Minute, Lifetime: time.Hour}, "lifetime 1h0m0s is out of range"},
		{"limited without concurrency", ChurnOptions{Rate: 10, Duration: time.Minute, Limited: true, RequestTimeout: time.Second}, "concurrency 0 is out of range"},
		{"limited without timeout", ChurnOptions{Rate: 10, Duration: time.Minute, Limited: true, Concurrency: 5}, "request timeout 0s is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
	o := ChurnOptions{Rate: 10, Duration: 10 * time.Second}
	if err := o.Validate(); err != nil || o.Lifetime != 5*time.Second {
		t.Errorf("default lifetime for a 10s run: %s, %v; want 5s", o.Lifetime, err)
	}
}

func TestTrackerPhases(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	tr := newTracker(func() time.Time { return now })
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		p.Name, p.UID = name, types.UID(name)
		p.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
		return p
	}
	// a is sent at 0.2s, but the watch first sees it 0.8s later: the
	// create→schedule phase starts at the send, not at the sighting.
	now = now.Add(200 * time.Millisecond)
	tr.Sending("a")
	now = now.Add(800 * time.Millisecond)
	tr.observe(pod("a", "", corev1.PodPending), false)
	tr.observe(pod("b", "", corev1.PodPending), false) // not sent by us: creationTimestamp (0s)
	now = now.Add(time.Second)                         // 2.0s
	tr.observe(pod("a", "n1", corev1.PodPending), false)
	now = now.Add(1500 * time.Millisecond) // 3.5s
	tr.observe(pod("a", "n1", corev1.PodRunning), false)
	unsched := pod("b", "", corev1.PodPending)
	unsched.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	tr.observe(unsched, false)

	if c := tr.Counts(); c != (Counts{Seen: 2, Scheduled: 1, Running: 1, Unschedulable: 1}) {
		t.Errorf("counts %+v", c)
	}
	s := tr.Startup()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"create→schedule", s.CreateToSchedule.P99, 1.8},
		{"schedule→run", s.ScheduleToRun.P99, 1.5},
		{"pod_startup", s.PodStartup.P99, 3.3},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s p99 = %.3f, want %.3f", c.name, c.got, c.want)
		}
	}
	if s.CreateTime != CreateTimeMixed {
		t.Errorf("create time source %q, want %q", s.CreateTime, CreateTimeMixed)
	}
	pods := tr.Pods()
	for _, p := range pods {
		if p.Group == "" && p.Node == "n1" && !p.Created.Before(p.Scheduled) {
			t.Errorf("a: created %s not before scheduled %s", p.Created, p.Scheduled)
		}
	}
	first, _, _ := tr.Window()
	if !first.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("first created %s: b's creationTimestamp is the earliest", first)
	}

	// a fails at 4.5s (a fault), then is deleted: it ended when first
	// seen failed. b is deleted without ever running: it ended, but it
	// never ran, so Counts has no running pod ended for it.
	now = now.Add(time.Second)
	tr.observe(pod("a", "n1", corev1.PodFailed), false)
	now = now.Add(time.Second)
	tr.observe(pod("a", "n1", corev1.PodFailed), true)
	tr.observe(pod("b", "", corev1.PodPending), true)
	if c := tr.Counts(); c.Ended != 1 || c.Failed != 1 {
		t.Errorf("counts after a failed and b went %+v, want 1 ended, 1 failed", c)
	}
	for _, p := range tr.Pods() {
		if p.Ended.IsZero() {
			t.Errorf("pod on %q has no end time", p.Node)
		}
		if p.Node == "n1" && p.Ended.Sub(p.Running) != time.Second {
			t.Errorf("a ended %s after running, want 1s (its first failed sighting)", p.Ended.Sub(p.Running))
		}
	}
}

// A pod's bound version is its first copy seen bound, if not yet
// running; a pod first seen bound and running (from a list) has none.
func TestTrackerBoundVersion(t *testing.T) {
	tr := newTracker(time.Now)
	pod := func(name, node, rv string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		p.Name, p.UID, p.ResourceVersion = name, types.UID(name), rv
		return p
	}
	tr.observe(pod("a", "", "10", corev1.PodPending), false)
	tr.observe(pod("a", "n1", "12", corev1.PodPending), false) // its binding
	tr.observe(pod("a", "n1", "15", corev1.PodPending), false)
	tr.observe(pod("a", "n1", "17", corev1.PodRunning), false)
	tr.observe(pod("b", "n1", "20", corev1.PodRunning), false)
	got := map[string]string{}
	for _, p := range tr.Pods() {
		got[p.Name] = p.BoundVersion
	}
	if got["a"] != "12" || got["b"] != "" {
		t.Errorf("bound versions %v, want a 12, b none", got)
	}
	if v := boundVersions(tr.Pods()); len(v) != 1 || v["a"] != 12 {
		t.Errorf("bound versions as numbers %v, want a 12 only", v)
	}
	tr.observe(pod("c", "n1", "21", corev1.PodPending), false)
	if r := runningSeen(tr.Pods()); len(r) != 2 || r["a"].IsZero() || r["b"].IsZero() {
		t.Errorf("seen running %v, want a and b, not c", r)
	}
}

func gpuNode(name string, gpus int, fake bool) *corev1.Node {
	p, _ := fleet.LookupGPUProfile("dgx-h100")
	n := fleet.NewNode(p, 0)
	n.Name = name
	if !fake {
		delete(n.Annotations, fleet.AnnotationFake)
	}
	q := n.Status.Allocatable[fleet.ResourceGPU]
	q.Set(int64(gpus))
	n.Status.Allocatable[fleet.ResourceGPU] = q
	return n
}

func TestCheckFleet(t *testing.T) {
	ctx := context.Background()
	if _, err := CheckFleet(ctx, fake.NewClientset()); err == nil || !strings.Contains(err.Error(), "no fake GPU nodes") {
		t.Errorf("empty fleet: %v", err)
	}
	_, err := CheckFleet(ctx, fake.NewClientset(gpuNode("a", 8, true), gpuNode("real-1", 8, false)))
	if err == nil || !strings.Contains(err.Error(), "real-1") {
		t.Errorf("a real node labelled type=kwok must be refused: %v", err)
	}
	busy := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Resources: PodSpec(3).Containers[0].Resources}}}}
	busy.Name, busy.Namespace = "busy", "x"
	c, err := CheckFleet(ctx, fake.NewClientset(gpuNode("a", 8, true), gpuNode("b", 4, true), busy))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Capacity{FakeNodes: 2, TotalGPUs: 12, FreeGPUs: 9, MaxNodeGPUs: 8}) {
		t.Errorf("capacity %+v, want 2 nodes, 9 free, max 8", c)
	}
}

func TestLoadOptionsValidate(t *testing.T) {
	capacity := Capacity{FakeNodes: 100, FreeGPUs: 800, MaxNodeGPUs: 8}
	tests := []struct {
		name  string
		o     LoadOptions
		allow bool
		want  string
	}{
		{"zero GPUs", LoadOptions{Pods: 10, GPUs: 0, Mode: ModePods, Timeout: time.Minute}, false, "GPUs per pod 0 is out of range"},
		{"too many GPUs", LoadOptions{Pods: 10, GPUs: 16, Mode: ModePods, Timeout: time.Minute}, false, "more than any node has (largest: 8)"},
		{"bad mode", LoadOptions{Pods: 10, GPUs: 1, Mode: "statefulset", Timeout: time.Minute}, false, `mode "statefulset" is not supported`},
		{"no timeout", LoadOptions{Pods: 10, GPUs: 1, Mode: ModePods}, false, "timeout 0s is out of range"},
		{"zero pods", LoadOptions{Pods: 0, GPUs: 1, Mode: ModePods, Timeout: time.Minute}, false, "pod count 0 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.Validate(capacity, tt.allow)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
	o := LoadOptions{Pods: 10, GPUs: 16, Mode: ModePods, Timeout: time.Minute}
	if _, err := o.Validate(capacity, true); err != nil {
		t.Errorf("--allow-unschedulable: %v", err)
	}
	o = LoadOptions{Pods: 1000, GPUs: 1, Mode: ModePods, Timeout: time.Minute}
	warnings, err := o.Validate(capacity, false)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "need 1000 GPUs but the fleet has 800 free on 100 nodes: about 200 pods") {
		t.Errorf("over capacity: %v, %v", warnings, err)
	}
}

func TestVerdictWithoutPrometheus(t *testing.T) {
	ctx := context.Background()
	res := LoadResult{Pods: 8000, CreateRate: 1500, ScheduleRate: 50}
	v := verdict(ctx, LoadOptions{Mode: ModePods}, res, 7000, time.Now(), time.Now())
	if v.Bottleneck != "scheduler" || !strings.HasPrefix(v.Explanation, "slow") || v.Source != "watch" {
		t.Errorf("7,000 pods waiting: %+v", v)
	}
	res = LoadResult{Pods: 8000, CreateRate: 20, ScheduleRate: 20}
	v = verdict(ctx, LoadOptions{Mode: ModeDeployment}, res, 3, time.Now(), time.Now())
	if v.Bottleneck != "upstream" || !strings.Contains(v.Explanation, "controller-manager") {
		t.Errorf("3 pods waiting in deployment mode: %+v", v)
	}
}

// Pods sent before the namespace's default ServiceAccount exists are
// refused; a wait that ran out must say so, not report success.
func TestWaitDefaultServiceAccount(t *testing.T) {
	ctx := context.Background()
	err := waitDefaultServiceAccount(ctx, fake.NewClientset(), "gf-load", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no default ServiceAccount") || !strings.Contains(err.Error(), "gf-load") {
		t.Errorf("missing ServiceAccount: %v, want an error naming the namespace", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "gf-load"}}
	if err := waitDefaultServiceAccount(ctx, fake.NewClientset(sa), "gf-load", time.Second); err != nil {
		t.Errorf("present ServiceAccount: %v", err)
	}
}

func TestLoadRateValidation(t *testing.T) {
	c := Capacity{FakeNodes: 10, TotalGPUs: 80, FreeGPUs: 80, MaxNodeGPUs: 8}
	for _, tt := range []struct {
		o    LoadOptions
		want string
	}{
		{LoadOptions{Pods: 10, GPUs: 1, Mode: ModePods, Timeout: time.Minute, Rate: -1}, "rate -1 is out of range"},
		{LoadOptions{Pods: 10, GPUs: 1, Mode: ModeDeployment, Timeout: time.Minute, Rate: 5}, "needs --mode pods"},
	} {
		if _, err := tt.o.Validate(c, false); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
}

// The verdict quotes the running profile's limits, not the default's.
func TestVerdictQuotesTheProfile(t *testing.T) {
	now := time.Now()
	tuned := LoadOptions{Pods: 8000, Mode: ModePods, Limits: ClientLimits{Profile: "tuned", SchedulerQPS: 1000, ControllerManagerQPS: 500}}
	v := verdict(context.Background(), tuned, LoadResult{Pods: 8000, ScheduleRate: 80}, 6000, now, now)
	if v.Bottleneck != "scheduler" || !strings.Contains(v.Explanation, "1000 under profile tuned") || strings.Contains(v.Explanation, "50 under") {
		t.Errorf("tuned slow verdict: %+v", v)
	}
	deploy := LoadOptions{Pods: 1000, Mode: ModeDeployment, Limits: ClientLimits{Profile: "default", SchedulerQPS: 50, ControllerManagerQPS: 20}}
	v = verdict(context.Background(), deploy, LoadResult{Pods: 1000, ScheduleRate: 20}, 3, now, now)
	if v.Bottleneck != "upstream" || !strings.Contains(v.Explanation, "20 under profile default") {
		t.Errorf("deployment underfed verdict: %+v", v)
	}
	v = verdict(context.Background(), LoadOptions{Pods: 1000, Mode: ModePods}, LoadResult{Pods: 1000}, 900, now, now)
	if !strings.Contains(v.Explanation, "not known for this cluster") {
		t.Errorf("attached cluster verdict: %+v", v)
	}
}

func TestPerPodCPU(t *testing.T) {
	cpu := map[string]float64{"kube-apiserver": 8, "etcd": 2, "kube-scheduler": 4, "kube-controller-manager": 1, "kwok-controller": 1, "ghostfleet": 3}
	per, total := perPod(cpu, 2000)
	if per["kube-scheduler"] != 2 || per["ghostfleet"] != 1.5 || total != 8 {
		t.Errorf("per pod %v, control plane %v ms; want scheduler 2, ghostfleet 1.5, total 8 (GhostFleet's own not in it)", per, total)
	}
	if per, total := perPod(cpu, 0); len(per) != 0 || total != 0 {
		t.Errorf("no pods: %v %v", per, total)
	}
}
