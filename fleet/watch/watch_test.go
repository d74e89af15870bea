package watch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// node is an 8-GPU node in rack rack, Ready unless told otherwise.
func node(name, rack string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.LabelRack: rack}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{fleet.ResourceGPU: resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		},
	}
}

func gpuPod(name, node string, gpus int, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gf-load"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fleet.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// sample is n nodes in racks of 4, node i using i%9 GPUs, the 3rd
// NotReady and the 7th faulted, plus a pending and a finished pod.
func sample(n int) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range n {
		nd := node(fmt.Sprintf("gf-node-%05d", i), fmt.Sprintf("rack-%04d", i/4), corev1.ConditionTrue)
		if i == 2 {
			nd.Status.Conditions[0].Status = corev1.ConditionUnknown
		}
		if i == 6 {
			nd.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu-health", Effect: corev1.TaintEffectNoSchedule}}
		}
		nodes = append(nodes, nd)
		if g := i % 9; g > 0 {
			pods = append(pods, gpuPod(fmt.Sprintf("p-%d", i), nd.Name, g, corev1.PodRunning))
		}
	}
	pods = append(pods, gpuPod("waiting", "", 8, corev1.PodPending), gpuPod("done", nodes[1].Name, 1, corev1.PodSucceeded))
	return nodes, pods
}

func TestBuild(t *testing.T) {
	nodes, pods := sample(12)
	v := Build(nodes, pods, epoch)
	if v.GPUs != 96 || v.NotReady != 1 || v.Faulted != 1 || v.Ready != 11 {
		t.Errorf("counts: %+v", v)
	}
	// Node i uses i%9 GPUs; the succeeded pod holds none.
	var used int64
	for i := range 12 {
		used += int64(i % 9)
	}
	if v.GPUsUsed != used || v.Running != 10 || v.Pending != 1 || v.Unscheduled != 1 || v.Succeeded != 1 {
		t.Errorf("allocation: used %d (want %d) %+v", v.GPUsUsed, used, v)
	}
	if !v.Racked || v.RackSize != 4 {
		t.Errorf("racks: %v %d", v.Racked, v.RackSize)
	}
}

func TestSlimKeepsWhatTheViewReads(t *testing.T) {
	p := gpuPod("a", "n1", 2, corev1.PodRunning)
	p.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	got, err := slim(p)
	if err != nil {
		t.Fatal(err)
	}
	sp := got.(*corev1.Pod)
	if sp.Annotations != nil || sp.Spec.Containers[0].Env != nil || fleet.PodGPUs(sp) != 2 || sp.Spec.NodeName != "n1" || sp.Status.Phase != corev1.PodRunning {
		t.Errorf("slim pod: %+v", sp)
	}
}

// Fleet sends the listed fleet at once, then a new view after a change,
// and closes its channel when the context ends.
func TestFleetSendsViewsOfTheInformers(t *testing.T) {
	nodes, pods := sample(4)
	cs := fake.NewClientset()
	ctx := context.Background()
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	views, err := Fleet(ctx, cs, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	next := func() FleetView {
		t.Helper()
		select {
		case v, ok := <-views:
			if !ok {
				t.Fatal("channel closed")
			}
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("no view")
		}
		return FleetView{}
	}
	first := next()
	if len(first.Nodes) != 4 || first.GPUsUsed != 6 || first.Running != 3 {
		t.Fatalf("first view: %d nodes, %d GPUs used, %d running", len(first.Nodes), first.GPUsUsed, first.Running)
	}
	if _, err := cs.CoreV1().Pods("gf-load").Create(ctx, gpuPod("more", nodes[0].Name, 8, corev1.PodRunning), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for v := next(); v.GPUsUsed != 14; v = next() {
		select {
		case <-deadline:
			t.Fatalf("GPUs used %d after a new pod, want 14", v.GPUsUsed)
		default:
		}
	}
	// A node change rebuilds the nodes' part, which a pods-only change
	// reused; either way the pods' GPUs stay on their nodes.
	cordoned := nodes[1].DeepCopy()
	cordoned.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Update(ctx, cordoned, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cell := func(v FleetView, name string) NodeCell {
		for _, c := range v.Nodes {
			if c.Name == name {
				return c
			}
		}
		return NodeCell{}
	}
	for v := next(); !cell(v, cordoned.Name).Cordoned; v = next() {
		select {
		case <-deadline:
			t.Fatalf("node %s not cordoned in the view", cordoned.Name)
		default:
		}
		if v.GPUsUsed != 14 || cell(v, nodes[0].Name).Used != cell(first, nodes[0].Name).Used+8 {
			t.Fatalf("after the node change: %d GPUs used, %d on %s", v.GPUsUsed, cell(v, nodes[0].Name).Used, nodes[0].Name)
		}
	}
	var used int64
	for _, c := range first.Nodes {
		used += c.Used
	}
	if used != 6 {
		t.Errorf("a later view changed the first view's cells: %d GPUs used in them, want 6", used)
	}
	cancel()
	for range views { // drains, then ends: the channel closes
	}
}

func BenchmarkBuild(b *testing.B) {
	nodes := make([]*corev1.Node, 1000)
	pods := make([]*corev1.Pod, 0, 8000)
	for i := range nodes {
		nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{fleet.ResourceGPU: resource.MustParse("8")}}}
		for range 8 {
			pods = append(pods, gpuPod("p", nodes[i].Name, 1, corev1.PodRunning))
		}
	}
	b.Run("1000-nodes-8000-pods", func(b *testing.B) {
		for b.Loop() {
			_ = Build(nodes, pods, epoch)
		}
	})
}

// An update that changes only what the caches do not keep (kwok renewing
// a node's heartbeat) leaves the view as it is; one that changes a
// condition, a taint or a pod's phase marks it.
func TestSameForViewIgnoresHeartbeats(t *testing.T) {
	n := node("n", "r", corev1.ConditionTrue)
	beat := n.DeepCopy()
	beat.ResourceVersion = "2"
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(epoch)
	down := n.DeepCopy()
	down.Status.Conditions[0].Status = corev1.ConditionFalse
	tainted := n.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu-xid", Effect: corev1.TaintEffectNoSchedule}}
	p := gpuPod("p", "n", 1, corev1.PodPending)
	running := gpuPod("p", "n", 1, corev1.PodRunning)
	running.ResourceVersion = "3"
	slimmed := func(o any) any {
		s, err := slim(o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		old, cur any
		same     bool
	}{
		{"heartbeat", n, beat, true},
		{"not ready", n, down, false},
		{"tainted", n, tainted, false},
		{"pod running", p, running, false},
		{"pod resent", p, p.DeepCopy(), true},
		{"kinds differ", n, p, false},
	} {
		if got := sameForView(slimmed(tc.old), slimmed(tc.cur)); got != tc.same {
			t.Errorf("%s: same %v, want %v", tc.name, got, tc.same)
		}
	}
}
