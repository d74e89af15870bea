package fleet

import "testing"

// A fleet up with --prometheus-port 0 has no Prometheus: its URL is empty,
// so runs judge without one instead of querying 127.0.0.1:0.
func TestPrometheusURL(t *testing.T) {
	if got := (State{PrometheusPort: 0}).PrometheusURL(); got != "" {
		t.Errorf("port 0: got %q, want no URL", got)
	}
	if got, want := (State{PrometheusPort: 9091}).PrometheusURL(), "http://127.0.0.1:9091"; got != want {
		t.Errorf("port 9091: got %q, want %q", got, want)
	}
}
