package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// GPUs offered and held through DRA count on the map and in the totals
// like nvidia.com/gpu: a DRA node has no extended resource, its pods
// request none, and its slices and claims say what it has and holds.
func TestBuildCountsDRADevices(t *testing.T) {
	dra := func(name string) *corev1.Node {
		n := node(name, "rack-0000", corev1.ConditionTrue)
		n.Status.Allocatable = nil
		return n
	}
	nodes := []*corev1.Node{dra("gf-node-00000"), dra("gf-node-00001")}
	claimPod := gpuPod("p", "gf-node-00000", 0, corev1.PodRunning)
	claimPod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}
	d := Devices{
		Published: map[string]int64{"gf-node-00000": 8, "gf-node-00001": 8, "gone": 8},
		Allocated: map[string]int64{"gf-node-00000": 3, "gone": 2},
	}
	v := BuildWith(nodes, []*corev1.Pod{claimPod}, d, epoch)
	if v.GPUs != 16 || v.GPUsUsed != 3 || v.Running != 1 {
		t.Errorf("totals: %d/%d GPUs, %d running; want 3/16, 1", v.GPUsUsed, v.GPUs, v.Running)
	}
	if v.Nodes[0].GPUs != 8 || v.Nodes[0].Used != 3 || v.Nodes[1].Used != 0 {
		t.Errorf("cells: %+v", v.Nodes)
	}
	if w := Build(nodes, nil, epoch); w.GPUs != 0 {
		t.Errorf("without devices: %d GPUs", w.GPUs)
	}
}

func TestSlimDRA(t *testing.T) {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: resourcev1.ResourceSliceSpec{Driver: fleet.DRADriver, NodeName: ptr.To("n"), Devices: []resourcev1.Device{
			{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"productName": {StringValue: ptr.To("x")}}}, {Name: "gpu-1"},
		}},
	}
	got, _ := slim(s)
	ss := got.(*resourcev1.ResourceSlice)
	if ss.ManagedFields != nil || ss.Spec.Devices[0].Attributes != nil || fleet.SliceGPUs([]*resourcev1.ResourceSlice{ss})["n"] != 2 {
		t.Errorf("slim slice: %+v", ss)
	}
	c := &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{
		Allocation:  &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Driver: fleet.DRADriver, Pool: "n", Device: "gpu-0"}}}},
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p"}},
	}}
	got, _ = slim(c)
	sc := got.(*resourcev1.ResourceClaim)
	if sc.Status.ReservedFor != nil || fleet.ClaimGPUs([]*resourcev1.ResourceClaim{sc})["n"] != 1 {
		t.Errorf("slim claim: %+v", sc)
	}
}
