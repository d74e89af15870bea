package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

type namedSource string

func (n namedSource) Range(context.Context, string, time.Time, time.Time, time.Duration) ([]metrics.Series, error) {
	return []metrics.Series{{Labels: map[string]string{"from": string(n)}}}, nil
}

// The charts read the direct scrape, with the build's progress in the
// header, until Prometheus is handed over.
func TestHandoverNamesTheBuildThenSwitches(t *testing.T) {
	h := &handover{src: namedSource("direct"), name: "direct scrape"}
	from := func() string {
		s, err := h.Range(context.Background(), "q", time.Now(), time.Now(), time.Second)
		if err != nil || len(s) != 1 {
			t.Fatalf("Range: %v, %v", s, err)
		}
		return s[0].Labels["from"]
	}
	if got := h.SourceName(); got != "direct scrape" {
		t.Errorf("before the build: %q", got)
	}
	h.report(progress.Event{Kind: progress.Start, Step: "build prometheus", Estimate: 7 * time.Minute})
	if got := h.SourceName(); !strings.HasPrefix(got, "direct scrape, Prometheus building 0s of ~7m") {
		t.Errorf("during the build: %q", got)
	}
	h.report(progress.Event{Kind: progress.Start, Step: "prometheus"}) // not a build: ignored
	if from() != "direct" {
		t.Errorf("charts left the direct scrape before Prometheus was handed over")
	}
	h.set(namedSource("prometheus"), "Prometheus")
	if got := h.SourceName(); got != "Prometheus" {
		t.Errorf("after the handover: %q", got)
	}
	if from() != "prometheus" {
		t.Errorf("charts still read the direct scrape after the handover")
	}
}
