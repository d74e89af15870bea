package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kwok/pkg/kwok/metrics"
)

// The resource metrics compile in kwok's metric environment, at the path
// every node's annotation points metrics-server to.
func TestMetricsResourceServesEveryNodesPath(t *testing.T) {
	m, err := MetricsResource()
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != MetricsResourceName || m.Kind != "Metric" {
		t.Errorf("metric %s %s", m.Kind, m.Name)
	}
	p, _ := LookupGPUProfile(DefaultGPUProfile)
	node := NewNode(p, 7)
	if a := node.Status.Addresses; len(a) == 0 || a[0].Type != "InternalIP" || a[0].Address != BindAddress {
		t.Errorf("node addresses %v: metrics-server scrapes a node at its InternalIP, %s", a, BindAddress)
	}
	if got, want := strings.ReplaceAll(m.Spec.Path, "{nodeName}", node.Name), node.Annotations[AnnotationResourceMetricsPath]; got != want {
		t.Errorf("metric path %s, node annotation %q", got, want)
	}
	env, err := metrics.NewEnvironment(metrics.EnvironmentConfig{
		NodeResourceUsage:                func(string, string) float64 { return 1 },
		PodResourceUsage:                 func(string, string, string) float64 { return 1 },
		ContainerResourceUsage:           func(string, string, string, string) float64 { return 1 },
		NodeResourceCumulativeUsage:      func(string, string) float64 { return 1 },
		PodResourceCumulativeUsage:       func(string, string, string) float64 { return 1 },
		ContainerResourceCumulativeUsage: func(string, string, string, string) float64 { return 1 },
	})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range m.Spec.Metrics {
		names[s.Name] = true
		if _, err := env.Compile(s.Value); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	// An idle node still reports usage (metrics-server drops a node that
	// reports none): its own overhead.
	idle, err := metrics.NewEnvironment(metrics.EnvironmentConfig{
		NodeResourceUsage:           func(string, string) float64 { return 0 },
		NodeResourceCumulativeUsage: func(string, string) float64 { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	node.CreationTimestamp = metav1.NewTime(time.Now().Add(-100 * time.Second))
	for _, s := range m.Spec.Metrics {
		if s.Dimension != "node" || s.Name == "scrape_error" {
			continue
		}
		ev, err := idle.Compile(s.Value)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		v, err := ev.EvaluateFloat64(context.Background(), metrics.Data{Node: node})
		if err != nil || v <= 0 {
			t.Errorf("idle node's %s = %v (%v), want above zero", s.Name, v, err)
		}
	}

	// What metrics-server v0.8 reads from /metrics/resource.
	for _, want := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes",
		"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds"} {
		if !names[want] {
			t.Errorf("series %s missing", want)
		}
	}
}

func TestMetricsAPIObjects(t *testing.T) {
	objs, err := MetricsAPIObjects(34567)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "Service" || objs[1].GetKind() != "APIService" || objs[1].GetName() != MetricsAPIService {
		t.Fatalf("objects %v", objs)
	}
	port, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "service", "port")
	if port != 34567 {
		t.Errorf("APIService port %d", port)
	}
	if ext := objs[0].Object["spec"].(map[string]any)["externalName"]; ext != BindAddress {
		t.Errorf("Service externalName %v, want %s", ext, BindAddress)
	}
	for _, bad := range []int{0, 70000} {
		if _, err := MetricsAPIObjects(bad); err == nil || !strings.Contains(err.Error(), "allowed are 1-65535") {
			t.Errorf("port %d: %v", bad, err)
		}
	}
}
