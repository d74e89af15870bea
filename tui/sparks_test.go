package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
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
	if len(tests) != len(poll.SLOClasses) {
		t.Fatalf("%d SLO classes, the test knows %d", len(poll.SLOClasses), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.class, func(t *testing.T) {
			q, err := metrics.Lookup(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			m := sampleMetrics()
			m.API[tt.query] = poll.APILatency{Worst: []float64{0.2, 0.3}, Series: "pods", Of: 1}
			s := sparks(m, i)[0]
			if s.limit != tt.want || s.limit != q.SLO.Threshold {
				t.Errorf("limit %g, want %g (catalog %g)", s.limit, tt.want, q.SLO.Threshold)
			}
			title, _, _ := renderSpark(NewTheme(false), s, 56, 5, nil)
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
	m.API["sli-list-namespace-p99"] = poll.APILatency{Worst: []float64{0.21}, Series: "limitranges", Of: 2}
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
		t.Run(fmt.Sprintf("%s-%dx%d", poll.SLOClasses[tt.class].Name, tt.w, tt.h), func(t *testing.T) {
			title, body, _ := renderSpark(th, sparks(m, tt.class)[0], tt.w, tt.h, nil)
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
	title, body, _ := renderSpark(NewTheme(false), sparks(sampleMetrics(), 3)[0], 56, 5, nil)
	if title != "API p99 LIST cluster  SLO 30s" || !strings.Contains(body, "no LIST cluster calls in the last 5m") {
		t.Errorf("no calls: title %q body %q", title, body)
	}
}

func TestVCyclesTheSLOClasses(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.setSize(120, 40)
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
	title, body, _ := renderSpark(th, s, 56, 5, nil)
	// At 6 of 8 GiB the quota is drawn: a line along the axis's top.
	if s.limit != 8<<30 || title != "etcd DB  6.0GiB  quota 8.0GiB" || !strings.Contains(body, "8.0GiB┼───") {
		t.Errorf("quota 8 GiB: limit %g title %q\n%s", s.limit, title, body)
	}
	// Unknown: no line, the DB tops the axis, and no 2 GiB is assumed.
	m.EtcdQuota = 0
	s = sparks(m, 0)[3]
	title, body, _ = renderSpark(th, s, 56, 5, nil)
	if s.limit != 0 || title != "etcd DB  6.0GiB  quota unknown" || strings.Contains(body, "8.0GiB") || !strings.Contains(body, "6.0GiB┤") {
		t.Errorf("quota unknown: limit %g title %q\n%s", s.limit, title, body)
	}
}
