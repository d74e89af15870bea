package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

var densityConfig = filepath.Join("..", "..", "..", "scenarios", "density", "config.yaml")

func TestCL2BadInput(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	bin := filepath.Join(t.TempDir(), "clusterloader")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GHOSTFLEET_CL2", bin)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "0"}, "--nodes 0 is out of range: allowed are 1-10000"},
		{[]string{"--nodes", "-5"}, "--nodes -5 is out of range: allowed are 1-10000"},
		{[]string{"--nodes", "many"}, `--nodes "many" is not a whole number`},
		{[]string{"--pods-per-node", "-1"}, "--pods-per-node -1 is out of range"},
		{[]string{"--throughput", "-2"}, "--throughput -2 is out of range"},
		{[]string{"-o", "yaml"}, `--output "yaml" is not supported`},
		{[]string{"--context", "prod"}, "--context is not supported"},
		{[]string{"extra"}, `unexpected argument "extra": clusterloader flags go after --`},
		{[]string{"--config", "absent.yaml"}, "--config absent.yaml: no such file or directory"},
		{[]string{"--overrides", "absent.yaml"}, "--overrides absent.yaml: no such file or directory"},
		{[]string{"--binary", "/nonexistent/clusterloader"}, "--binary /nonexistent/clusterloader: no such file"},
		{nil, "is not up: run `ghostfleet up` first"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"cl2", "--config", densityConfig}, tt.args...)
			code, _, errOut := run(t, args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut, tt.want)
			}
		})
	}
	// The default config is relative to the repository root.
	if code, _, errOut := run(t, "cl2"); code == 0 || !strings.Contains(errOut, "run from its root, or pass --config") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// Without a binary the command says how to build one and exits non-zero.
func TestCL2NoBinary(t *testing.T) {
	t.Setenv("GHOSTFLEET_CL2", "")
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := run(t, "cl2", "--config", densityConfig)
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{
		"no ClusterLoader2 binary",
		"git clone https://github.com/kubernetes/perf-tests",
		"cd perf-tests/clusterloader2",
		"go build -o clusterloader ./cmd",
		"export GHOSTFLEET_CL2=$PWD/clusterloader",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestPrintCL2(t *testing.T) {
	res := report.CL2Result{
		ExitCode: 1,
		PodStartupLatency: []report.CL2Latency{
			{Measurement: "SaturationPodStartupLatency", Metric: "create_to_schedule", Unit: "ms", P50: 1211, P90: 2540, P99: 3150},
			{Measurement: "SaturationPodStartupLatency", Metric: "pod_startup", Unit: "ms", P50: 5210, P90: 9870, P99: 12004},
			{Measurement: "PodStartupLatency", Metric: "pod_startup", Unit: "ms", P50: 402.5, P90: 688.1, P99: 1020.7},
		},
		SchedulingThroughput: []report.CL2Throughput{{Perc50: 48.6, Perc90: 50.2, Perc99: 51, Max: 51}},
		JUnit:                &report.CL2JUnit{Tests: 3, Failures: 1, Failed: []report.CL2TestFailure{{Name: "gpu-density overall", Message: "pod startup: too high\nsecond line"}}},
	}
	var b strings.Builder
	printCL2(&b, runs.CL2Result{Run: runs.Run{Outcome: "failed: clusterloader exited with code 1"}, Nodes: 100, CL2Result: res})
	out := b.String()
	for _, want := range []string{
		"cl2: 100 nodes — failed: clusterloader exited with code 1 (clusterloader exit 1; junit: 3 tests, 1 failed)",
		"    SaturationPodStartupLatency\n      create_to_schedule            1.211    2.540    3.150\n",
		"      pod_startup                   5.210    9.870   12.004  misses the 5s SLO",
		"    PodStartupLatency\n      pod_startup                   0.403    0.688    1.021  meets the 5s SLO",
		"scheduling throughput (pods/s)  p50 48.6  p90 50.2  p99 51.0  max 51.0",
		"  failed: gpu-density overall\n    pod startup: too high …",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
