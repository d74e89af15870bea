package fleet

import (
	"context"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestCheckGPUModel(t *testing.T) {
	for _, m := range GPUModels {
		if err := CheckGPUModel(m); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	err := CheckGPUModel("mig")
	if err == nil || err.Error() != `unknown GPU model "mig": allowed are extended, dra` {
		t.Errorf("unknown model: %v", err)
	}
}

func TestNewResourceSlice(t *testing.T) {
	p, _ := LookupGPUProfile("gb200-nvl72")
	node := asDRANode(NewNode(p, 40))
	node.UID = types.UID("uid-40")
	s := NewResourceSlice(p, node)

	if s.Name != "gf-node-00040-gpu.nvidia.com" || s.Spec.Driver != DRADriver || *s.Spec.NodeName != node.Name {
		t.Errorf("slice %s driver %s node %v", s.Name, s.Spec.Driver, *s.Spec.NodeName)
	}
	if s.Spec.Pool != (resourcev1.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1}) {
		t.Errorf("pool %+v: one pool per node, named after it", s.Spec.Pool)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Node" || s.OwnerReferences[0].UID != "uid-40" {
		t.Errorf("owners %+v: the node must own its slice, for the garbage collector", s.OwnerReferences)
	}
	if len(s.Spec.Devices) != 4 {
		t.Fatalf("%d devices, want one per GPU (4)", len(s.Spec.Devices))
	}
	uuid := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i, d := range s.Spec.Devices {
		a := d.Attributes
		str := func(k resourcev1.QualifiedName) string { return ptr.Deref(a[k].StringValue, "") }
		if d.Name != "gpu-"+string(rune('0'+i)) || *a["index"].IntValue != int64(i) {
			t.Errorf("device %d: name %s index %v", i, d.Name, a["index"].IntValue)
		}
		if str("productName") != "NVIDIA GB200" || str("architecture") != "Blackwell" || str("type") != "gpu" {
			t.Errorf("device %d: product %q architecture %q type %q", i, str("productName"), str("architecture"), str("type"))
		}
		if v := ptr.Deref(a["cudaComputeCapability"].VersionValue, ""); v != "10.0.0" {
			t.Errorf("cudaComputeCapability %q, want a semantic version", v)
		}
		// Node 40 of an NVL72 profile (18 trays a domain) is in domain 2.
		if str("nvlinkDomain") != "nvl-00002" || str("rack") != "rack-0002" {
			t.Errorf("device %d: nvlinkDomain %q rack %q", i, str("nvlinkDomain"), str("rack"))
		}
		if !uuid.MatchString(str("uuid")) || seen[str("uuid")] {
			t.Errorf("device %d: uuid %q not UUID-shaped or repeated", i, str("uuid"))
		}
		seen[str("uuid")] = true
		if m := d.Capacity["memory"].Value; m.Value() != int64(p.GPUMemoryMB)<<20 {
			t.Errorf("memory %s", m.String())
		}
		for k := range a {
			if len(k) > resourcev1.DeviceMaxIDLength || strings.Contains(string(k), "/") {
				t.Errorf("attribute %q: must be a short unqualified name (the driver's domain)", k)
			}
		}
	}
	if len(s.Spec.Devices[0].Attributes) != len(DRAAttributes) {
		t.Errorf("DRAAttributes lists %d attributes, devices have %d", len(DRAAttributes), len(s.Spec.Devices[0].Attributes))
	}
	if _, ok := node.Status.Allocatable[ResourceGPU]; ok || node.Labels[LabelGPUModel] != GPUModelDRA {
		t.Errorf("a DRA node has no %s and says its model: %v %v", ResourceGPU, node.Status.Allocatable, node.Labels)
	}
	if node.Labels["nvidia.com/gpu.count"] != "4" {
		t.Error("a DRA node keeps GPU feature discovery's labels")
	}
}

func TestNewDeviceClass(t *testing.T) {
	c := NewDeviceClass(false)
	if c.Name != DeviceClassGPU || len(c.Spec.Selectors) != 1 ||
		c.Spec.Selectors[0].CEL.Expression != `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"` {
		t.Errorf("class %s selectors %+v", c.Name, c.Spec.Selectors)
	}
	if c.Spec.ExtendedResourceName != nil {
		t.Errorf("a plain class serves %s", *c.Spec.ExtendedResourceName)
	}
	if c := NewDeviceClass(true); ptr.Deref(c.Spec.ExtendedResourceName, "") != ResourceGPU {
		t.Errorf("extended class serves %v, want %s", c.Spec.ExtendedResourceName, ResourceGPU)
	}
}

// A fleet made without --dra-extended-resource gains it on a later scale
// with it, keeps it on one without, and an extended fleet refuses it.
func TestScaleDRAExtendedResource(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	p, _ := LookupGPUProfile("dgx-h100")
	serves := func() bool {
		ok, err := ServesExtendedGPU(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if _, err := Scale(ctx, cs, ScaleOptions{Count: 2, Profile: p, GPUModel: GPUModelDRA, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if serves() {
		t.Fatal("a plain DRA fleet serves nvidia.com/gpu")
	}
	if _, err := Scale(ctx, cs, ScaleOptions{Count: 3, Profile: p, DRAExtendedResource: true, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if !serves() {
		t.Fatal("--dra-extended-resource did not make the class serve nvidia.com/gpu")
	}
	if _, err := Scale(ctx, cs, ScaleOptions{Count: 4, Profile: p, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if !serves() {
		t.Fatal("a later scale took the mapping away")
	}
	other := fake.NewClientset()
	_, err := Scale(ctx, other, ScaleOptions{Count: 1, Profile: p, DRAExtendedResource: true, Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "--gpu-model dra") {
		t.Errorf("an extended fleet with --dra-extended-resource: %v", err)
	}
}

func TestScaleDRA(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	p, _ := LookupGPUProfile("dgx-h100")
	res, err := Scale(ctx, cs, ScaleOptions{Count: 3, Profile: p, GPUModel: GPUModelDRA, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUModel != GPUModelDRA || res.Created != 3 || res.Slices != 3 {
		t.Errorf("result %+v", res)
	}
	if _, err := cs.ResourceV1().DeviceClasses().Get(ctx, DeviceClassGPU, metav1.GetOptions{}); err != nil {
		t.Errorf("DeviceClass: %v", err)
	}
	inv, err := ListDRA(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Devices() != 24 || inv.Products["NVIDIA H100 80GB HBM3"] != 24 {
		t.Errorf("inventory %+v", inv)
	}

	// Growing without --gpu-model keeps the fleet's model; a lost slice
	// is published again.
	if err := cs.ResourceV1().ResourceSlices().Delete(ctx, SliceName(NodeName(1)), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = Scale(ctx, cs, ScaleOptions{Count: 4, Profile: p, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUModel != GPUModelDRA || res.Created != 1 || res.Slices != 2 {
		t.Errorf("grow: %+v, want dra, 1 node created and 2 slices (its own and the lost one)", res)
	}
	n, _ := cs.CoreV1().Nodes().Get(ctx, NodeName(3), metav1.GetOptions{})
	if _, ok := n.Status.Allocatable[ResourceGPU]; ok || n.Labels[LabelGPUModel] != GPUModelDRA {
		t.Errorf("new node of a DRA fleet: %v %v", n.Status.Allocatable, n.Labels)
	}

	// One model per fleet: asking for the other is refused, nothing changes.
	_, err = Scale(ctx, cs, ScaleOptions{Count: 5, Profile: p, GPUModel: GPUModelExtended, Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "offer their GPUs as dra") || !strings.Contains(err.Error(), "nodes 0") {
		t.Errorf("model change: %v", err)
	}
	if list, _ := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); len(list.Items) != 4 {
		t.Errorf("%d nodes after a refused scale, want 4", len(list.Items))
	}
}

func TestScaleExtendedPublishesNoSlices(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	p, _ := LookupGPUProfile("dgx-h100")
	res, err := Scale(ctx, cs, ScaleOptions{Count: 2, Profile: p, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	slices, _ := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if res.GPUModel != GPUModelExtended || len(slices.Items) != 0 {
		t.Errorf("model %s, %d slices", res.GPUModel, len(slices.Items))
	}
}

func TestClaimGPUs(t *testing.T) {
	claim := func(results ...resourcev1.DeviceRequestAllocationResult) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{}
		if results != nil {
			c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: results}}
		}
		return c
	}
	gpu := func(node, dev string) resourcev1.DeviceRequestAllocationResult {
		return resourcev1.DeviceRequestAllocationResult{Request: "gpus", Driver: DRADriver, Pool: node, Device: dev}
	}
	got := ClaimGPUs([]*resourcev1.ResourceClaim{
		claim(gpu("a", "gpu-0"), gpu("a", "gpu-1")),
		claim(gpu("b", "gpu-0")),
		claim(), // not allocated yet
		claim(resourcev1.DeviceRequestAllocationResult{Driver: "nic.example.com", Pool: "a", Device: "nic-0"}),
	})
	if len(got) != 2 || got["a"] != 2 || got["b"] != 1 {
		t.Errorf("ClaimGPUs = %v", got)
	}
	slice := func(node string, n int) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: DRADriver, NodeName: ptr.To(node), Devices: make([]resourcev1.Device, n)}}
	}
	pub := SliceGPUs([]*resourcev1.ResourceSlice{slice("a", 8), slice("b", 4), {Spec: resourcev1.ResourceSliceSpec{Driver: "other", NodeName: ptr.To("a"), Devices: make([]resourcev1.Device, 2)}}})
	if pub["a"] != 8 || pub["b"] != 4 {
		t.Errorf("SliceGPUs = %v", pub)
	}
}

// A pod whose nvidia.com/gpu the scheduler served with devices holds them
// through its claim: PodGPUs must not count them again.
func TestPodGPUsServedByDRA(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{ResourceGPU: resource.MustParse("8")}},
	}}}}
	if g := PodGPUs(p); g != 8 {
		t.Fatalf("before scheduling: %d GPUs, want 8", g)
	}
	p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended-resources-x"}
	if g := PodGPUs(p); g != 0 {
		t.Errorf("served by a claim: %d GPUs, want 0", g)
	}
}
