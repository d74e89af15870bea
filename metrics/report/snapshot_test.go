package report

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// fakeSource answers from a table keyed by a substring of the PromQL.
type fakeSource map[string][]metrics.Series

func (f fakeSource) Range(_ context.Context, q string, _, _ time.Time, _ time.Duration) ([]metrics.Series, error) {
	for k, s := range f {
		if strings.Contains(q, k) {
			return s, nil
		}
	}
	if strings.Contains(q, "etcd_request") {
		return nil, errors.New("boom")
	}
	return nil, nil
}

func series(labels map[string]string, values ...float64) metrics.Series {
	s := metrics.Series{Labels: labels}
	for i, v := range values {
		s.Points = append(s.Points, [2]float64{float64(1000 + 15*i), v})
	}
	return s
}

func TestSnapshotWritesFilesAndJudgesSLOs(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	// Inside the window: a steady load with a 7s startup p99, and a burst
	// with 60s (never judged against the steady-state SLO); one outside.
	if _, err := record.WriteRecord(root, record.Record{ID: "load-in", Kind: "load", Started: t0.Add(time.Minute), Ended: t0.Add(3 * time.Minute),
		Result: map[string]any{"pattern": "steady", "startupLatency": map[string]any{"podStartup": map[string]any{"count": 10, "p99": 7.0}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := record.WriteRecord(root, record.Record{ID: "load-burst", Kind: "load", Started: t0.Add(4 * time.Minute), Ended: t0.Add(5 * time.Minute),
		Result: map[string]any{"pattern": "burst", "scheduleRate": 52.0, "startupLatency": map[string]any{"podStartup": map[string]any{"count": 8000, "p99": 60.0}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := record.WriteRecord(root, record.Record{ID: "load-old", Kind: "load", Started: t0.Add(-time.Hour), Ended: t0.Add(-50 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	src := fakeSource{
		`verb=~"POST|PUT|PATCH|DELETE"`: {series(map[string]string{"resource": "pods", "verb": "POST"}, 0.2, 1.5, 0.3)},
		`verb="GET"`:                    {series(map[string]string{"resource": "nodes"}, 0.01, 0.02)},
		"etcd_mvcc_db_total_size":       {series(nil, 1e6, 2e6)},
		// The run of issue #11: a namespace LIST of 7s, which CL2's 30s
		// check passes and upstream's 5s SLO does not.
		`scope="namespace"`: {series(map[string]string{"resource": "pods", "scope": "namespace"}, 0.5, 7.0)},
		`scope="cluster"`:   {series(map[string]string{"resource": "pods", "scope": "cluster"}, 7.0, 20.0)},
	}
	dir, verdicts, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Fleet: Fleet{Cluster: "c"}, Start: t0, End: t0.Add(10 * time.Minute), Step: 15 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Verdict{}
	for _, v := range verdicts {
		got[v.ID] = v
	}
	tests := []struct {
		id, status string
		value      float64
	}{
		{"sli-mutating-p99", StatusFail, 1.5},
		{"sli-read-single-p99", StatusPass, 0.02},
		{"sli-list-namespace-p99", StatusFail, 7},
		{"sli-list-cluster-p99", StatusPass, 20},
		{"scheduling-sli-p99", StatusNoData, 0},
		{"pod-startup-p99", StatusFail, 7},
	}
	for _, tt := range tests {
		if v := got[tt.id]; v.Status != tt.status || v.Value != tt.value {
			t.Errorf("%s: %+v, want %s at %v", tt.id, v, tt.status, tt.value)
		}
	}
	if got["sli-mutating-p99"].Where != "{resource=pods,verb=POST}" || got["pod-startup-p99"].Where != "load-in" {
		t.Errorf("where: %q, %q", got["sli-mutating-p99"].Where, got["pod-startup-p99"].Where)
	}
	if n := got["pod-startup-p99"].Note; !strings.Contains(n, "load-burst") || !strings.Contains(n, "not judged") {
		t.Errorf("the burst must be named as not judged: note %q", n)
	}
	if n := got["sli-list-namespace-p99"].Note; !strings.Contains(n, "ClusterLoader2") {
		t.Errorf("a namespace LIST failing only upstream's threshold must say CL2 differs: note %q", n)
	}
	for id, origin := range map[string]string{"sli-mutating-p99": metrics.OriginUpstream, "pod-startup-p99": metrics.OriginUpstream, "scheduling-sli-p99": metrics.OriginGhostFleet} {
		if got[id].Origin != origin {
			t.Errorf("%s origin %q, want %q", id, got[id].Origin, origin)
		}
	}

	var run SnapshotRun
	readJSON(t, filepath.Join(dir, "run.json"), &run)
	if len(run.Runs) != 2 || run.Runs[0].ID != "load-in" {
		t.Errorf("runs in window: %+v", run.Runs)
	}
	var ms []QuerySeries
	readJSON(t, filepath.Join(dir, "metrics.json"), &ms)
	if len(ms) != len(metrics.Catalog) {
		t.Errorf("metrics.json has %d queries, want %d", len(ms), len(metrics.Catalog))
	}
	for _, q := range ms {
		if q.ID == "etcd-request-p99" && q.Error == "" {
			t.Error("a failed query must say so in metrics.json")
		}
		if q.ID == "etcd-db-size" && len(q.Series) != 1 {
			t.Errorf("etcd-db-size series %+v", q.Series)
		}
	}
	// A snapshot folder is not a run: a second snapshot does not list it.
	runs, err := record.RunsIn(root, t0, t0.Add(time.Hour))
	if err != nil || len(runs) != 2 {
		t.Errorf("record.RunsIn after a snapshot: %d runs, %v", len(runs), err)
	}
}

// A snapshot from the direct scrape source says so in run.json, in every
// SLO verdict it judged from the series, and in the report.
func TestSnapshotMarksItsSource(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	src := fakeSource{`verb=~"POST|PUT|PATCH|DELETE"`: {series(map[string]string{"resource": "pods", "verb": "POST"}, 0.2)}}
	note := "the window is the 30s the components were sampled for"
	dir, verdicts, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Start: t0, End: t0.Add(30 * time.Second), Step: 15 * time.Second,
		Source: src, SourceName: metrics.DirectSourceName, Note: note})
	if err != nil {
		t.Fatal(err)
	}
	var run SnapshotRun
	readJSON(t, filepath.Join(dir, "run.json"), &run)
	if run.Source != "direct scrape" || run.Note != note {
		t.Errorf("run.json source %q, note %q", run.Source, run.Note)
	}
	var fromFile []Verdict
	readJSON(t, filepath.Join(dir, "slo.json"), &fromFile)
	for i, v := range verdicts {
		want := "direct scrape"
		if v.ID == "pod-startup-p99" {
			want = "run records"
		}
		if v.Source != want || fromFile[i].Source != want {
			t.Errorf("verdict %s: source %q (file %q), want %q", v.ID, v.Source, fromFile[i].Source, want)
		}
	}
	out, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(out)
	if !strings.Contains(string(html), `Source: <b class="source">direct scrape</b>`) || !strings.Contains(string(html), note) {
		t.Error("the report does not show the direct source and its note")
	}
	// No run overlaps the window: the charts get an empty list of phases.
	if !strings.Contains(string(html), "const PHASES = [];") {
		t.Error("a window without runs must chart no phases, not null")
	}

	// Without a name the source is Prometheus, as before.
	dir, _, err = Snapshot(context.Background(), SnapshotOptions{Root: root, Start: t0, End: t0.Add(time.Minute), Step: 15 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var plain SnapshotRun
	readJSON(t, filepath.Join(dir, "run.json"), &plain)
	if plain.Source != "prometheus" || plain.Note != "" {
		t.Errorf("default source %q, note %q", plain.Source, plain.Note)
	}
}

func TestSnapshotRejectsAnEmptyWindowAndWritesNothing(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	_, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Start: now, End: now.Add(-time.Minute), Source: fakeSource{}})
	if err == nil || !strings.Contains(err.Error(), "the start must be before the end") {
		t.Errorf("error %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("%d entries written", len(entries))
	}
}

// TestFindRun: a run is found by its ID, and by its folder, whose name
// (from its start) can differ from the ID (taken just before it); where
// one run's folder name is another's ID, the ID wins.
func TestFindRun(t *testing.T) {
	root := t.TempDir()
	dir, err := record.WriteRecord(root, record.Record{ID: "churn-1", Kind: "churn", Started: time.Now().Add(-time.Minute), Ended: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := record.FindRun(root, "churn-1"); err != nil || r.Kind != "churn" {
		t.Errorf("FindRun = %+v, %v", r, err)
	}
	if r, err := record.FindRun(root, filepath.Base(dir)); err != nil || r.ID != "churn-1" {
		t.Errorf("FindRun(%q) = %+v, %v; want the run in that folder", filepath.Base(dir), r, err)
	}
	if _, err := record.WriteRecord(root, record.Record{ID: filepath.Base(dir), Kind: "load", Started: time.Now().Add(time.Hour), Ended: time.Now().Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if r, err := record.FindRun(root, filepath.Base(dir)); err != nil || r.Kind != "load" {
		t.Errorf("FindRun(%q) = %+v, %v; want the run with that ID, not the one in that folder", filepath.Base(dir), r, err)
	}
	if _, err := record.FindRun(root, "nope"); err == nil || !strings.Contains(err.Error(), `no run with ID or folder "nope"`) {
		t.Errorf("missing run: %v", err)
	}
}

func TestCatalogIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, q := range metrics.Catalog {
		if q.ID == "" || q.Title == "" || q.Unit == "" || q.PromQL == "" || seen[q.ID] {
			t.Errorf("query %+v", q)
		}
		seen[q.ID] = true
	}
	for _, id := range []string{"apiserver-p99-by-verb", "scheduler-throughput", "scheduling-sli-p99", "etcd-request-p99", "etcd-db-size",
		"apf-dispatched", "apf-rejected", "apf-wait-p99", "watchers", "inflight", "sli-mutating-p99", "sli-read-single-p99", "sli-list-namespace-p99", "sli-list-cluster-p99", "etcd-quota"} {
		if !seen[id] {
			t.Errorf("catalog lacks %s", id)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
