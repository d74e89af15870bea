package runs

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func TestSnapshotResultJSON(t *testing.T) {
	start := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	res := SnapshotResult{
		Run:    Run{ID: "snapshot-20261129-171500", Kind: "snapshot", Dir: "results/snapshot-20261129-171500", Outcome: Completed},
		Window: report.Window{Start: start, End: start.Add(15 * time.Minute)},
		Source: report.SourcePrometheus,
		Verdicts: []report.Verdict{
			{ID: "sli-mutating-p99", Status: report.StatusPass, Threshold: 1, Value: 0.2},
			{ID: "sli-list-namespace-p99", Status: report.StatusFail, Threshold: 5, Value: 7},
			{ID: "sli-list-cluster-p99", Status: report.StatusPass, Threshold: 30, Value: 2},
			{ID: "pod-startup-p99", Status: report.StatusNoData, Threshold: 5},
		},
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "snapshot-20261129-171500", "kind": "snapshot", "dir": "results/snapshot-20261129-171500", "outcome": "completed",
		"source": "prometheus", "window": map[string]any{"start": "2026-11-29T17:00:00Z", "end": "2026-11-29T17:15:00Z"},
	})
	if vs, _ := got["verdicts"].([]any); len(vs) != 4 {
		t.Errorf("verdicts %v", got["verdicts"])
	}
	var back SnapshotResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "SLOs: 2 pass, 1 fail, 1 no data" {
		t.Errorf("summary %q", s)
	}
	if res.Direct() || !(SnapshotResult{Source: metrics.DirectSourceName}).Direct() {
		t.Error("Direct() does not tell the sources apart")
	}
	if s := (SnapshotResult{Verdicts: res.Verdicts[:1]}).Summary(); s != "SLOs: 1 pass" {
		t.Errorf("summary of one %q", s)
	}
}

func TestSnapshotValidate(t *testing.T) {
	with := func(edit func(*SnapshotOptions)) SnapshotOptions {
		o := NewSnapshotOptions()
		edit(&o)
		return o
	}
	tests := []struct {
		o    SnapshotOptions
		want string
	}{
		{with(func(o *SnapshotOptions) { o.Since = 0 }), "--since 0s is out of range: it must be more than 0 (e.g. 15m)"},
		{with(func(o *SnapshotOptions) { o.Since = -5 * time.Minute }), "--since -5m0s is out of range: it must be more than 0 (e.g. 15m)"},
		{with(func(o *SnapshotOptions) { o.Step = 500 * time.Millisecond }), "--step 500ms is out of range: it must be at least 1s"},
		{with(func(o *SnapshotOptions) { o.Source = "thanos" }), `--source "thanos" is not a source: use auto, prometheus or direct`},
		{with(func(o *SnapshotOptions) { o.Source, o.Sample = SourceDirect, 5*time.Second }), "--sample 5s is out of range: it must be at least --step (15s), for two scrapes to take rates between"},
		{with(func(o *SnapshotOptions) { o.Source, o.RunID = SourceDirect, "load-1" }), "--run load-1 needs Prometheus's history: the direct source samples the components now (drop --source direct)"},
	}
	for _, tc := range tests {
		if err := tc.o.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := NewSnapshotOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
