package poll

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

func TestWorstOf(t *testing.T) {
	ss := []metrics.Series{
		{Labels: map[string]string{"verb": "POST", "resource": "pods"}, Points: [][2]float64{{10, 0.1}, {25, 0.5}, {40, 0.2}}},
		{Labels: map[string]string{"verb": "PATCH", "resource": "nodes", "subresource": "status"}, Points: [][2]float64{{10, 0.3}, {25, 0.1}, {40, 0.4}}},
		// A series gone quiet before the last step does not count there.
		{Labels: map[string]string{"verb": "DELETE", "resource": "pods"}, Points: [][2]float64{{10, 0.9}}},
	}
	got := worstOf(ss, grid{})
	if fmt.Sprint(got.Worst) != "[0.9 0.5 0.4]" || got.Series != "PATCH nodes/status" || got.Of != 2 {
		t.Errorf("worst %v of %s (%d series)", got.Worst, got.Series, got.Of)
	}
	if got := worstOf(nil, grid{}); len(got.Worst) != 0 || got.Series != "" {
		t.Errorf("no series: %+v", got)
	}
	if got := seriesName(map[string]string{"subresource": "/healthz"}); got != "/healthz" {
		t.Errorf("non-resource request named %q", got)
	}
}

func TestSumSeries(t *testing.T) {
	tests := []struct {
		name string
		in   []metrics.Series
		want string
	}{
		{"none", nil, "[]"},
		{"one", []metrics.Series{{Points: [][2]float64{{1, 2}, {2, 3}}}}, "[2 3]"},
		{"two on their timestamps", []metrics.Series{
			{Points: [][2]float64{{1, 2}, {2, 3}}},
			{Points: [][2]float64{{2, 10}, {3, 1}}},
		}, "[2 13 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(sumSeries(tt.in, grid{})); got != tt.want {
				t.Errorf("sum %s, want %s", got, tt.want)
			}
		})
	}
}

// promQLSource answers range queries from canned series by PromQL, as
// Prometheus would.
type promQLSource map[string][]metrics.Series

func (p promQLSource) Range(_ context.Context, query string, _, _ time.Time, _ time.Duration) ([]metrics.Series, error) {
	return p[query], nil
}

// Both sources the console reads, Prometheus and the direct scrape, serve
// the SLO classes and the etcd quota.
func TestFetchSLIAndQuota(t *testing.T) {
	now := float64(time.Now().Unix())
	prom := promQLSource{
		mustLookup("sli-list-namespace-p99").PromQL: {{Labels: map[string]string{"resource": "pods", "scope": "namespace"}, Points: [][2]float64{{now, 0.25}}}},
		mustLookup("etcd-quota").PromQL:             {{Labels: map[string]string{}, Points: [][2]float64{{now - 15, 8 << 30}, {now, 8 << 30}}}},
	}
	direct := metrics.NewRecording()
	scrape := func(ago time.Duration, count int) {
		at := time.Now().Add(-ago)
		api := fmt.Sprintf(`# TYPE apiserver_request_sli_duration_seconds histogram
apiserver_request_sli_duration_seconds_bucket{resource="pods",scope="namespace",subresource="",verb="LIST",le="0.2"} 0
apiserver_request_sli_duration_seconds_bucket{resource="pods",scope="namespace",subresource="",verb="LIST",le="0.3"} %d
apiserver_request_sli_duration_seconds_bucket{resource="pods",scope="namespace",subresource="",verb="LIST",le="+Inf"} %d
apiserver_request_sli_duration_seconds_sum{resource="pods",scope="namespace",subresource="",verb="LIST"} 1
apiserver_request_sli_duration_seconds_count{resource="pods",scope="namespace",subresource="",verb="LIST"} %d
`, count, count, count)
		etcd := "# TYPE etcd_server_quota_backend_bytes gauge\netcd_server_quota_backend_bytes 8.589934592e+09\n"
		for job, text := range map[string]string{"kube-apiserver": api, "etcd": etcd} {
			if err := direct.AddText(at, job, strings.NewReader(text)); err != nil {
				t.Fatal(err)
			}
		}
	}
	scrape(time.Minute, 0)
	scrape(30*time.Second, 100)
	for name, src := range map[string]RangeSource{"prometheus": prom, "direct": direct} {
		t.Run(name, func(t *testing.T) {
			v := Fetch(context.Background(), src, 15*time.Minute, 15*time.Second)
			lat := v.API["sli-list-namespace-p99"]
			if v.Err != "" || len(lat.Worst) == 0 || lat.Series != "pods" || v.EtcdQuota != 8<<30 {
				t.Fatalf("err %q, LIST namespace %+v, etcd quota %g", v.Err, lat, v.EtcdQuota)
			}
			if p := lat.Worst[len(lat.Worst)-1]; p < 0.2 || p > 0.3 {
				t.Errorf("LIST namespace p99 %g, want within the 0.2–0.3s bucket", p)
			}
		})
	}
}

// failing counts its queries and refuses them all.
type failing struct{ queries atomic.Int64 }

func (f *failing) Range(context.Context, string, time.Time, time.Time, time.Duration) ([]metrics.Series, error) {
	f.queries.Add(1)
	return nil, fmt.Errorf("connection refused")
}

// Metrics sends a round at once, keeps the error in the view, and ends
// with its context.
func TestMetricsSendsRoundsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src := &failing{}
	views := Metrics(ctx, src, time.Hour, 15*time.Minute)
	select {
	case v := <-views:
		if v.Err != "connection refused" || v.At.IsZero() {
			t.Errorf("first round: err %q at %v", v.Err, v.At)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no first round")
	}
	cancel()
	for range views {
	}
	// One round of the four SLO classes and five other series; the hour's
	// interval never came.
	if n := src.queries.Load(); n != int64(len(SLOClasses)+5) {
		t.Errorf("%d queries, want %d", n, len(SLOClasses)+5)
	}
}

// A poller given a way to ask etcd for its alarms puts them in each
// round: etcd's metrics do not carry them.
func TestPollerAsksForAlarms(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewPoller(&failing{}, time.Hour, 15*time.Minute)
	p.Alarms = func(context.Context) ([]string, error) { return []string{"NOSPACE"}, nil }
	select {
	case v := <-p.Run(ctx):
		if len(v.EtcdAlarms) != 1 || v.EtcdAlarms[0] != "NOSPACE" {
			t.Errorf("alarms %q, want NOSPACE", v.EtcdAlarms)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no first round")
	}
}
