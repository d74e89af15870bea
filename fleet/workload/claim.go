package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// Claim modes: how a workload's pods ask for their G GPUs. Every mode but
// none gives the workload one ResourceClaimTemplate, from which the
// controller-manager makes each pod its own ResourceClaim.
const (
	ClaimNone    = "none"    // the extended resource nvidia.com/gpu
	ClaimCount   = "count"   // exactly G GPUs of class gpu.nvidia.com
	ClaimProduct = "product" // product=NAME: G GPUs whose productName is NAME
	ClaimMatch   = "match"   // match=ATTR: G GPUs that share attribute ATTR
	ClaimNVLink  = "nvlink"  // G GPUs of one NVLink domain (match=nvlinkDomain)
)

// ClaimModes lists the modes as --claim takes them.
var ClaimModes = []string{ClaimNone, ClaimCount, ClaimProduct + "=NAME", ClaimMatch + "=ATTR", ClaimNVLink}

// claimRequest is the one request in every template: the pod's GPUs.
const claimRequest = "gpus"

// Claim is a parsed --claim: a mode and its value (a product name, an
// attribute).
type Claim struct {
	Mode  string
	Value string
}

// ParseClaim reads a --claim value; "" is none. A product may be given as
// GPU feature discovery labels it (NVIDIA-H100-80GB-HBM3) or as NVML names
// it (NVIDIA H100 80GB HBM3, what devices publish).
func ParseClaim(s string) (Claim, error) {
	mode, value, hasValue := strings.Cut(strings.TrimSpace(s), "=")
	bad := func(why string) (Claim, error) {
		return Claim{}, fmt.Errorf("--claim %q %s: allowed are %s", s, why, strings.Join(ClaimModes, ", "))
	}
	switch mode {
	case "", ClaimNone, ClaimCount, ClaimNVLink:
		if hasValue {
			return bad("takes no value")
		}
		if mode == "" {
			mode = ClaimNone
		}
		return Claim{Mode: mode}, nil
	case ClaimProduct:
		if value == "" {
			return bad("needs a product name (product=NVIDIA-H100-80GB-HBM3)")
		}
		for _, p := range fleet.GPUProfiles {
			if value == p.Product {
				value = p.DeviceName
			}
		}
		return Claim{Mode: mode, Value: value}, nil
	case ClaimMatch:
		if !slices.Contains(fleet.DRAAttributes, value) {
			return Claim{}, fmt.Errorf("--claim %q: the devices have no attribute %q: allowed are %s", s, value, strings.Join(fleet.DRAAttributes, ", "))
		}
		return Claim{Mode: mode, Value: value}, nil
	}
	return bad("is not a claim mode")
}

// String is the claim as --claim takes it.
func (c Claim) String() string {
	if c.Value != "" {
		return c.Mode + "=" + c.Value
	}
	if c.Mode == "" {
		return ClaimNone
	}
	return c.Mode
}

// DRA says whether the claim asks for devices (anything but none).
func (c Claim) DRA() bool { return c.Mode != "" && c.Mode != ClaimNone }

