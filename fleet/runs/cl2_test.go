package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func TestCL2ResultJSON(t *testing.T) {
	res := CL2Result{
		Run:   Run{ID: "cl2-20261129-180000", Kind: record.KindCL2, Dir: "results/cl2-20261129-180000", Outcome: Completed},
		Nodes: 100,
		CL2Result: report.CL2Result{
			ReportDir: "report", ExitCode: 0, NamespacePrefix: "test-abc",
			PodStartupLatency: []report.CL2Latency{
				{Measurement: "SaturationPodStartupLatency", Metric: "pod_startup", Unit: "ms", P50: 5210, P90: 9870, P99: 12004},
				{Measurement: "PodStartupLatency", Metric: "pod_startup", Unit: "ms", P50: 402.5, P90: 688.1, P99: 1020.7},
				{Measurement: "PodStartupLatency", Metric: "create_to_schedule", Unit: "ms", P99: 90000},
			},
			SchedulingThroughput: []report.CL2Throughput{{Perc50: 48.6, Perc90: 50.2, Perc99: 51, Max: 51}},
			JUnit:                &report.CL2JUnit{Tests: 3},
		},
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "cl2-20261129-180000", "kind": "cl2", "dir": "results/cl2-20261129-180000", "outcome": "completed",
		"nodes": 100.0, "exitCode": 0.0, "namespacePrefix": "test-abc", "reportDir": "report",
	})
	if l, _ := got["podStartupLatency"].([]any); len(l) != 3 {
		t.Errorf("podStartupLatency %v", got["podStartupLatency"])
	}
	var back CL2Result
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "100 nodes: pod_startup p99 12.00s, 48.6 pods/s; junit 3 tests, 0 failed" {
		t.Errorf("summary %q", s)
	}
	failed := CL2Result{Run: Run{Outcome: "failed: clusterloader exited with code 1"}, Nodes: 20, CL2Result: report.CL2Result{ExitCode: 1}}
	if s := failed.Summary(); s != "20 nodes, failed (exit 1)" {
		t.Errorf("failed summary %q", s)
	}
	if s := (CL2Result{Run: Run{Outcome: Interrupted}, Nodes: 20}).Summary(); s != "20 nodes, interrupted" {
		t.Errorf("interrupted summary %q", s)
	}
}

func TestCL2Validate(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ints := func(n int) *int { return &n }
	with := func(edit func(*CL2Options)) CL2Options {
		o := NewCL2Options()
		o.Config = config
		edit(&o)
		return o
	}
	tests := []struct {
		o    CL2Options
		want string
	}{
		{with(func(o *CL2Options) { o.Nodes = ints(0) }), "--nodes 0 is out of range: allowed are 1-10000 (default: the fleet's fake node count)"},
		{with(func(o *CL2Options) { o.Nodes = ints(-5) }), "--nodes -5 is out of range: allowed are 1-10000 (default: the fleet's fake node count)"},
		{with(func(o *CL2Options) { o.Nodes = ints(10001) }), "--nodes 10001 is out of range: allowed are 1-10000 (default: the fleet's fake node count)"},
		{with(func(o *CL2Options) { o.PodsPerNode = -1 }), "--pods-per-node -1 is out of range: allowed are 1-1000 (0: the config's default)"},
		{with(func(o *CL2Options) { o.Throughput = -2 }), "--throughput -2 is out of range: allowed are more than 0 and at most 5000 pods/s (0: the config's default)"},
		{with(func(o *CL2Options) { o.Config = filepath.Join(dir, "absent.yaml") }), "--config " + filepath.Join(dir, "absent.yaml") + ": no such file or directory"},
		{with(func(o *CL2Options) { o.Overrides = []string{dir} }), "--overrides " + dir + " is a folder: it must name a file"},
		{with(func(o *CL2Options) { o.Config = cl2.DefaultConfig }), "(the default is relative to the GhostFleet repository: run from its root, or pass --config)"},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		if err == nil || (err.Error() != tc.want && !strings.HasSuffix(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := with(func(o *CL2Options) { o.Nodes, o.PodsPerNode, o.Throughput = ints(100), 6, 200 }).Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// Without -v only clusterloader's error lines reach the user, as
// warnings; with -v every line does. Lines may arrive split.
func TestCL2LogLines(t *testing.T) {
	lines := "I1129 18:00:00.000000 1 x.go:1] Using config\nE1129 18:00:01.000000 1 x.go:2] measurement failed\nF1129 18:00:02.000000 1 x.go:3] fat"
	tests := []struct {
		verbose bool
		want    []string
	}{
		{false, []string{"! clusterloader: E1129 18:00:01.000000 1 x.go:2] measurement failed", "! clusterloader: F1129 18:00:02.000000 1 x.go:3] fatal"}},
		{true, []string{"i clusterloader: I1129 18:00:00.000000 1 x.go:1] Using config", "! clusterloader: E1129 18:00:01.000000 1 x.go:2] measurement failed", "! clusterloader: F1129 18:00:02.000000 1 x.go:3] fatal"}},
	}
	for _, tt := range tests {
		var got []string
		l := &cl2LogLines{verbose: tt.verbose, report: func(e progress.Event) {
			kind := map[progress.Kind]string{progress.Info: "i", progress.Warn: "!"}[e.Kind]
			got = append(got, kind+" "+e.Message)
		}}
		for _, chunk := range []string{lines[:30], lines[30:], "al\n"} {
			if _, err := l.Write([]byte(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("verbose %v:\n got %q\nwant %q", tt.verbose, got, tt.want)
		}
	}
}
