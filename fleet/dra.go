package fleet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// GPU models: how fake nodes offer their GPUs to the scheduler. A fleet
// has one: a node publishing the same GPUs both ways would let the two
// allocators hand out each GPU twice (real clusters run either NVIDIA's
// device plugin or its DRA driver for a GPU, not both).
const (
	// GPUModelExtended is the extended resource nvidia.com/gpu in the
	// node's allocatable, as NVIDIA's device plugin advertises it.
	GPUModelExtended = "extended"
	// GPUModelDRA is Dynamic Resource Allocation: per node a ResourceSlice
	// of driver gpu.nvidia.com with one device per GPU, and no
	// nvidia.com/gpu resource.
	GPUModelDRA = "dra"

	// LabelGPUModel says which model a GhostFleet node uses (absent on
	// nodes made before models existed: extended).
	LabelGPUModel = "ghostfleet.io/gpu-model"
	// DRADriver is the driver name NVIDIA's DRA driver publishes GPUs
	// under; the fake slices use it so claims written for real fleets fit.
	DRADriver = "gpu.nvidia.com"
	// DeviceClassGPU is the DeviceClass claims name to get a GPU.
	DeviceClassGPU = "gpu.nvidia.com"
	// draDriverVersion and draCUDAVersion are what the fake devices say
	// their driver stack is: NVIDIA's R570 production branch.
	draDriverVersion = "570.124.6"
	draCUDAVersion   = "12.8.0"
)

// GPUModels lists the models, the default first.
var GPUModels = []string{GPUModelExtended, GPUModelDRA}

// CheckGPUModel checks a --gpu-model value.
func CheckGPUModel(m string) error {
	for _, ok := range GPUModels {
		if m == ok {
			return nil
		}
	}
	return fmt.Errorf("unknown GPU model %q: allowed are %s", m, strings.Join(GPUModels, ", "))
}

// CheckDRAExtendedResource refuses --dra-extended-resource on a fleet
// whose GPU model (empty: not yet known) is not dra: only a DeviceClass
// can serve nvidia.com/gpu from devices.
func CheckDRAExtendedResource(extended bool, model string) error {
	if extended && model != "" && model != GPUModelDRA {
		return fmt.Errorf("--dra-extended-resource serves nvidia.com/gpu from DRA devices, and the GPU model is %s: allowed only with --gpu-model %s", model, GPUModelDRA)
	}
	return nil
}

// nodeGPUModel is the model node n was made with.
func nodeGPUModel(n *corev1.Node) string {
	if m := n.Labels[LabelGPUModel]; m != "" {
		return m
	}
	return GPUModelExtended
}

// asDRANode turns a node made by NewNode into one whose GPUs are offered
// through DRA only: no nvidia.com/gpu resource (GPU feature discovery's
// labels stay: they describe the hardware, not how it is allocated).
func asDRANode(n *corev1.Node) *corev1.Node {
	delete(n.Status.Capacity, ResourceGPU)
	delete(n.Status.Allocatable, ResourceGPU)
	n.Labels[LabelGPUModel] = GPUModelDRA
	return n
}

