package fleet

import (
	"strings"
	"testing"

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
