package poll

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// hiddenScheduler answers the apiserver's queries and nothing else, and
// knows the scheduler's /metrics is not there.
type hiddenScheduler struct{}

func (hiddenScheduler) Range(_ context.Context, q string, start, _ time.Time, _ time.Duration) ([]metrics.Series, error) {
	if strings.Contains(q, "apiserver_request_sli") {
		return []metrics.Series{{Labels: map[string]string{"verb": "POST", "resource": "pods"}, Points: [][2]float64{{float64(start.Unix()), 0.1}}}}, nil
	}
	return nil, nil
}

func (hiddenScheduler) Availability(context.Context) metrics.Availability {
	return metrics.Availability{metrics.ComponentScheduler: "scheduler /metrics unreachable: connection refused"}
}

func TestFetchMarksUnavailableQueries(t *testing.T) {
	v := Fetch(context.Background(), hiddenScheduler{}, 5*time.Minute, 15*time.Second)
	if why, ok := v.NotAvailable(QueryThroughput); !ok || why != "scheduler /metrics unreachable: connection refused" {
		t.Errorf("throughput: %q %v, want not available", why, ok)
	}
	// APF rejections come from the apiserver: no series is a zero, for
	// the chart to draw; the etcd size has no data, nothing says why.
	for _, id := range []string{QueryRejected, QueryEtcdSize, "sli-mutating-p99"} {
		if why, ok := v.NotAvailable(id); ok {
			t.Errorf("%s marked not available: %q", id, why)
		}
	}
	if len(v.API["sli-mutating-p99"].Worst) == 0 {
		t.Errorf("the apiserver's SLI has no values")
	}
}
