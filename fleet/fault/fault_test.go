package fault

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	kwokfake "sigs.k8s.io/kwok/pkg/client/clientset/versioned/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
)

func fleetNodes(n int) []runtime.Object {
	p, _ := fleet.LookupGPUProfile(fleet.DefaultGPUProfile)
	var out []runtime.Object
	for i := 0; i < n; i++ {
		node := fleet.NewNode(p, i)
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		out = append(out, node)
	}
	return out
}

// A real node that happens to carry GhostFleet's label must never be
// chosen: it is not kwok's.
func realNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a-real-node", Labels: map[string]string{fleet.LabelManaged: "true"}}}
}

func clients(objs ...runtime.Object) Clients {
	return Clients{Kube: fake.NewClientset(objs...), Kwok: kwokfake.NewSimpleClientset()}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "disk-fire", Nodes: 1}, `unknown fault "disk-fire": allowed are gpu-xid, nvlink, rdma, node-down, pod-exit`},
		{Spec{Kind: GPUXid}, "--nodes 0 is out of range"},
		{Spec{Kind: GPUXid, Nodes: 1, Xid: 7}, "--xid 7 is not a known Xid: allowed are 13, 31"},
		{Spec{Kind: NVLink, Nodes: 1, Xid: 79}, "--xid applies to gpu-xid only"},
		{Spec{Kind: PodExit, ExitCode: 256, Namespace: "a"}, "--exit-code 256 is out of range: allowed are 0-255"},
		{Spec{Kind: PodExit, ExitCode: -1, Namespace: "a"}, "--exit-code -1 is out of range"},
		{Spec{Kind: PodExit, ExitCode: 3, Delay: -time.Second, Namespace: "a"}, "--delay -1s is out of range: it must be 0 or more"},
		{Spec{Kind: PodExit, ExitCode: 3, Jitter: -time.Second, Namespace: "a"}, "--jitter -1s is out of range"},
		{Spec{Kind: PodExit, ExitCode: 3}, "pod-exit needs --namespace or --selector"},
		{Spec{Kind: PodExit, ExitCode: 3, Selector: "a in (b"}, `--selector "a in (b" is not a label selector`},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "a", Reason: "two words"}, `--reason "two words" is not allowed`},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "a", Nodes: 2}, "--nodes, --seed, --xid and --fail-pods apply to node faults"},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "a", FailPods: true}, "--nodes, --seed, --xid and --fail-pods apply to node faults"},
		{Spec{Kind: NodeDown, Nodes: 1, FailPods: true}, "--fail-pods does not apply to node-down"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := tt.spec.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	ok := Spec{Kind: GPUXid, Nodes: 1}
	if err := ok.Validate(); err != nil || ok.Xid != DefaultXid {
		t.Errorf("gpu-xid without --xid: %v, xid %d", err, ok.Xid)
	}
}

func TestSelectNodes(t *testing.T) {
	var nodes []corev1.Node
	for _, o := range fleetNodes(10) {
		nodes = append(nodes, *o.(*corev1.Node))
	}
	nodes[0].Labels[fleet.FaultLabel("gpu-xid")] = fleet.FaultActive
	nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse

	first, err := SelectNodes(nodes, Spec{Kind: GPUXid, Nodes: 3})
	if err != nil || strings.Join(first, ",") != "gf-node-00001,gf-node-00002,gf-node-00003" {
		t.Errorf("first 3 without the fault: %v %v", first, err)
	}
	down, _ := SelectNodes(nodes, Spec{Kind: NodeDown, Nodes: 2})
	if strings.Join(down, ",") != "gf-node-00000,gf-node-00002" {
		t.Errorf("node-down picks Ready nodes only: %v", down)
	}
	a, _ := SelectNodes(nodes, Spec{Kind: NVLink, Nodes: 4, Random: true, Seed: 7})
	b, _ := SelectNodes(nodes, Spec{Kind: NVLink, Nodes: 4, Random: true, Seed: 7})
	c, _ := SelectNodes(nodes, Spec{Kind: NVLink, Nodes: 4, Random: true, Seed: 8})
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("seed 7 twice: %v, %v; seed 8: %v", a, b, c)
	}
	if _, err := SelectNodes(nodes, Spec{Kind: GPUXid, Nodes: 10}); err == nil ||
		!strings.Contains(err.Error(), "--nodes 10 is more than the 9 GhostFleet GPU nodes that could take a gpu-xid fault (10 nodes in all): allowed are 1-9") {
		t.Errorf("too many: %v", err)
	}
}

