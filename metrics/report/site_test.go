package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

func TestBuildSite(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	if _, err := record.WriteRecord(root, record.Record{ID: "<i>x</i>", Kind: "load", Outcome: "completed", Started: t0}); err != nil {
		t.Fatal(err)
	}
	bench, err := record.NewRunDir(root, "bench-load", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := record.WriteJSON(bench, "bench.json", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bench, "report.html"), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := BuildSite(root, out)
	if err != nil || n != 2 {
		t.Fatalf("BuildSite = %d, %v", n, err)
	}
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	html := string(index)
	first, second := strings.Index(html, "bench-load-20261129-170000"), strings.Index(html, "load-20261129-160000")
	if first < 0 || second < 0 || first > second {
		t.Errorf("index does not list the runs newest first:\n%s", html)
	}
	if !strings.Contains(html, `href="bench-load-20261129-170000/report.html"`) || !strings.Contains(html, "<td>bench-load</td>") {
		t.Errorf("index lacks the report link or the kind:\n%s", html)
	}
	if _, err := os.Stat(filepath.Join(out, "load-20261129-160000", "run.json")); err != nil {
		t.Errorf("run files not copied: %v", err)
	}
	if kind, stamp := splitRunName("churn-limited-20261129-171822-2"); kind != "churn-limited" || stamp != "20261129-171822-2" {
		t.Errorf("splitRunName = %q, %q", kind, stamp)
	}
}
