package fleet

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kwok/pkg/kwok/metrics"
)

// The DCGM series and the GPU usage compile and evaluate in kwok's own
// metric environment: GPU i is busy exactly when the node's running pods
// hold more than i GPUs.
func TestDCGMSeriesFollowTheNodesGPUs(t *testing.T) {
	ctx := context.Background()
	p, _ := LookupGPUProfile("dgx-a100-80gb")
	node := NewNode(p, 0)
	node.UID = "uid-0"
	env, err := metrics.NewEnvironment(metrics.EnvironmentConfig{
		NodeResourceUsage: func(res, name string) float64 {
			if res != ResourceGPU || name != node.Name {
				t.Errorf("usage of %s on %s asked", res, name)
			}
			return 3 // three GPUs held
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := DCGMMetric(p.GPUs)
	if len(m.Spec.Metrics) != 3*p.GPUs || !strings.Contains(m.Spec.Path, "{nodeName}") {
		t.Fatalf("metric %s with %d series", m.Spec.Path, len(m.Spec.Metrics))
	}
	for _, s := range m.Spec.Metrics {
		ev, err := env.Compile(s.Value)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		v, err := ev.EvaluateFloat64(ctx, metrics.Data{Node: node})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		labels := map[string]string{}
		for _, l := range s.Labels {
			lev, err := env.Compile(l.Value)
			if err != nil {
				t.Fatalf("label %s: %v", l.Name, err)
			}
			if labels[l.Name], err = lev.EvaluateString(ctx, metrics.Data{Node: node}); err != nil {
				t.Fatalf("label %s: %v", l.Name, err)
			}
		}
		busy := labels["gpu"] < "3"
		switch s.Name {
		case DCGMGPUUtil:
			if busy != (v >= 90 && v <= 100) || !busy && v != 0 {
				t.Errorf("GPU %s util %.1f (busy %v)", labels["gpu"], v, busy)
			}
		case DCGMFBUsed:
			if want := map[bool]float64{true: 81920 * 0.9, false: 0}[busy]; v != want {
				t.Errorf("GPU %s FB used %.0f, want %.0f", labels["gpu"], v, want)
			}
		}
		if labels["Hostname"] != node.Name || labels["modelName"] != p.Product || labels["UUID"] != "GPU-uid-0-"+labels["gpu"] {
			t.Errorf("labels %v", labels)
		}
	}

	// The usage: a running pod's container holds its GPU limit.
	u := Usage().Spec.Usages[0].Usage[ResourceGPU]
	uev, err := env.Compile(*u.Expression)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	c := &corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: resource.MustParse("4")}}}
	for phase, want := range map[corev1.PodPhase]float64{corev1.PodRunning: 4, corev1.PodFailed: 0} {
		pod.Status.Phase = phase
		pod.ResourceVersion = string(phase) // kwok caches results by version
		if got, err := uev.EvaluateFloat64(ctx, metrics.Data{Node: node, Pod: pod, Container: c}); err != nil || got != want {
			t.Errorf("%s pod holds %v GPUs (%v), want %v", phase, got, err, want)
		}
	}
}