// NewDeviceClass is the class a claim names to get one of the fleet's
// GPUs, as NVIDIA's DRA driver installs it. With extended, the class also
// serves pods that ask for nvidia.com/gpu (its extendedResourceName,
// Kubernetes 1.36's DRAExtendedResource, beta): the scheduler gives each
// such pod a claim for that many devices, and NodeResourcesFit scores
// nvidia.com/gpu from the devices, so a MostAllocated profile packs them.
func NewDeviceClass(extended bool) *resourcev1.DeviceClass {
	c := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClassGPU, Labels: map[string]string{LabelManaged: "true"}},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].type == "gpu"`, DRADriver, DRADriver),
		}}}},
	}
	if extended {
		c.Spec.ExtendedResourceName = ptr.To(ResourceGPU)
	}
	return c
}

// EnsureDeviceClass creates the GPU DeviceClass unless it exists, and
// with extended makes it serve nvidia.com/gpu (NewDeviceClass) if it does
// not yet; it never takes that away, so growing a fleet keeps it. It
// lists first, so that growing a fleet costs no refused create (a 409 in
// the scale's request counts).
func EnsureDeviceClass(ctx context.Context, cs kubernetes.Interface, extended bool) error {
	list, err := cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + DeviceClassGPU})
	if err != nil {
		return fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, c := range list.Items {
		if c.Name != DeviceClassGPU {
			continue
		}
		if !extended || ptr.Deref(c.Spec.ExtendedResourceName, "") == ResourceGPU {
			return nil
		}
		c.Spec.ExtendedResourceName = ptr.To(ResourceGPU)
		if _, err := cs.ResourceV1().DeviceClasses().Update(ctx, &c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("making DeviceClass %s serve %s: %w", DeviceClassGPU, ResourceGPU, err)
		}
		return nil
	}
	_, err = cs.ResourceV1().DeviceClasses().Create(ctx, NewDeviceClass(extended), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating DeviceClass %s: %w", DeviceClassGPU, err)
	}
	return nil
}

// ServesExtendedGPU says whether a DeviceClass serves nvidia.com/gpu
// requests with devices (its extendedResourceName): then pods that ask
// for nvidia.com/gpu can run on a DRA fleet's nodes.
func ServesExtendedGPU(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	list, err := cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, c := range list.Items {
		if ptr.Deref(c.Spec.ExtendedResourceName, "") == ResourceGPU {
			return true, nil
		}
	}
	return false, nil
}

// SliceName is the name of node's ResourceSlice.
func SliceName(node string) string { return node + "-" + DRADriver }

// NewResourceSlice is what NVIDIA's DRA driver would publish for node
// (made by NewNode from profile p): one pool named after the node, one
// device per GPU with the attributes the driver sets (type, uuid, minor,
// index, productName, brand, architecture, cudaComputeCapability,
// driverVersion, cudaDriverVersion, pcieBusID) and its memory, plus
// GhostFleet's topology (nvlinkDomain, cliqueID, rack) for claims that
// want GPUs of one NVLink domain. The slice is owned by the node, so the
// controller-manager's garbage collector removes it with the node, as it
// does a real driver's.
func NewResourceSlice(p GPUProfile, node *corev1.Node) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, p.GPUs)
	for g := range devices {
		devices[g] = resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", g),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type":                  {StringValue: ptr.To("gpu")},
				"uuid":                  {StringValue: ptr.To(gpuUUID(node.Name, g))},
				"minor":                 {IntValue: ptr.To(int64(g))},
				"index":                 {IntValue: ptr.To(int64(g))},
				"productName":           {StringValue: ptr.To(p.DeviceName)},
				"brand":                 {StringValue: ptr.To("Nvidia")},
				"architecture":          {StringValue: ptr.To(capitalize(p.Family))},
				"cudaComputeCapability": {VersionValue: ptr.To(semver(p.ComputeCapability))},
				"driverVersion":         {VersionValue: ptr.To(draDriverVersion)},
				"cudaDriverVersion":     {VersionValue: ptr.To(draCUDAVersion)},
				"pcieBusID":             {StringValue: ptr.To(fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*g))},
				"nvlinkDomain":          {StringValue: ptr.To(node.Labels[LabelNVLink])},
				"cliqueID":              {StringValue: ptr.To(node.Labels[LabelNVLink] + ".0")},
				"rack":                  {StringValue: ptr.To(node.Labels[LabelRack])},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(int64(p.GPUMemoryMB)<<20, resource.BinarySI)},
			},
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   SliceName(node.Name),
			Labels: map[string]string{LabelManaged: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   DRADriver,
			NodeName: ptr.To(node.Name),
			Pool:     resourcev1.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// gpuUUID is a stable, UUID-shaped id for GPU g of node, as nvidia-smi
// prints them ("GPU-" and 36 characters).
func gpuUUID(node string, g int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", node, g))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// semver makes "9.0" the "9.0.0" a version attribute must be.
func semver(v string) string {
	if strings.Count(v, ".") == 1 {
		return v + ".0"
	}
	return v
}

// SliceGPUs counts the GPU devices slices publish, by node.
func SliceGPUs(slices []*resourcev1.ResourceSlice) map[string]int64 {
	out := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver != DRADriver || s.Spec.NodeName == nil {
			continue
		}
		out[*s.Spec.NodeName] += int64(len(s.Spec.Devices))
	}
	return out
}

// ClaimGPUs counts the GPU devices allocated to claims, by node. A GPU's
// pool is named after its node (NewResourceSlice), so the allocation
// result names the node without a lookup.
func ClaimGPUs(claims []*resourcev1.ResourceClaim) map[string]int64 {
	out := map[string]int64{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == DRADriver {
				out[r.Pool]++
			}
		}
	}
	return out
}

// DRAInventory is what the fleet's GPUs offered through DRA are: devices
// published and allocated by node, and devices by productName.
type DRAInventory struct {
	Published map[string]int64
	Allocated map[string]int64
	Products  map[string]int64
}

// Devices is how many GPU devices are published in all.
func (d DRAInventory) Devices() int64 {
	var n int64
	for _, v := range d.Published {
		n += v
	}
	return n
}

// ListDRA lists the fleet's ResourceSlices and ResourceClaims and counts
// GPU devices. A cluster that does not serve resource.k8s.io/v1 has none,
// and so, as far as GhostFleet can tell, does one whose RBAC does not let
// it list them (an attached cluster): loads that ask for no claim go on.
func ListDRA(ctx context.Context, cs kubernetes.Interface) (DRAInventory, error) {
	inv := DRAInventory{Published: map[string]int64{}, Allocated: map[string]int64{}, Products: map[string]int64{}}
	slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorDriver + "=" + DRADriver})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return inv, nil
	}
	if err != nil {
		return inv, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	claims, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return inv, nil
	}
	if err != nil {
		return inv, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	inv.Published, inv.Allocated = SliceGPUs(ptrsOf(slices.Items)), ClaimGPUs(ptrsOf(claims.Items))
	for _, s := range slices.Items {
		if s.Spec.Driver != DRADriver {
			continue
		}
		for _, d := range s.Spec.Devices {
			if a, ok := d.Attributes["productName"]; ok && a.StringValue != nil {
				inv.Products[*a.StringValue]++
			}
		}
	}
	return inv, nil
}

// DRAAttributes are the attributes each fake GPU device has, for claims
// that match on one.
var DRAAttributes = []string{"architecture", "brand", "cliqueID", "cudaComputeCapability", "cudaDriverVersion",
	"driverVersion", "index", "minor", "nvlinkDomain", "pcieBusID", "productName", "rack", "type", "uuid"}

func ptrsOf[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// missingSlices are those of nodes that have no ResourceSlice yet: a
// scale interrupted between a node and its slice is finished by the next.
func missingSlices(ctx context.Context, cs kubernetes.Interface, nodes []*corev1.Node) ([]*corev1.Node, error) {
	have := map[string]bool{}
	list, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorDriver + "=" + DRADriver})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	for _, s := range list.Items {
		if s.Spec.NodeName != nil {
			have[*s.Spec.NodeName] = true
		}
	}
	var missing []*corev1.Node
	for _, n := range nodes {
		if !have[n.Name] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