func TestApplyGPUFaultMarksAndTaintsExactlyTheChosenNodes(t *testing.T) {
	c := clients(append(fleetNodes(6), realNode())...)
	ctx := context.Background()
	rec, err := Apply(ctx, c, Spec{Kind: GPUXid, Nodes: 6, Xid: 48})
	if err != nil {
		t.Fatal(err)
	}
	res := rec.Result.(Result)
	if rec.Kind != "fault" || len(res.Nodes) != 6 || rec.Outcome != "completed" {
		t.Fatalf("record %+v", rec)
	}
	nodes, _ := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		marked := n.Labels[fleet.FaultLabel("gpu-xid")] == fleet.FaultActive
		tainted := hasGPUHealthTaint(&n)
		want := n.Name != "a-real-node"
		if marked != want || tainted != want {
			t.Errorf("node %s: marked %v, tainted %v, want %v", n.Name, marked, tainted, want)
		}
		if want && (n.Annotations[fleet.FaultAnnotation("gpu-xid", "reason")] != "Xid48" || n.Annotations[fleet.FaultAnnotation("gpu-xid", "extra")] != "true") {
			t.Errorf("node %s annotations %v", n.Name, n.Annotations)
		}
	}
	stages, _ := c.Kwok.KwokV1alpha1().Stages().List(ctx, metav1.ListOptions{})
	if len(stages.Items) == 0 {
		t.Error("the fault stages were not installed")
	}

	// A second GPU fault on a node keeps the taint until both are cleared.
	if _, err := Apply(ctx, c, Spec{Kind: NVLink, Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	rec, err = Clear(ctx, c, GPUXid)
	if err != nil || rec.Result.(Result).Cleared[GPUXid] != 6 {
		t.Fatalf("clear: %v %+v", err, rec.Result)
	}
	n0, _ := c.Kube.CoreV1().Nodes().Get(ctx, fleet.NodeName(0), metav1.GetOptions{})
	n1, _ := c.Kube.CoreV1().Nodes().Get(ctx, fleet.NodeName(1), metav1.GetOptions{})
	if !hasGPUHealthTaint(n0) || hasGPUHealthTaint(n1) {
		t.Errorf("taints after clearing gpu-xid: node 0 (nvlink left) %v, node 1 %v", n0.Spec.Taints, n1.Spec.Taints)
	}
	if _, ok := n1.Labels[fleet.FaultLabel("gpu-xid")]; ok || len(n1.Annotations) != len(fleetNodes(1)[0].(*corev1.Node).Annotations) {
		t.Errorf("node 1 keeps fault metadata: %v %v", n1.Labels, n1.Annotations)
	}
	if !slices.ContainsFunc(n1.Spec.Taints, func(t corev1.Taint) bool { return t.Key == fleet.TaintFake }) {
		t.Error("clear removed kwok's own taint")
	}
}

// --fail-pods ends the workers on the faulted nodes, and only them: not
// their DaemonSet pods, not the pods of other nodes.
func TestApplyFailPodsEndsTheWorkersOnTheFaultedNodes(t *testing.T) {
	ctx := context.Background()
	objs := fleetNodes(3)
	pod := func(name string, node int, owner string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gf-train"},
			Spec:   corev1.PodSpec{NodeName: fleet.NodeName(node), Containers: []corev1.Container{{Name: "gpu"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x", APIVersion: "apps/v1"}}
		}
		return p
	}
	objs = append(objs, pod("w0", 0, "Job"), pod("agent0", 0, "DaemonSet"), pod("w1", 1, ""), pod("w2", 2, "Job"))
	c := clients(objs...)
	rec, err := Apply(ctx, c, Spec{Kind: GPUXid, Nodes: 2, FailPods: true})
	if err != nil {
		t.Fatal(err)
	}
	if res := rec.Result.(Result); res.Pods != 2 || len(res.Nodes) != 2 || rec.Params.(nodeParams).FailPods != true {
		t.Fatalf("result %+v, params %+v", res, rec.Params)
	}
	for name, want := range map[string]bool{"w0": true, "agent0": false, "w1": true, "w2": false} {
		p, _ := c.Kube.CoreV1().Pods("gf-train").Get(ctx, name, metav1.GetOptions{})
		marked := p.Labels[fleet.FaultLabel(fleet.FaultPodExit)] == fleet.FaultActive
		if marked != want {
			t.Errorf("pod %s marked %v, want %v", name, marked, want)
		}
		if marked && (p.Annotations[fleet.FaultAnnotation(fleet.FaultPodExit, "exit-code")] != "1" ||
			p.Annotations[fleet.FaultAnnotation(fleet.FaultPodExit, "message")] != "Xid 79: GPU has fallen off the bus") {
			t.Errorf("pod %s annotations %v", name, p.Annotations)
		}
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "gf-load", Labels: map[string]string{"app": "x"}},
		Spec:   corev1.PodSpec{NodeName: fleet.NodeName(0), Containers: []corev1.Container{{Name: "gpu"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: GPUXid, Nodes: 4}, "--nodes 4 is more than the 3 GhostFleet GPU nodes"},
		{Spec{Kind: PodExit, ExitCode: 3, Selector: "app=nothing"}, `no pods matching "app=nothing" are running or pending`},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "elsewhere"}, "no pods in namespace elsewhere"},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "gf-load", Init: true}, "--init: 1 of the 1 pods in namespace gf-load have no init container"},
		{Spec{Kind: PodExit, ExitCode: 3, Namespace: "gf-load", Container: "nccl"}, `--container "nccl": 1 of the 1 pods in namespace gf-load have no container of that name`},
		{Spec{Kind: PodExit, ExitCode: 300, Namespace: "gf-load"}, "--exit-code 300 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			c := clients(append(fleetNodes(3), pod.DeepCopy())...)
			rec, err := Apply(ctx, c, tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if rec.Kind != "" {
				t.Errorf("a refused fault left a record: %+v", rec)
			}
			for _, a := range c.Kube.(*fake.Clientset).Actions() {
				if a.GetVerb() != "list" && a.GetVerb() != "get" {
					t.Errorf("refused, yet %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			if n := len(c.Kwok.(*kwokfake.Clientset).Actions()); n != 0 {
				t.Errorf("refused, yet %d stage requests", n)
			}
		})
	}
}

func TestApplyPodExitMarksPodsWithTheWindow(t *testing.T) {
	ctx := context.Background()
	var objs []runtime.Object
	objs = append(objs, fleetNodes(2)...)
	for i, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded} {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i)), Namespace: "gf-load"},
			Spec: corev1.PodSpec{NodeName: fleet.NodeName(0), Containers: []corev1.Container{{Name: "gpu"}},
				InitContainers: []corev1.Container{{Name: "preflight"}}},
			Status: corev1.PodStatus{Phase: phase},
		})
	}
	c := clients(objs...)
	before := time.Now()
	rec, err := Apply(ctx, c, Spec{Kind: PodExit, ExitCode: 3, Reason: "NCCLTestFailed", Delay: time.Minute, Jitter: 30 * time.Second, Namespace: "gf-load", Init: true})
	if err != nil {
		t.Fatal(err)
	}
	res := rec.Result.(Result)
	if res.Pods != 2 || res.NotBefore.Sub(before) < time.Minute || res.NotAfter.Sub(*res.NotBefore) != 30*time.Second || !rec.Ended.Equal(*res.NotAfter) {
		t.Fatalf("result %+v, record %s…%s", res, rec.Started, rec.Ended)
	}
	for _, name := range []string{"a", "b", "c"} {
		p, _ := c.Kube.CoreV1().Pods("gf-load").Get(ctx, name, metav1.GetOptions{})
		marked := p.Labels[fleet.FaultLabel(fleet.FaultPodInitExit)] == fleet.FaultActive
		if marked != (name != "c") {
			t.Errorf("pod %s (%s) marked %v", name, p.Status.Phase, marked)
		}
		if marked {
			nb, err := time.Parse(time.RFC3339Nano, p.Annotations[fleet.FaultAnnotation(fleet.FaultPodInitExit, "not-before")])
			if err != nil || !nb.Equal(*res.NotBefore) || p.Annotations[fleet.FaultAnnotation(fleet.FaultPodInitExit, "exit-code")] != "3" {
				t.Errorf("pod %s annotations %v", name, p.Annotations)
			}
		}
	}
	rec, err = Clear(ctx, c, PodExit)
	if err != nil || rec.Result.(Result).Cleared[PodExit] != 2 {
		t.Fatalf("clear: %v %+v", err, rec.Result)
	}
	p, _ := c.Kube.CoreV1().Pods("gf-load").Get(ctx, "a", metav1.GetOptions{})
	if p.Labels[fleet.FaultLabel(fleet.FaultPodInitExit)] != fleet.FaultCleared {
		t.Errorf("cleared pod's marker %v", p.Labels)
	}
}

func TestClearRejectsUnknownKinds(t *testing.T) {
	if _, err := Clear(context.Background(), clients(), "meteor"); err == nil || !strings.Contains(err.Error(), `unknown fault "meteor"`) {
		t.Errorf("error %v", err)
	}
}

func TestActiveListsWhatHolds(t *testing.T) {
	ctx := context.Background()
	c := clients(fleetNodes(4)...)
	if cur, err := Active(ctx, c); err != nil || len(cur) != 0 {
		t.Fatalf("a clean fleet: %v %v", cur, err)
	}
	if _, err := Apply(ctx, c, Spec{Kind: RDMA, Nodes: 2, Random: true, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cur, err := Active(ctx, c)
	if err != nil || len(cur) != 1 || cur[0].Kind != RDMA || len(cur[0].Nodes) != 2 {
		t.Fatalf("after rdma on 2 nodes: %+v %v", cur, err)
	}
	if _, err := Clear(ctx, c); err != nil {
		t.Fatal(err)
	}
	if cur, _ := Active(ctx, c); len(cur) != 0 {
		t.Errorf("after clear: %+v", cur)
	}
}
