package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// hiddenSource is fakeSource on a cluster whose scheduler and etcd
// /metrics cannot be read.
type hiddenSource struct{ fakeSource }

func (hiddenSource) Availability(context.Context) metrics.Availability {
	return metrics.Availability{
		metrics.ComponentScheduler: "scheduler /metrics unreachable: connection refused",
		metrics.ComponentEtcd:      "etcd /metrics hidden: attached with --metrics apiserver-only",
	}
}

// A snapshot where components are hidden: their queries are "not
// available" with the reason (not "no data"), a series Prometheus still
// has is kept, the apiserver's SLIs are judged, and the report says so.
func TestSnapshotMarksUnavailableComponents(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	src := hiddenSource{fakeSource{
		`verb=~"POST|PUT|PATCH|DELETE"`: {series(map[string]string{"resource": "pods", "verb": "POST"}, 0.2, 0.3)},
		// History from before etcd went away is kept.
		"etcd_server_quota_backend_bytes": {series(nil, 8e9)},
	}}
	dir, verdicts, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	run, ms, _, err := LoadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Unavailable[metrics.ComponentScheduler] == "" || len(run.Unavailable) != 2 {
		t.Errorf("run.json unavailable %v", run.Unavailable)
	}
	got := map[string]string{}
	for _, q := range ms {
		got[q.ID] = q.Availability()
	}
	want := map[string]string{
		"sli-mutating-p99":     SeriesAvailable,
		"sli-read-single-p99":  SeriesNoData, // the apiserver is there: no GETs in the window
		"scheduler-throughput": SeriesNotAvailable,
		"scheduling-sli-p99":   SeriesNotAvailable,
		"etcd-db-size":         SeriesNotAvailable,
		"etcd-quota":           SeriesAvailable,
		"etcd-request-p99":     SeriesFailed, // fakeSource fails it; it is the apiserver's anyway
		"apf-rejected":         SeriesNoData,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %s, want %s", id, got[id], w)
		}
	}
	byID := map[string]Verdict{}
	for _, v := range verdicts {
		byID[v.ID] = v
	}
	if v := byID["scheduling-sli-p99"]; v.Status != StatusNotAvailable || v.Note != "not available on this cluster (scheduler /metrics unreachable: connection refused)" || v.Component != metrics.ComponentScheduler {
		t.Errorf("scheduling verdict %+v", v)
	}
	if v := byID["sli-mutating-p99"]; v.Status != StatusPass {
		t.Errorf("mutating verdict %+v: the apiserver's SLI must still be judged", v)
	}
	if v := byID["pod-startup-p99"]; v.Component != metrics.ComponentWatch {
		t.Errorf("pod startup verdict %+v: measured from the watch", v)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "metrics.json"))
	var plain []map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatal(err)
	}
	for _, q := range plain {
		if q["id"] == "scheduler-throughput" && q["unavailable"] != "scheduler /metrics unreachable: connection refused" {
			t.Errorf("metrics.json scheduler-throughput: %v", q)
		}
	}
	html, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	for _, s := range []string{"Not available on this cluster:", "scheduler /metrics unreachable: connection refused", "not available on this cluster (\"+q.unavailable+\")"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("report lacks %q", s)
		}
	}
}
