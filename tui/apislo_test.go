package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/metrics"
)

func TestAPISparkLimitIsTheCatalogThreshold(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	tests := []struct {
		class, query string
		want         float64
		wantSLO      string
	}{
		{"mutating", "sli-mutating-p99", 1, "SLO 1s"},
		{"GET", "sli-read-single-p99", 1, "SLO 1s"},
		{"LIST namespace", "sli-list-namespace-p99", 5, "SLO 5s"},
		{"LIST cluster", "sli-list-cluster-p99", 30, "SLO 30s"},
	}
	if len(tests) != len(sloClasses) {
		t.Fatalf("%d SLO classes, the test knows %d", len(sloClasses), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.class, func(t *testing.T) {
			q, err := metrics.Lookup(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			m := sampleMetrics()
			m.API[tt.query] = APILatency{Worst: []float64{0.2, 0.3}, Series: "pods", Of: 1}
			s := sparks(m, i)[0]
			if s.limit != tt.want || s.limit != q.SLO.Threshold {
				t.Errorf("limit %g, want %g (catalog %g)", s.limit, tt.want, q.SLO.Threshold)
			}
			title, _ := renderSpark(NewTheme(false), s, 56, 5)
			if want := "API p99 " + tt.class + " · pods  300ms  " + tt.wantSLO; title != want {
				t.Errorf("title %q, want %q", title, want)
			}
		})
	}
}

func TestAPISparkTitleAndCaption(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	th := NewTheme(false)
	m := sampleMetrics()
	m.API["sli-list-namespace-p99"] = APILatency{Worst: []float64{0.21}, Series: "limitranges", Of: 2}
	tests := []struct {
		class, w, h            int
		wantTitle, wantCaption string
	}{
		// Room for the worst series in the title: the caption says what
		// the line is.
		{0, 56, 5, "API p99 mutating · POST pods  290ms  SLO 1s", "SLI over 5m · worst of 2 series"},
		// A quarter of a 160-column console: the caption names the series.
		{0, 36, 9, "API p99 mutating  290ms  SLO 1s", "worst of 2: POST pods · SLI over 5m"},
		// Too low for a caption.
		{0, 36, 2, "API p99 mutating  290ms  SLO 1s", ""},
		// The longest class closes up rather than lose its SLO, and the
		// caption shortens rather than be cut.
		{2, 36, 9, "API p99 LIST namespace 210ms SLO 5s", "worst limitranges · SLI 5m"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%dx%d", sloClasses[tt.class].name, tt.w, tt.h), func(t *testing.T) {
			title, body := renderSpark(th, sparks(m, tt.class)[0], tt.w, tt.h)
			if title != tt.wantTitle {
				t.Errorf("title %q, want %q", title, tt.wantTitle)
			}
			lines := strings.Split(body, "\n")
			if len(lines) != tt.h {
				t.Errorf("body has %d lines, want %d:\n%s", len(lines), tt.h, body)
			}
			if tt.wantCaption != "" && lines[0] != tt.wantCaption {
				t.Errorf("caption %q, want %q", lines[0], tt.wantCaption)
			}
			if tt.wantCaption == "" && strings.Contains(body, "worst") {
				t.Errorf("a caption in a %d-row graph:\n%s", tt.h, body)
			}
		})
	}
}

func TestAPISparkWithoutCalls(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	title, body := renderSpark(NewTheme(false), sparks(sampleMetrics(), 3)[0], 56, 5)
	if title != "API p99 LIST cluster  SLO 30s" || !strings.Contains(body, "no LIST cluster calls in the last 5m") {
		t.Errorf("no calls: title %q body %q", title, body)
	}
}

func TestWorstOf(t *testing.T) {
	ss := []metrics.Series{
		{Labels: map[string]string{"verb": "POST", "resource": "pods"}, Points: [][2]float64{{10, 0.1}, {25, 0.5}, {40, 0.2}}},
		{Labels: map[string]string{"verb": "PATCH", "resource": "nodes", "subresource": "status"}, Points: [][2]float64{{10, 0.3}, {25, 0.1}, {40, 0.4}}},
		// A series gone quiet before the last step does not count there.
		{Labels: map[string]string{"verb": "DELETE", "resource": "pods"}, Points: [][2]float64{{10, 0.9}}},
	}
	got := worstOf(ss)
	if fmt.Sprint(got.Worst) != "[0.9 0.5 0.4]" || got.Series != "PATCH nodes/status" || got.Of != 2 {
		t.Errorf("worst %v of %s (%d series)", got.Worst, got.Series, got.Of)
	}
	if got := worstOf(nil); len(got.Worst) != 0 || got.Series != "" {
		t.Errorf("no series: %+v", got)
	}
	if got := seriesName(map[string]string{"subresource": "/healthz"}); got != "/healthz" {
		t.Errorf("non-resource request named %q", got)
	}
}

func TestVCyclesTheSLOClasses(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.w, m.h = 120, 40
	m.Update(fleetMsg(sampleFleet(10)))
	m.Update(metricsMsg(sampleMetrics()))
	for _, want := range []string{"API p99 mutating · POST pods", "API p99 GET · nodes", "API p99 LIST namespace", "API p99 LIST cluster", "API p99 mutating"} {
		if frame := m.View(); !strings.Contains(frame, want) {
			t.Errorf("frame does not show %q:\n%s", want, frame)
		}
		drive(t, m, keys("v"))
	}
}

func TestEtcdQuotaComesFromTheData(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	th := NewTheme(false)
	m := sampleMetrics()
	m.EtcdBytes = []float64{5 << 30, 6 << 30}
	m.EtcdQuota = 8 << 30
	s := sparks(m, 0)[3]
	title, body := renderSpark(th, s, 56, 5)
	// At 6 of 8 GiB the quota is drawn: a line along the axis's top.
	if s.limit != 8<<30 || title != "etcd DB  6.0GiB  quota 8.0GiB" || !strings.Contains(body, "8.0GiB┼───") {
		t.Errorf("quota 8 GiB: limit %g title %q\n%s", s.limit, title, body)
	}
	// Unknown: no line, the DB tops the axis, and no 2 GiB is assumed.
	m.EtcdQuota = 0
	s = sparks(m, 0)[3]
	title, body = renderSpark(th, s, 56, 5)
	if s.limit != 0 || title != "etcd DB  6.0GiB  quota unknown" || strings.Contains(body, "8.0GiB") || !strings.Contains(body, "6.0GiB┤") {
		t.Errorf("quota unknown: limit %g title %q\n%s", s.limit, title, body)
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
func TestFetchMetricsSLIAndQuota(t *testing.T) {
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
			v := FetchMetrics(context.Background(), src, 15*time.Minute, 15*time.Second)
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
