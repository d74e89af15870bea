package runs

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestReportResultJSON(t *testing.T) {
	res := ReportResult{
		Run:  Run{ID: "snapshot-20261129-175547", Kind: KindReport, Dir: "results/snapshot-20261129-175547", Outcome: Completed},
		File: "results/snapshot-20261129-175547/report.html",
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "snapshot-20261129-175547", "kind": "report", "dir": "results/snapshot-20261129-175547", "outcome": "completed",
		"file": "results/snapshot-20261129-175547/report.html",
	})
	var back ReportResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "report.html in snapshot-20261129-175547" {
		t.Errorf("summary %q", s)
	}
	cmp := ReportResult{Run: Run{ID: "compare-1", Kind: KindCompare}, File: "results/compare-1/report.html", Compared: []string{"results/snapshot-A", "results/snapshot-B/"}}
	if s := cmp.Summary(); s != "report.html in compare-1: snapshot-A vs snapshot-B" {
		t.Errorf("compare summary %q", s)
	}
}

func TestReportValidate(t *testing.T) {
	tests := []struct {
		o    ReportOptions
		want string
	}{
		{ReportOptions{Compare: []string{"a"}}, "--compare takes two snapshot folders, A and B; got 1"},
		{ReportOptions{Compare: []string{"a", "b", "c"}}, "--compare takes two snapshot folders, A and B; got 3"},
		{ReportOptions{Snapshot: "s", Compare: []string{"a", "b"}}, "report takes one snapshot folder (or --compare A B), not both"},
	}
	for _, tc := range tests {
		if err := tc.o.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	dir := t.TempDir()
	if _, err := Report(context.Background(), Env{ResultsDir: dir}, ReportOptions{}); err == nil || !strings.Contains(err.Error(), "no snapshot under "+dir) {
		t.Errorf("no snapshot: %v", err)
	}
}
