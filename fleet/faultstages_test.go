package fleet

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

// kwokSim plays GhostFleet's stages the way the kwok controller does:
// match (by weight), render the stage's templates and apply them as kwok
// patches them, so the tests see what the fleet would.
type kwokSim struct {
	// kwok keeps one lifecycle per resource kind.
	nodes, pods lifecycle.Lifecycle
	stages      map[string]*internalversion.Stage
	render      gotpl.Renderer
}

func newKwokSim(t *testing.T) *kwokSim {
	t.Helper()
	all, err := Stages(1200000)
	if err != nil {
		t.Fatal(err)
	}
	sim := &kwokSim{stages: map[string]*internalversion.Stage{}, render: gotpl.NewRenderer(gotpl.FuncMap{
		"NodeIP":   func() string { return "10.0.0.1" },
		"NodeName": func() string { return "n" },
		"NodePort": func() int { return 10250 },
	})}
	byKind := map[string][]*internalversion.Stage{}
	for _, s := range all {
		in, err := internalversion.ConvertToInternalStage(s)
		if err != nil {
			t.Fatalf("stage %s: %v", s.Name, err)
		}
		byKind[s.Spec.ResourceRef.Kind] = append(byKind[s.Spec.ResourceRef.Kind], in)
		sim.stages[s.Name] = in
	}
	if sim.nodes, err = lifecycle.NewLifecycle(byKind["Node"]); err != nil {
		t.Fatal(err)
	}
	if sim.pods, err = lifecycle.NewLifecycle(byKind["Pod"]); err != nil {
		t.Fatal(err)
	}
	return sim
}

func event(obj metav1.Object, data any) *lifecycle.Event {
	return &lifecycle.Event{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Data: data}
}

// match returns the stage kwok would play next (always the same one when
// a fault stage's weight decides), or "".
func (s *kwokSim) match(t *testing.T, obj metav1.Object, data any) string {
	t.Helper()
	lc := s.nodes
	if _, ok := data.(*corev1.Pod); ok {
		lc = s.pods
	}
	st, err := lc.Match(context.Background(), event(obj, data))
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		return ""
	}
	return st.Name()
}

// play applies stage name's patches to obj (a *corev1.Node or *corev1.Pod).
func (s *kwokSim) play(t *testing.T, name string, obj any) {
	t.Helper()
	st := s.stages[name]
	for _, step := range st.Spec.Steps {
		if step.Patch == nil {
			continue
		}
		patch, err := s.render.ToJSON(step.Patch.Template, obj)
		if err != nil {
			t.Fatalf("stage %s renders: %v", name, err)
		}
		if step.Patch.Root != "" {
			patch, _ = json.Marshal(map[string]json.RawMessage{step.Patch.Root: patch})
		}
		orig, _ := json.Marshal(obj)
		var out []byte
		if step.Patch.Type != nil && *step.Patch.Type == internalversion.StagePatchTypeMergePatch {
			out, err = jsonpatch.MergePatch(orig, patch)
		} else {
			out, err = strategicpatch.StrategicMergePatch(orig, patch, obj)
		}
		if err != nil {
			t.Fatalf("stage %s: patch %s: %v", name, patch, err)
		}
		// Into a zeroed object: unmarshalling keeps map keys the patch removed.
		v := reflect.ValueOf(obj).Elem()
		v.Set(reflect.Zero(v.Type()))
		if err := json.Unmarshal(out, obj); err != nil {
			t.Fatalf("stage %s: patched object: %v", name, err)
		}
	}
}

