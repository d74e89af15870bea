package workload

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
)

func TestParseClaim(t *testing.T) {
	tests := []struct {
		in   string
		want Claim
		err  string
	}{
		{in: "", want: Claim{Mode: ClaimNone}},
		{in: "none", want: Claim{Mode: ClaimNone}},
		{in: "count", want: Claim{Mode: ClaimCount}},
		{in: "nvlink", want: Claim{Mode: ClaimNVLink}},
		{in: "product=NVIDIA-H100-80GB-HBM3", want: Claim{Mode: ClaimProduct, Value: "NVIDIA H100 80GB HBM3"}}, // the label's form becomes NVML's
		{in: "product=NVIDIA H100 80GB HBM3", want: Claim{Mode: ClaimProduct, Value: "NVIDIA H100 80GB HBM3"}},
		{in: "product=NVIDIA-V100", want: Claim{Mode: ClaimProduct, Value: "NVIDIA-V100"}}, // unknown: the fleet decides
		{in: "match=productName", want: Claim{Mode: ClaimMatch, Value: "productName"}},
		{in: "gpus=2", err: `--claim "gpus=2" is not a claim mode: allowed are none, count, product=NAME, match=ATTR, nvlink`},
		{in: "count=2", err: `--claim "count=2" takes no value`},
		{in: "product=", err: `--claim "product=" needs a product name`},
		{in: "match=colour", err: `--claim "match=colour": the devices have no attribute "colour": allowed are architecture,`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseClaim(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseClaim(%q) error %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseClaim(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestClaimTemplate(t *testing.T) {
	tests := []struct {
		claim      string
		selector   string
		constraint string
	}{
		{claim: "count"},
		{claim: "product=NVIDIA-B200", selector: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`},
		{claim: "match=productName", constraint: "gpu.nvidia.com/productName"},
		{claim: "nvlink", constraint: "gpu.nvidia.com/nvlinkDomain"},
	}
	for _, tc := range tests {
		t.Run(tc.claim, func(t *testing.T) {
			c, err := ParseClaim(tc.claim)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := c.Template("load-1", 4, map[string]string{LabelRun: "load-1"})
			if tmpl.Name != "load-1" || tmpl.Labels[LabelRun] != "load-1" {
				t.Errorf("meta %+v", tmpl.ObjectMeta)
			}
			reqs := tmpl.Spec.Spec.Devices.Requests
			if len(reqs) != 1 || reqs[0].Exactly == nil {
				t.Fatalf("requests %+v", reqs)
			}
			r := reqs[0].Exactly
			if reqs[0].Name != claimRequest || r.DeviceClassName != fleet.DeviceClassGPU || r.AllocationMode != resourcev1.DeviceAllocationModeExactCount || r.Count != 4 {
				t.Errorf("request %s %+v: want exactly 4 of %s", reqs[0].Name, r, fleet.DeviceClassGPU)
			}
			sel := ""
			if len(r.Selectors) == 1 {
				sel = r.Selectors[0].CEL.Expression
			}
			if sel != tc.selector {
				t.Errorf("selector %q, want %q", sel, tc.selector)
			}
			cons := tmpl.Spec.Spec.Devices.Constraints
			got := ""
			if len(cons) == 1 {
				got = string(*cons[0].MatchAttribute)
				if len(cons[0].Requests) != 1 || cons[0].Requests[0] != claimRequest {
					t.Errorf("constraint requests %v", cons[0].Requests)
				}
			}
			if got != tc.constraint {
				t.Errorf("matchAttribute %q, want %q", got, tc.constraint)
			}
		})
	}
}

func TestWithClaim(t *testing.T) {
	spec := WithClaim(WithPreflight(PodSpec(2)), "load-1")
	if len(spec.ResourceClaims) != 1 || *spec.ResourceClaims[0].ResourceClaimTemplateName != "load-1" {
		t.Fatalf("resourceClaims %+v", spec.ResourceClaims)
	}
	for _, c := range append(spec.Containers, spec.InitContainers...) {
		if _, ok := c.Resources.Limits[fleet.ResourceGPU]; ok {
			t.Errorf("container %s still asks for %s", c.Name, fleet.ResourceGPU)
		}
		if len(c.Resources.Claims) != 1 || c.Resources.Claims[0].Name != spec.ResourceClaims[0].Name {
			t.Errorf("container %s claims %+v", c.Name, c.Resources.Claims)
		}
	}
	if PodSpec(2).Containers[0].Resources.Limits.Name(fleet.ResourceGPU, "").Value() != 2 {
		t.Error("WithClaim changed the spec it was given")
	}
}

func TestLoadValidateClaims(t *testing.T) {
	extended := Capacity{FakeNodes: 10, TotalGPUs: 80, FreeGPUs: 80, MaxNodeGPUs: 8}
	dra := Capacity{FakeNodes: 10, Devices: 80, FreeDevices: 80, MaxNodeDevices: 8, Products: map[string]int64{"NVIDIA H100 80GB HBM3": 80}}
	draServing := dra
	draServing.ServesExtended = true
	tests := []struct {
		name      string
		capa      Capacity
		claim     string
		gpus      int
		allow     bool
		wantClaim string
		err       string
	}{
		{name: "extended fleet, no claim", capa: extended, gpus: 8},
		{name: "dra fleet, no claim: count", capa: dra, gpus: 8, wantClaim: ClaimCount},
		{name: "dra fleet, product", capa: dra, claim: "product=NVIDIA-H100-80GB-HBM3", gpus: 2, wantClaim: "product=NVIDIA-H100-80GB-HBM3"},
		{name: "dra fleet, none", capa: dra, claim: "none", gpus: 1, err: "offer their GPUs through DRA (80 devices of gpu.nvidia.com), not as nvidia.com/gpu"},
		{name: "dra fleet serving nvidia.com/gpu, none", capa: draServing, claim: "none", gpus: 8, wantClaim: "none"},
		{name: "dra fleet serving nvidia.com/gpu, no claim: count", capa: draServing, gpus: 8, wantClaim: ClaimCount},
		{name: "extended fleet, claim", capa: extended, claim: "count", gpus: 1, err: "the fleet publishes no GPU devices"},
		{name: "16 of 8", capa: dra, claim: "count", gpus: 16, err: "GPUs per pod 16 is more than any node has (largest: 8)"},
		{name: "16 of 8 allowed", capa: dra, claim: "count", gpus: 16, allow: true, wantClaim: ClaimCount},
		{name: "no such product", capa: dra, claim: "product=NVIDIA-B200", gpus: 1, err: `no node publishes a GPU whose productName is "NVIDIA B200" (the fleet has: NVIDIA H100 80GB HBM3)`},
		{name: "no such product allowed", capa: dra, claim: "product=NVIDIA-B200", gpus: 1, allow: true, wantClaim: "product=NVIDIA-B200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := LoadOptions{Pods: 10, GPUs: tc.gpus, Mode: ModePods, Namespace: "gf-load", Timeout: 1, Claim: tc.claim}
			_, err := o.Validate(tc.capa, tc.allow)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Claim != tc.wantClaim {
				t.Errorf("claim %q, want %q", o.Claim, tc.wantClaim)
			}
		})
	}
}

func TestCreateClaimTemplate(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	tmpl := Claim{Mode: ClaimCount}.Template("load-1", 1, nil)
	for range 2 { // a second create (a retried run) is not an error
		if err := CreateClaimTemplate(ctx, cs, "gf-load", tmpl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.ResourceV1().ResourceClaimTemplates("gf-load").Get(ctx, "load-1", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

func TestTrainValidateClaims(t *testing.T) {
	dra := Capacity{FakeNodes: 10, Devices: 80, FreeDevices: 80, MaxNodeDevices: 8}
	o := TrainOptions{Jobs: 2, PodsPerJob: 2, GPUsPerPod: 8, Namespace: "gf-train", Timeout: 1}
	if _, err := o.Validate(dra); err != nil || o.Claim != ClaimCount {
		t.Errorf("dra fleet: claim %q, %v; want count", o.Claim, err)
	}
	o.Claim, o.GPUsPerPod = "nvlink", 16
	if _, err := o.Validate(dra); err == nil || !strings.Contains(err.Error(), "GPUs per pod 16 is out of range: allowed are 1-8") {
		t.Errorf("16 of 8: %v", err)
	}
	o.Claim, o.GPUsPerPod = "count", 8
	if _, err := o.Validate(Capacity{FakeNodes: 10, TotalGPUs: 80, FreeGPUs: 80, MaxNodeGPUs: 8}); err == nil || !strings.Contains(err.Error(), "no GPU devices") {
		t.Errorf("claim on an extended fleet: %v", err)
	}
}
