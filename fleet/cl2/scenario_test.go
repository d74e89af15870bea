package cl2

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// CL2 is not available to the tests, so the scenario is rendered with the
// few template functions of CL2's pkg/config/template_functions.go that it
// uses, with CL2's semantics (numbers go through float64, *Int truncates),
// to catch template and YAML mistakes and check the sizes and the pods.
func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	case string:
		var f float64
		if _, err := fmt.Sscan(n, &f); err == nil {
			return f
		}
	}
	panic(fmt.Sprintf("cannot cast %v to float64", v))
}

var cl2Funcs = template.FuncMap{
	"DefaultParam": func(p, d any) any {
		if p == nil {
			return d
		}
		return p
	},
	"DivideFloat": func(a, b any) float64 { return toFloat(a) / toFloat(b) },
	"DivideInt":   func(a, b any) int { return int(toFloat(a) / toFloat(b)) },
	"MaxInt": func(ns ...any) int {
		m := toFloat(ns[0])
		for _, n := range ns {
			m = math.Max(m, toFloat(n))
		}
		return int(m)
	},
	"MultiplyInt": func(ns ...any) int {
		p := 1.0
		for _, n := range ns {
			p *= toFloat(n)
		}
		return int(p)
	},
}

func render(t *testing.T, file string, mapping map[string]any) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "density", file))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := template.New(file).Funcs(cl2Funcs).Option("missingkey=zero").Parse(string(src))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var b strings.Builder
	if err := tpl.Execute(&b, mapping); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return []byte(b.String())
}

// testConfig is the part of CL2's api.Config the checks read.
type testConfig struct {
	Name      string `json:"name"`
	Namespace struct {
		Number int `json:"number"`
	} `json:"namespace"`
	TuningSets []struct {
		Name    string `json:"name"`
		QPSLoad struct {
			QPS float64 `json:"qps"`
		} `json:"qpsLoad"`
	} `json:"tuningSets"`
	Steps []struct {
		Name         string `json:"name"`
		Measurements []struct {
			Identifier string         `json:"Identifier"`
			Method     string         `json:"Method"`
			Params     map[string]any `json:"Params"`
		} `json:"measurements"`
		Phases []struct {
			ReplicasPerNamespace int `json:"replicasPerNamespace"`
			TuningSet            string
			ObjectBundle         []struct {
				Basename           string         `json:"basename"`
				ObjectTemplatePath string         `json:"objectTemplatePath"`
				TemplateFillMap    map[string]any `json:"templateFillMap"`
			} `json:"objectBundle"`
		} `json:"phases"`
	} `json:"steps"`
}