func condition(n *corev1.Node, typ string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func readyNode(t *testing.T, sim *kwokSim) *corev1.Node {
	t.Helper()
	p, _ := LookupGPUProfile(DefaultGPUProfile)
	n := NewNode(p, 3)
	if got := sim.match(t, n, n); got != "node-initialize" {
		t.Fatalf("a new node plays %q, want node-initialize", got)
	}
	sim.play(t, "node-initialize", n)
	if !NodeReady(n) {
		t.Fatal("node-initialize did not make the node Ready")
	}
	return n
}

func TestGPUFaultStagesCoexistWithTheHeartbeat(t *testing.T) {
	sim := newKwokSim(t)
	for _, f := range ConditionFaults {
		t.Run(f.Kind, func(t *testing.T) {
			n := readyNode(t, sim)
			if got := sim.match(t, n, n); got != "node-heartbeat-with-lease" {
				t.Fatalf("a healthy Ready node plays %q, want the heartbeat", got)
			}
			n.Labels[FaultLabel(f.Kind)] = FaultActive
			n.Annotations[FaultAnnotation(f.Kind, "extra")] = "true"
			// The fault stage must win every draw against the heartbeat.
			for i := 0; i < 20; i++ {
				if got := sim.match(t, n, n); got != "ghostfleet-fault-"+f.Kind {
					t.Fatalf("a marked node plays %q, want ghostfleet-fault-%s", got, f.Kind)
				}
			}
			sim.play(t, "ghostfleet-fault-"+f.Kind, n)
			c := condition(n, f.Condition)
			if c == nil || c.Status != corev1.ConditionTrue || c.Reason != f.Reason || c.Message != f.Message {
				t.Fatalf("condition %s after the fault: %+v", f.Condition, c)
			}
			if extra := condition(n, f.Extra); f.Extra != "" && (extra == nil || extra.Status != corev1.ConditionTrue) {
				t.Errorf("extra condition %s: %+v", f.Extra, extra)
			}
			gpus := n.Status.Allocatable[ResourceGPU]
			if want := map[bool]int64{true: 7, false: 8}[f.LowerGPUs]; gpus.Value() != want {
				t.Errorf("allocatable GPUs %s, want %d", gpus.String(), want)
			}
			// Set once: then the heartbeat is back, and does not undo it.
			if got := sim.match(t, n, n); got != "node-heartbeat-with-lease" {
				t.Fatalf("after the fault the node plays %q, want the heartbeat", got)
			}
			sim.play(t, "node-heartbeat-with-lease", n)
			if c := condition(n, f.Condition); c == nil || c.Status != corev1.ConditionTrue {
				t.Fatalf("the heartbeat rewrote %s: %+v", f.Condition, c)
			}
			if !NodeReady(n) {
				t.Error("a GPU fault made the node NotReady")
			}

			delete(n.Labels, FaultLabel(f.Kind))
			if got := sim.match(t, n, n); got != "ghostfleet-clear-"+f.Kind {
				t.Fatalf("an unmarked faulty node plays %q, want ghostfleet-clear-%s", got, f.Kind)
			}
			sim.play(t, "ghostfleet-clear-"+f.Kind, n)
			if c := condition(n, f.Condition); c == nil || c.Status != corev1.ConditionFalse || c.Reason != f.Healthy {
				t.Fatalf("condition after clear: %+v", c)
			}
			if extra := condition(n, f.Extra); f.Extra != "" && (extra == nil || extra.Status != corev1.ConditionFalse) {
				t.Errorf("extra condition after clear: %+v", extra)
			}
			if gpus := n.Status.Allocatable[ResourceGPU]; gpus.Value() != 8 {
				t.Errorf("allocatable GPUs after clear %s, want 8", gpus.String())
			}
			if got := sim.match(t, n, n); got != "node-heartbeat-with-lease" {
				t.Errorf("after clear the node plays %q, want the heartbeat", got)
			}
		})
	}
}

func TestNodeDownStaysDownUntilCleared(t *testing.T) {
	sim := newKwokSim(t)
	n := readyNode(t, sim)
	n.Labels[FaultLabel(FaultNodeDown)] = FaultActive
	if got := sim.match(t, n, n); got != "ghostfleet-fault-node-down" {
		t.Fatalf("plays %q", got)
	}
	sim.play(t, "ghostfleet-fault-node-down", n)
	if c := condition(n, "Ready"); c == nil || c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" {
		t.Fatalf("Ready after node-down: %+v", c)
	}
	if got := sim.match(t, n, n); got != "" {
		t.Fatalf("a down node plays %q: nothing may bring it back while marked", got)
	}
	delete(n.Labels, FaultLabel(FaultNodeDown))
	if got := sim.match(t, n, n); got != "node-initialize" {
		t.Fatalf("an unmarked down node plays %q, want node-initialize", got)
	}
	sim.play(t, "node-initialize", n)
	if !NodeReady(n) {
		t.Error("not Ready after clear")
	}
}

