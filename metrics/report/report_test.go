package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

func TestReportIsSelfContainedAndEscaped(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	evil := `</script><script>alert(1)</script>`
	if _, err := record.WriteRecord(root, record.Record{ID: "load-x", Kind: "load", Started: t0.Add(time.Minute), Ended: t0.Add(2 * time.Minute),
		Params: map[string]string{"namespace": evil}, Phases: []record.Phase{{Name: "create", Start: t0.Add(time.Minute), End: t0.Add(90 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	src := fakeSource{"scheduler_schedule_attempts_total": {series(map[string]string{"job": evil}, 10, 20, 30)}}
	dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Fleet: Fleet{Cluster: evil}, Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	html := renderReport(t, dir)
	if strings.Contains(html, evil) {
		t.Error("a value reached the page unescaped")
	}
	if n := strings.Count(html, "<script>alert(1)"); n != 0 {
		t.Errorf("injected script appears %d times", n)
	}
	// Nothing is fetched: no src/href to any URL, no fetch or XHR.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(html); m != "" {
		t.Errorf("the report loads %q", m)
	}
	for _, bad := range []string{"fetch(", "XMLHttpRequest", "@import"} {
		if strings.Contains(html, bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	for _, want := range []string{"uPlot", "Scheduler throughput", "load-x", "SLOs", `"threshold":1`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if got, err := LatestSnapshot(root); err != nil || got != dir {
		t.Errorf("LatestSnapshot = %s, %v; want %s", got, err, dir)
	}
}

func TestReportOnMissingOrCorruptFolders(t *testing.T) {
	root := t.TempDir()
	if _, err := Report(filepath.Join(root, "nope")); err == nil || !strings.Contains(err.Error(), "is not a snapshot folder") {
		t.Errorf("missing folder: %v", err)
	}
	bad := filepath.Join(root, "snapshot-bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.json", "metrics.json", "slo.json"} {
		if err := os.WriteFile(filepath.Join(bad, f), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Report(bad); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("corrupt folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(bad, "report.html")); !os.IsNotExist(err) {
		t.Error("a report was written for a corrupt snapshot")
	}
	if _, err := LatestSnapshot(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no snapshot under") {
		t.Errorf("no snapshot: %v", err)
	}
}

func TestCompareTwoSnapshots(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	take := func(p99 float64, cluster string) string {
		src := fakeSource{`verb=~"POST|PUT|PATCH|DELETE"`: {series(map[string]string{"resource": "pods"}, p99/2, p99)}}
		dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Fleet: Fleet{Cluster: cluster}, Start: t0, End: t0.Add(time.Minute), Step: 15 * time.Second, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		t0 = t0.Add(time.Second) // a distinct folder name
		return dir
	}
	a, b := take(0.4, "<b>a</b>"), take(1.2, "b")
	out, err := Compare(root, a, b)
	if err != nil {
		t.Fatal(err)
	}
	var c Comparison
	readJSON(t, filepath.Join(filepath.Dir(out), "compare.json"), &c)
	for _, r := range c.SLOs {
		if r.ID == "sli-mutating-p99" {
			if r.A.Status != StatusPass || r.B.Status != StatusFail || math.Abs(r.Ratio-3) > 1e-9 {
				t.Errorf("mutating SLO row %+v, want pass → fail, 3×", r)
			}
		}
	}
	html, _ := os.ReadFile(out)
	if strings.Contains(string(html), "<b>a</b>") || !strings.Contains(string(html), "(3.00×)") {
		t.Errorf("comparison page: escaped %v, ratio shown %v", !strings.Contains(string(html), "<b>a</b>"), strings.Contains(string(html), "(3.00×)"))
	}
	if _, err := Compare(root, a, filepath.Join(root, "missing")); err == nil {
		t.Error("comparing with a missing folder succeeded")
	}
}

// renderReport writes dir's report and returns its HTML.
func renderReport(t *testing.T, dir string) string {
	t.Helper()
	out, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
