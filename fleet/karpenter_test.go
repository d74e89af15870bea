package fleet

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNodePoolSpecsRefuseBadInputInOneLine(t *testing.T) {
	tests := []struct {
		name     string
		profiles []string
		max      int
		after    time.Duration
		want     string
	}{
		{"unknown profile", []string{"dgx-h100", "dgx-h900"}, 10, time.Second, `--nodepools: unknown GPU profile "dgx-h900": allowed are dgx-a100-80gb, dgx-b200, dgx-h100, gb200-nvl72`},
		{"twice", []string{"dgx-h100", "dgx-h100"}, 10, time.Second, `--nodepools: profile "dgx-h100" is given twice`},
		{"none", nil, 10, time.Second, "--nodepools: give at least one GPU profile"},
		{"no nodes", []string{"dgx-h100"}, 0, time.Second, "--autoscale-max-nodes 0 is out of range: allowed are 1-10000"},
		{"too soon", []string{"dgx-h100"}, 10, 0, "--consolidate-after 0s is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NodePoolSpecs(tt.profiles, tt.max, tt.after)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error = %v, want one line containing %q", err, tt.want)
			}
		})
	}
	if err := CheckAutoscaler("cluster-autoscaler"); err == nil || !strings.Contains(err.Error(), "allowed is karpenter") {
		t.Errorf("CheckAutoscaler = %v", err)
	}
}

// Karpenter's nodes must look like `nodes`'s: every label of the NodePool
// template has the value NewNode gives, the taint is kwok's, and the
// instance type the NodePool requires is the one the file defines, with
// the profile's capacity.
func TestNodePoolsLookLikeGhostFleetNodes(t *testing.T) {
	specs, err := NodePoolSpecs(GPUProfileNames(), 25, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data, err := KarpenterInstanceTypes(specs)
	if err != nil {
		t.Fatal(err)
	}
	var types []karpenterInstanceType
	if err := json.Unmarshal(data, &types); err != nil {
		t.Fatal(err)
	}
	byName := map[string]karpenterInstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	for _, s := range specs {
		t.Run(s.Profile.Name, func(t *testing.T) {
			node := NewNode(s.Profile, 0)
			pool, err := s.NodePool()
			if err != nil {
				t.Fatal(err)
			}
			if pool.GetName() != "gf-"+s.Profile.Name {
				t.Errorf("name %s", pool.GetName())
			}
			labels, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "template", "metadata", "labels")
			for _, k := range []string{LabelManaged, LabelGPUProfile, LabelType, "nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.machine"} {
				if labels[k] == "" {
					t.Errorf("template lacks label %s", k)
				}
			}
			for k, v := range labels {
				if node.Labels[k] != v {
					t.Errorf("label %s=%q, nodes gives %q", k, v, node.Labels[k])
				}
			}
			reqs, _, _ := unstructured.NestedSlice(pool.Object, "spec", "template", "spec", "requirements")
			for _, r := range reqs {
				m := r.(map[string]any)
				key, values := m["key"].(string), m["values"].([]any)
				if want, ok := node.Labels[key]; ok && (len(values) != 1 || values[0] != want) && key != LabelZone {
					t.Errorf("requirement %s in %v, nodes gives %q", key, values, want)
				}
			}
			taints, _, _ := unstructured.NestedSlice(pool.Object, "spec", "template", "spec", "taints")
			if len(taints) != 1 || taints[0].(map[string]any)["key"] != TaintFake || taints[0].(map[string]any)["effect"] != "NoSchedule" {
				t.Errorf("taints %v, want kwok's NoSchedule only", taints)
			}
			limit, _, _ := unstructured.NestedString(pool.Object, "spec", "limits", ResourceGPU)
			if want := s.Profile.GPUs * 25; limit != strconv.Itoa(want) {
				t.Errorf("GPU limit %s, want %d (25 nodes)", limit, want)
			}
			after, _, _ := unstructured.NestedString(pool.Object, "spec", "disruption", "consolidateAfter")
			if after != "10s" {
				t.Errorf("consolidateAfter %q", after)
			}
			it, ok := byName[node.Labels[corev1.LabelInstanceTypeStable]]
			if !ok {
				t.Fatalf("no instance type %s in the file", node.Labels[corev1.LabelInstanceTypeStable])
			}
			for res, q := range node.Status.Capacity {
				if got := it.Resources[res]; got.Cmp(q) != 0 {
					t.Errorf("instance type %s %s = %s, nodes gives %s", it.Name, res, got.String(), q.String())
				}
			}
			if it.Architecture != node.Labels[corev1.LabelArchStable] {
				t.Errorf("architecture %s, nodes gives %s", it.Architecture, node.Labels[corev1.LabelArchStable])
			}
			// DeepCopy panics on Go types JSON would not produce.
			_ = pool.DeepCopy()
		})
	}
}

// Scale leaves Karpenter's nodes alone: they are not numbered like
// GhostFleet's and would otherwise be deleted as surplus.
func TestIsKarpenterNode(t *testing.T) {
	n := NewNode(GPUProfiles[0], 3)
	if IsKarpenterNode(n) {
		t.Error("a nodes node taken for Karpenter's")
	}
	n.Labels[LabelNodePool] = "gf-dgx-h100"
	if !IsKarpenterNode(n) {
		t.Error("a Karpenter node not recognised")
	}
}

func TestSameAutoscaler(t *testing.T) {
	specs, _ := NodePoolSpecs([]string{"dgx-h100"}, 10, time.Second)
	st := State{Name: "f"}
	if err := sameAutoscaler(UpOptions{Name: "f", Autoscaler: specs}, st); err == nil || !strings.Contains(err.Error(), "without an autoscaler") {
		t.Errorf("up --autoscaler on a fleet without: %v", err)
	}
	st.Autoscaler = &AutoscalerState{NodePools: []string{"dgx-b200"}}
	if err := sameAutoscaler(UpOptions{Name: "f", Autoscaler: specs}, st); err == nil || !strings.Contains(err.Error(), "for dgx-b200, not dgx-h100") {
		t.Errorf("other NodePools: %v", err)
	}
	if err := sameAutoscaler(UpOptions{Name: "f"}, st); err != nil {
		t.Errorf("a plain up: %v", err)
	}
}