func TestDensityScenario(t *testing.T) {
	tests := []struct {
		name      string
		mapping   map[string]any
		ns        int
		perNS     map[string]int // deployments per namespace by basename
		podsEach  map[string]int
		qps       map[string]float64
		gpusEach  int
		apiMethod bool
	}{
		{"100 nodes, defaults", map[string]any{"Nodes": 100}, 1,
			map[string]int{"gpu-saturation": 40, "gpu-latency": 100}, map[string]int{"gpu-saturation": 10, "gpu-latency": 1},
			map[string]float64{"Saturation": 5, "Latency": 10}, 1, false},
		{"1000 nodes, 6 per node, 200 pods/s", map[string]any{"Nodes": 1000, "CL2_PODS_PER_NODE": 6, "CL2_POD_THROUGHPUT": 200}, 10,
			map[string]int{"gpu-saturation": 60, "gpu-latency": 100}, map[string]int{"gpu-saturation": 10, "gpu-latency": 1},
			map[string]float64{"Saturation": 20, "Latency": 10}, 1, false},
		{"10 nodes, 2 GPUs a pod, API responsiveness", map[string]any{"Nodes": 10, "CL2_GPUS_PER_POD": 2, "CL2_PODS_PER_NODE": 3, "CL2_ENABLE_API_RESPONSIVENESS": true}, 1,
			map[string]int{"gpu-saturation": 3, "gpu-latency": 10}, map[string]int{"gpu-saturation": 10, "gpu-latency": 1},
			map[string]float64{"Saturation": 5, "Latency": 10}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg testConfig
			if err := yaml.Unmarshal(render(t, "config.yaml", tt.mapping), &cfg); err != nil {
				t.Fatalf("config.yaml is not YAML once rendered: %v", err)
			}
			if cfg.Name != "gpu-density" || cfg.Namespace.Number != tt.ns {
				t.Errorf("name %q, namespaces %d (want %d)", cfg.Name, cfg.Namespace.Number, tt.ns)
			}
			for _, ts := range cfg.TuningSets {
				if ts.QPSLoad.QPS != tt.qps[ts.Name] {
					t.Errorf("tuning set %s: qps %g, want %g", ts.Name, ts.QPSLoad.QPS, tt.qps[ts.Name])
				}
			}
			methods := map[string]bool{}
			gpus := 0
			for _, s := range cfg.Steps {
				for _, m := range s.Measurements {
					methods[m.Method] = true
				}
				for _, p := range s.Phases {
					for _, ob := range p.ObjectBundle {
						if p.ReplicasPerNamespace == 0 {
							continue // a deletion phase
						}
						if p.ReplicasPerNamespace != tt.perNS[ob.Basename] {
							t.Errorf("%s: %d per namespace, want %d", ob.Basename, p.ReplicasPerNamespace, tt.perNS[ob.Basename])
						}
						fill := map[string]any{"Name": ob.Basename + "-0"}
						for k, v := range ob.TemplateFillMap {
							fill[k] = v
						}
						if toFloat(fill["Replicas"]) != float64(tt.podsEach[ob.Basename]) {
							t.Errorf("%s: %v replicas, want %d", ob.Basename, fill["Replicas"], tt.podsEach[ob.Basename])
						}
						d := checkDeployment(t, render(t, ob.ObjectTemplatePath, fill), tt.gpusEach)
						gpus += tt.ns * p.ReplicasPerNamespace * int(*d.Spec.Replicas) * tt.gpusEach
					}
				}
			}
			for _, m := range []string{"PodStartupLatency", "SchedulingThroughput", "WaitForControlledPodsRunning"} {
				if !methods[m] {
					t.Errorf("no %s measurement", m)
				}
			}
			if methods["APIResponsivenessPrometheus"] != tt.apiMethod {
				t.Errorf("APIResponsivenessPrometheus present = %v, want %v", methods["APIResponsivenessPrometheus"], tt.apiMethod)
			}
			// Saturation and latency pods fit 8-GPU nodes.
			if nodes := int(toFloat(tt.mapping["Nodes"])); gpus > nodes*8 {
				t.Errorf("the test asks for %d GPUs, %d nodes have %d", gpus, nodes, nodes*8)
			}
		})
	}
}

// checkDeployment decodes a rendered deployment.yaml and checks that its
// pods can only land on fake nodes and take gpus GPUs.
func checkDeployment(t *testing.T, data []byte, gpus int) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("deployment.yaml: %v\n%s", err, data)
	}
	spec := d.Spec.Template.Spec
	if spec.NodeSelector[fleet.LabelType] != "kwok" {
		t.Errorf("node selector %v does not pick kwok's fake nodes", spec.NodeSelector)
	}
	node := fleet.NewNode(fleet.GPUProfiles[0], 0)
	tolerated := false
	for _, taint := range node.Spec.Taints {
		for _, tol := range spec.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &taint, false) {
				tolerated = true
			}
		}
	}
	if !tolerated {
		t.Errorf("tolerations %v do not tolerate the fake node's taints %v", spec.Tolerations, node.Spec.Taints)
	}
	if d.Spec.Template.Labels["group"] == "" || d.Spec.Selector.MatchLabels["name"] != d.Name {
		t.Errorf("labels %v, selector %v", d.Spec.Template.Labels, d.Spec.Selector)
	}
	res := spec.Containers[0].Resources
	for _, l := range []corev1.ResourceList{res.Requests, res.Limits} {
		if q := l[fleet.ResourceGPU]; q.Value() != int64(gpus) {
			t.Errorf("nvidia.com/gpu %v, want %d", l, gpus)
		}
	}
	return d
}
