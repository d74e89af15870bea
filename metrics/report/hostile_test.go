package report

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Hostile names: what a cluster can hold (namespaces, labels, pod names,
// condition messages, run parameters) with HTML-ish or terminal-escape
// content cannot inject into a report or the site's index, neither as
// markup nor inside the <script> JSON the charts read (#16 item 5).
func TestHostileNamesCannotInject(t *testing.T) {
	hostile := []string{
		`</script><script>alert(1)</script>`,
		`<img src=x onerror=alert(2)>`,
		`"><svg onload=alert(3)>`,
		"\x1b]0;owned\x07\x1b[2J\x1b[31mred",
		`{{.Run}}`,
		`'+alert(4)+'`,
	}
	all := strings.Join(hostile, " ")
	root, site := t.TempDir(), t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	if _, err := record.WriteRecord(root, record.Record{
		ID: "load-" + hostile[1], Kind: "load", Cluster: hostile[2], Profile: hostile[0], Outcome: "failed: " + all,
		Started: t0.Add(time.Minute), Ended: t0.Add(2 * time.Minute),
		Params: map[string]string{"namespace": hostile[0], "label": hostile[3], "message": all},
		Phases: []record.Phase{{Name: all, Start: t0.Add(time.Minute), End: t0.Add(90 * time.Second)}},
		Result: map[string]any{"conditions": []string{all}},
	}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": hostile[0], "pod": hostile[1], "reason": hostile[3], "node": hostile[2]}
	src := fakeSource{
		"scheduler_schedule_attempts_total":  {series(labels, 10, 20, 30)},
		`verb=~"POST|PUT|PATCH|DELETE"`:      {series(labels, 2, 3)},
		"apiserver_request_duration_seconds": {series(labels, 0.5)},
	}
	dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Fleet: Fleet{Cluster: all, Profile: hostile[1]}, Note: all,
		Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSite(root, site); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{out, filepath.Join(site, "index.html")} {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		html := string(data)
		for _, bad := range []string{"<script>alert", "<img src=x", "<svg onload", "\x1b", "\x07"} {
			if strings.Contains(html, bad) {
				i := strings.Index(html, bad)
				t.Errorf("%s holds %q unescaped: …%s…", filepath.Base(page), bad, html[max(0, i-80):min(len(html), i+80)])
			}
		}
		// The charts still get the names, escaped inside their JSON.
		if !strings.HasSuffix(page, "index.html") && !strings.Contains(html, `\u003cimg src=x onerror=alert(2)\u003e`) {
			t.Errorf("report.html's chart data lacks the escaped label")
		}
		// Only GhostFleet's own scripts: the two the report carries, none
		// on the site's index.
		want := 2
		if strings.HasSuffix(page, "index.html") {
			want = 0
		}
		if n := len(regexp.MustCompile(`(?i)<script`).FindAllString(html, -1)); n != want {
			t.Errorf("%s has %d <script> tags, want %d", filepath.Base(page), n, want)
		}
	}
}

// An interrupted snapshot writes nothing: no folder, no temporary file.
func TestInterruptedSnapshotWritesNothing(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	if _, _, err := Snapshot(ctx, SnapshotOptions{Root: root, Start: t0, End: t0.Add(time.Minute), Step: 15 * time.Second, Source: fakeSource{}}); err == nil {
		t.Fatal("an interrupted snapshot succeeded")
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("an interrupted snapshot left %d entries", len(entries))
	}
}