func runningPod(init bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: NodeName(1), Containers: []corev1.Container{
			{Name: "gpu", Image: "pause"}, {Name: "sidecar", Image: "pause"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if init {
		p.Spec.InitContainers = []corev1.Container{{Name: "preflight", Image: "pause"}, {Name: "burn", Image: "pause"}}
	}
	return p
}

func TestPodExitStage(t *testing.T) {
	sim := newKwokSim(t)
	tests := []struct {
		name      string
		code      string
		container string
		reason    string
		wantPhase corev1.PodPhase
		wantFail  map[string]bool
	}{
		{"every container, NCCL", "3", "", "NCCLTestFailed", corev1.PodFailed, map[string]bool{"gpu": true, "sidecar": true}},
		{"one container", "137", "gpu", "OOMKilled", corev1.PodFailed, map[string]bool{"gpu": true}},
		{"exit 0 succeeds", "0", "", "", corev1.PodSucceeded, map[string]bool{"gpu": true, "sidecar": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := runningPod(false)
			now := time.Now()
			p.Labels[FaultLabel(FaultPodExit)] = FaultActive
			p.Annotations[FaultAnnotation(FaultPodExit, "exit-code")] = tt.code
			p.Annotations[FaultAnnotation(FaultPodExit, "not-before")] = now.Add(time.Minute).Format(time.RFC3339Nano)
			p.Annotations[FaultAnnotation(FaultPodExit, "not-after")] = now.Add(2 * time.Minute).Format(time.RFC3339Nano)
			if tt.container != "" {
				p.Annotations[FaultAnnotation(FaultPodExit, "container")] = tt.container
			}
			if tt.reason != "" {
				p.Annotations[FaultAnnotation(FaultPodExit, "reason")] = tt.reason
			}
			st, err := sim.pods.Match(context.Background(), event(p, p))
			if err != nil || st == nil || st.Name() != "ghostfleet-fault-pod-exit" {
				t.Fatalf("match: %v %v", st, err)
			}
			// kwok takes the delay from the annotations: inside the window.
			for i := 0; i < 50; i++ {
				d, ok, err := st.Delay(context.Background(), event(p, p), now)
				if err != nil || !ok || d < time.Minute || d > 2*time.Minute {
					t.Fatalf("delay %s (ok %v, err %v), want 1m-2m", d, ok, err)
				}
			}
			sim.play(t, "ghostfleet-fault-pod-exit", p)
			if p.Status.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", p.Status.Phase, tt.wantPhase)
			}
			for _, cs := range p.Status.ContainerStatuses {
				term := cs.State.Terminated
				if !tt.wantFail[cs.Name] {
					if term != nil || cs.State.Running == nil {
						t.Errorf("container %s should still run: %+v", cs.Name, cs.State)
					}
					continue
				}
				wantReason := tt.reason
				if wantReason == "" {
					wantReason = "Error"
				}
				if term == nil || term.ExitCode != int32(mustAtoi(t, tt.code)) || term.Reason != wantReason {
					t.Errorf("container %s: %+v, want exit %s reason %s", cs.Name, term, tt.code, wantReason)
				}
			}
			if got := sim.match(t, p, p); got == "ghostfleet-fault-pod-exit" {
				t.Error("the fault fires again on a pod that already failed")
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return int(q.Value())
}

func TestPodInitExitStage(t *testing.T) {
	sim := newKwokSim(t)
	p := runningPod(true)
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = nil
	p.Labels[FaultLabel(FaultPodInitExit)] = FaultActive
	p.Annotations[FaultAnnotation(FaultPodInitExit, "exit-code")] = "1"
	p.Annotations[FaultAnnotation(FaultPodInitExit, "reason")] = "PreflightFailed"
	p.Annotations[FaultAnnotation(FaultPodInitExit, "container")] = "burn"
	// It must beat pod-ready, or the pod would start instead of failing.
	for i := 0; i < 20; i++ {
		if got := sim.match(t, p, p); got != "ghostfleet-fault-pod-init-exit" {
			t.Fatalf("a marked pending pod plays %q", got)
		}
	}
	sim.play(t, "ghostfleet-fault-pod-init-exit", p)
	if p.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s", p.Status.Phase)
	}
	st := p.Status.InitContainerStatuses
	if len(st) != 2 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 ||
		st[1].State.Terminated == nil || st[1].State.Terminated.ExitCode != 1 || st[1].State.Terminated.Reason != "PreflightFailed" {
		t.Errorf("init container statuses %+v", st)
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting == nil || c.State.Waiting.Reason != "PodInitializing" {
			t.Errorf("app container %s started: %+v", c.Name, c.State)
		}
	}
}

func TestClearedPodFaultIsCancelled(t *testing.T) {
	sim := newKwokSim(t)
	p := runningPod(false)
	p.Labels[FaultLabel(FaultPodExit)] = FaultCleared
	p.Annotations[FaultAnnotation(FaultPodExit, "not-before")] = time.Now().Format(time.RFC3339Nano)
	if got := sim.match(t, p, p); got != "ghostfleet-clear-pod-exit" {
		t.Fatalf("a cleared pod plays %q", got)
	}
	sim.play(t, "ghostfleet-clear-pod-exit", p)
	if _, ok := p.Labels[FaultLabel(FaultPodExit)]; ok {
		t.Errorf("marker left: %v", p.Labels)
	}
	if _, ok := p.Annotations[FaultAnnotation(FaultPodExit, "not-before")]; ok {
		t.Errorf("window left: %v", p.Annotations)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s", p.Status.Phase)
	}
	if got := sim.match(t, p, p); got != "" {
		t.Errorf("a running pod without fault plays %q", got)
	}
}
