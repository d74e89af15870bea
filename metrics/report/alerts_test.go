package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// The console's alerts reach the report: those of the runs in the window
// and of the snapshot itself, once each, escaped; those outside the
// window stay out.
func TestReportListsAlertsOfTheWindow(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	evil := `<script>alert(1)</script>`
	runDir, err := record.WriteRecord(root, record.Record{ID: "load-x", Kind: "load", Started: t0.Add(time.Minute), Ended: t0.Add(3 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	breach := Alert{At: t0.Add(2 * time.Minute), SLO: "sli-mutating-p99", Name: "mutating p99", Kind: AlertBreached, Value: 1.6, Threshold: 1, Scope: "POST pods", Run: "load " + evil}
	recovered := breach
	recovered.At, recovered.Kind, recovered.Value = t0.Add(4*time.Minute), AlertRecovered, 0.4
	old := breach
	old.At, old.Scope = t0.Add(-time.Hour), "PUT leases"
	if err := WriteAlerts(runDir, []Alert{breach, old}); err != nil {
		t.Fatal(err)
	}
	// A second write adds to the file; the same alert twice stays one.
	if err := WriteAlerts(runDir, []Alert{breach}); err != nil {
		t.Fatal(err)
	}
	if as, err := ReadAlerts(runDir); err != nil || len(as) != 2 {
		t.Fatalf("run folder holds %d alerts (%v), want 2", len(as), err)
	}
	dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAlerts(dir, []Alert{recovered, breach}); err != nil {
		t.Fatal(err)
	}
	html := renderReport(t, dir)
	if strings.Contains(html, evil) {
		t.Error("an alert reached the page unescaped")
	}
	if !strings.Contains(html, "Alerts seen live") || strings.Count(html, "<td>POST pods</td>") != 2 || strings.Contains(html, "PUT leases") {
		t.Errorf("want the breach and the recovery in the window once each, not the old one:\n%s", html[strings.Index(html, "<h2>SLO alerts"):strings.Index(html, "<h2>Runs in")])
	}
	if got := breach.Text(); !strings.HasSuffix(got, "mutating p99 POST pods 1.6s > 1s during load "+evil) {
		t.Errorf("alert text %q", got)
	}
	if got := recovered.Text(); !strings.Contains(got, "POST pods 400ms ≤ 1s again") {
		t.Errorf("recovery text %q", got)
	}
	if _, err := ReadAlerts(filepath.Join(root, "none")); err != nil {
		t.Errorf("a folder without alerts: %v", err)
	}
}

func TestPodStartupJudgesSteadyRunsOnly(t *testing.T) {
	steady := record.Record{Kind: "load", Result: map[string]any{"pattern": "steady", "startupLatency": map[string]any{"podStartup": map[string]any{"count": 10, "p99": 2.5}}}}
	burst := record.Record{Kind: "load", Result: map[string]any{"pattern": "burst", "startupLatency": map[string]any{"podStartup": map[string]any{"count": 10, "p99": 9.0}}}}
	if p99, judged, ok := PodStartup(steady); !ok || !judged || p99 != 2.5 {
		t.Errorf("steady: %g judged %v ok %v", p99, judged, ok)
	}
	if p99, judged, ok := PodStartup(burst); !ok || judged || p99 != 9 {
		t.Errorf("burst: %g judged %v ok %v", p99, judged, ok)
	}
	if _, _, ok := PodStartup(record.Record{Kind: "churn"}); ok {
		t.Error("a run without pod startup figures has one")
	}
}
