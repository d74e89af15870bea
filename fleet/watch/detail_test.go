package watch

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// faultedNode is fleet.NewNode's node after gpu-xid's stage played on it:
// the marker label, GpuXidProblem with the Xid, one GPU less allocatable
// and the health taint.
func faultedNode() *corev1.Node {
	n := fleet.NewNode(fleet.GPUProfiles[0], 12)
	n.Labels[fleet.FaultLabel(fleet.FaultGPUXid)] = fleet.FaultActive
	n.Status.Allocatable[fleet.ResourceGPU] = resource.MustParse("7")
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		{Type: "GpuXidProblem", Status: corev1.ConditionTrue, Reason: "Xid79", Message: "Xid 79: GPU has fallen off the bus"},
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: fleet.TaintGPUHealth, Value: fleet.TaintGPUHealthValue, Effect: corev1.TaintEffectNoSchedule})
	return n
}

func TestInspectorNode(t *testing.T) {
	n := faultedNode()
	failed := gpuPod("nccl-test", n.Name, 2, corev1.PodFailed)
	failed.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "NCCL test failed"}}},
		{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
	}
	cs := fake.NewClientset(n, fleet.NewNode(fleet.GPUProfiles[0], 13),
		gpuPod("a-running", n.Name, 4, corev1.PodRunning), failed,
		gpuPod("elsewhere", fleet.NodeName(13), 8, corev1.PodRunning))

	d, err := NewInspector(cs).Node(context.Background(), n.Name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != n.Name || !d.Ready || d.GPUCapacity != 8 || d.GPUAlloc != 7 || d.GPUUsed != 4 {
		t.Errorf("node %s ready %v GPUs %d/%d/%d, want ready, 4 used of 7 allocatable of 8", d.Name, d.Ready, d.GPUUsed, d.GPUAlloc, d.GPUCapacity)
	}
	if c := d.Conditions[0]; c.Type != "GpuXidProblem" || !c.Abnormal || c.Reason != "Xid79" || c.Message != "Xid 79: GPU has fallen off the bus" {
		t.Errorf("first condition %+v, want GpuXidProblem abnormal with its Xid", c)
	}
	for _, c := range d.Conditions[1:] {
		if c.Abnormal {
			t.Errorf("condition %s %s marked abnormal", c.Type, c.Status)
		}
	}
	want := map[string]string{"gpu.product": fleet.GPUProfiles[0].Product, "rack": "rack-0003", "nvlink": n.Labels[fleet.LabelNVLink], fleet.FaultLabel(fleet.FaultGPUXid): "true"}
	got := map[string]string{}
	for _, l := range d.Labels {
		got[l.Key] = l.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], v, d.Labels)
		}
	}
	if len(d.Taints) != 2 || d.Taints[1] != "nvidia.com/gpu-health=unhealthy:NoSchedule" {
		t.Errorf("taints %v", d.Taints)
	}
	if len(d.Pods) != 2 {
		t.Fatalf("pods %+v, want the node's two only", d.Pods)
	}
	p := d.Pods[0] // failed first
	if p.Name != "nccl-test" || p.Phase != "Failed" || len(p.Exits) != 1 || p.Exits[0].ExitCode != 3 || p.Exits[0].Container != "main" {
		t.Errorf("first pod %+v, want the failed one with main's exit 3 only", p)
	}
}

func TestInspectorNodeMissing(t *testing.T) {
	_, err := NewInspector(fake.NewClientset()).Node(context.Background(), "gf-node-99999")
	if err == nil || err.Error() != `node gf-node-99999: nodes "gf-node-99999" not found` {
		t.Errorf("error %v", err)
	}
}

func TestInspectorNodes(t *testing.T) {
	a, b := faultedNode(), fleet.NewNode(fleet.GPUProfiles[0], 40)
	cs := fake.NewClientset(a, b, gpuPod("ok", a.Name, 1, corev1.PodRunning), gpuPod("bad", b.Name, 1, corev1.PodFailed))
	in := NewInspector(cs)
	tests := []struct {
		name string
		q    NodeQuery
		want []string
	}{
		{"rack", NodeQuery{LabelKey: fleet.LabelRack, LabelValue: "rack-0010"}, []string{b.Name}},
		{"product", NodeQuery{LabelKey: "nvidia.com/gpu.product", LabelValue: fleet.GPUProfiles[0].Product}, []string{a.Name, b.Name}},
		{"none", NodeQuery{LabelKey: "nvidia.com/gpu.product", LabelValue: "nope"}, nil},
		{"failed pods", NodeQuery{PodPhase: corev1.PodFailed}, []string{b.Name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := in.Nodes(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for _, n := range tt.want {
				if !got[n] {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
	if _, err := in.Nodes(context.Background(), NodeQuery{LabelKey: "rack", LabelValue: "a b"}); err == nil {
		t.Error("a value with a space selects nothing silently; want an error")
	}
}