// Template is the ResourceClaimTemplate a workload's pods share: one
// request for exactly gpus devices of class gpu.nvidia.com, narrowed by a
// CEL selector (product) or a matchAttribute constraint (match, nvlink).
func (c Claim) Template(name string, gpus int, labels map[string]string) *resourcev1.ResourceClaimTemplate {
	req := resourcev1.ExactDeviceRequest{
		DeviceClassName: fleet.DeviceClassGPU,
		AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
		Count:           int64(gpus),
	}
	var constraints []resourcev1.DeviceConstraint
	switch c.Mode {
	case ClaimProduct:
		req.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes[%q].productName == %q`, fleet.DRADriver, c.Value),
		}}}
	case ClaimMatch, ClaimNVLink:
		attr := c.Value
		if c.Mode == ClaimNVLink {
			attr = "nvlinkDomain"
		}
		constraints = []resourcev1.DeviceConstraint{{
			Requests:       []string{claimRequest},
			MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(fleet.DRADriver + "/" + attr)),
		}}
	}
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests:    []resourcev1.DeviceRequest{{Name: claimRequest, Exactly: &req}},
			Constraints: constraints,
		}}},
	}
}

// podClaim is the name pods give their claim in spec.resourceClaims.
const podClaim = "gpus"

// WithClaim makes a GPU pod spec (PodSpec) ask for its GPUs through the
// ResourceClaimTemplate named template instead of nvidia.com/gpu: a
// resourceClaims entry for the pod, and a claims reference in each
// container that requested GPUs.
func WithClaim(spec corev1.PodSpec, template string) corev1.PodSpec {
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: podClaim, ResourceClaimTemplateName: ptr.To(template)}}
	use := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			c.Resources = *c.Resources.DeepCopy()
			_, lim := c.Resources.Limits[fleet.ResourceGPU]
			_, req := c.Resources.Requests[fleet.ResourceGPU]
			if lim || req {
				delete(c.Resources.Limits, fleet.ResourceGPU)
				delete(c.Resources.Requests, fleet.ResourceGPU)
				c.Resources.Claims = []corev1.ResourceClaim{{Name: podClaim}}
			}
			out[i] = c
		}
		return out
	}
	spec.Containers = use(spec.Containers)
	spec.InitContainers = use(spec.InitContainers)
	return spec
}

// CreateClaimTemplate creates the workload's template in ns (as the
// administrator: it is set-up, not the load being measured).
func CreateClaimTemplate(ctx context.Context, cs kubernetes.Interface, ns string, t *resourcev1.ResourceClaimTemplate) error {
	_, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, t, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ns, t.Name, err)
	}
	return nil
}

// fleetClaim settles the claim a workload runs with: the one asked for,
// or on a fleet whose GPUs are all DRA devices count; then checks it
// (checkClaim) and returns the GPUs it draws from, free and the most on
// one node.
func fleetClaim(claim *string, gpus int, c Capacity, allowUnschedulable bool) (free, maxNode int64, err error) {
	if *claim == "" && c.DRA() {
		*claim = ClaimCount
	}
	parsed, err := ParseClaim(*claim)
	if err != nil {
		return 0, 0, err
	}
	_, free, maxNode, err = checkClaim(parsed, gpus, c, allowUnschedulable)
	return free, maxNode, err
}

// checkClaim holds a claim against what the fleet offers: a DRA claim
// needs devices, nvidia.com/gpu needs the extended resource or, on a DRA
// fleet, a DeviceClass that serves it from the devices, and a claim
// no node could ever satisfy (more GPUs than a node has, a product no
// node has) is refused unless allowUnschedulable. It returns the GPUs the
// claim draws from: total, free, and the most on one node.
func checkClaim(c Claim, gpus int, capa Capacity, allowUnschedulable bool) (total, free, maxNode int64, err error) {
	if !c.DRA() {
		switch {
		case capa.DRA() && capa.ServesExtended:
			return capa.Devices, capa.FreeDevices, capa.MaxNodeDevices, nil
		case capa.DRA() && !allowUnschedulable:
			return 0, 0, 0, fmt.Errorf("--claim none: the fleet's nodes offer their GPUs through DRA (%d devices of %s), not as %s, and no DeviceClass serves %s: pods could never be scheduled; use --claim %s (or another claim mode), or `ghostfleet nodes N --dra-extended-resource` first",
				capa.Devices, fleet.DRADriver, fleet.ResourceGPU, fleet.ResourceGPU, ClaimCount)
		}
		return capa.TotalGPUs, capa.FreeGPUs, capa.MaxNodeGPUs, nil
	}
	if capa.Devices == 0 && !allowUnschedulable {
		return 0, 0, 0, fmt.Errorf("--claim %s: the fleet publishes no GPU devices (no ResourceSlices of %s): its nodes offer %s; bring nodes up with --gpu-model dra (`ghostfleet nodes 0 && ghostfleet nodes N --gpu-model dra`)",
			c, fleet.DRADriver, fleet.ResourceGPU)
	}
	if c.Mode == ClaimProduct && capa.Products[c.Value] == 0 && !allowUnschedulable {
		have := slices.Sorted(maps.Keys(capa.Products))
		return 0, 0, 0, fmt.Errorf("--claim %s: no node publishes a GPU whose productName is %q (the fleet has: %s): no pod could ever be scheduled; pass --allow-unschedulable to measure that anyway",
			c, c.Value, strings.Join(have, ", "))
	}
	return capa.Devices, capa.FreeDevices, capa.MaxNodeDevices, nil
}
