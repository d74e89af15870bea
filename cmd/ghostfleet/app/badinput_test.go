package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/tui"
)

// badInputFixtures are the files the battery's bad inputs point at.
type badInputFixtures struct {
	results, readOnly, aFile, notYAML, noContext, corruptSnapshot, corruptState, textBinary string
	busyPort                                                                                int
}

func newBadInputFixtures(t *testing.T) badInputFixtures {
	t.Helper()
	dir := t.TempDir()
	f := badInputFixtures{
		results:    filepath.Join(dir, "results"),
		readOnly:   filepath.Join(dir, "read-only"),
		aFile:      filepath.Join(dir, "a-file"),
		notYAML:    filepath.Join(dir, "not-yaml"),
		noContext:  filepath.Join(dir, "kubeconfig"),
		textBinary: filepath.Join(dir, "clusterloader.txt"),
	}
	write := func(path, text string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(f.aFile, "not a folder\n", 0o644)
	write(f.notYAML, "clusters: [unclosed\n\t{{", 0o644)
	write(f.noContext, "apiVersion: v1\nkind: Config\ncurrent-context: lab\ncontexts:\n- name: lab\n  context: {cluster: lab, user: u}\nclusters:\n- name: lab\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: u\n  user: {token: x}\n", 0o600)
	write(f.textBinary, "clusterloader, honest\n", 0o644)
	if err := os.MkdirAll(f.readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	// A snapshot folder whose slo.json was cut off half-way.
	f.corruptSnapshot = filepath.Join(f.results, "snapshot-20260101-000000")
	write(filepath.Join(f.corruptSnapshot, "run.json"), `{"window":{"start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:15:00Z"},"fleet":{}}`, 0o644)
	write(filepath.Join(f.corruptSnapshot, "metrics.json"), "[]\n", 0o644)
	write(filepath.Join(f.corruptSnapshot, "slo.json"), `[{"id":"api-call-latency","val`, 0o644)
	// A saved state whose record is not JSON.
	f.corruptState = filepath.Join(f.results, "state-20260101-000000")
	write(filepath.Join(f.corruptState, "run.json"), "{\"kind\":\"state\",\"id\":", 0o644)
	write(filepath.Join(f.corruptState, "etcd.db"), "not etcd\n", 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.busyPort = l.Addr().(*net.TCPAddr).Port
	return f
}

// runFolders lists what a battery case may have left in the results
// folder: anything but the fixtures.
func runFolders(t *testing.T, root string) []string {
	t.Helper()
	entries, _ := os.ReadDir(root)
	var out []string
	for _, e := range entries {
		if n := e.Name(); n != "snapshot-20260101-000000" && n != "state-20260101-000000" {
			out = append(out, n)
		}
	}
	return out
}

// checkOneLine fails when msg is not one line, or is a panic or a stack.
func checkOneLine(t *testing.T, msg string) {
	t.Helper()
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic:") {
		t.Errorf("a panic or a stack trace:\n%s", msg)
	}
	if lines := strings.Count(strings.TrimSpace(msg), "\n") + 1; lines > 1 {
		t.Errorf("the error is %d lines, want one:\n%s", lines, msg)
	}
}

// TestBadInputBattery: every command and every console form, given bad
// input (numbers out of range or not numbers, unknown names, bad
// durations, missing or corrupt run folders, a kubeconfig that does not
// work, a context that does not exist, a port in use, an unwritable
// results folder, a CL2 binary that is not one), answers with one line
// naming the value and what is allowed, exits non-zero, leaves no run
// folder and never panics. The table is summarised in the README's
// "Reliability and safety".
func TestBadInputBattery(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("GHOSTFLEET_CL2", "")
	f := newBadInputFixtures(t)
	port := strconv.Itoa(f.busyPort)
	tests := []struct {
		args []string
		want string
	}{
		// Numbers out of range, or not numbers.
		{[]string{"nodes", "1e3"}, `node count "1e3" is not a whole number`},
		{[]string{"nodes", "10001"}, "node count 10001 is out of range: allowed are 0-10000"},
		{[]string{"up", "--nodes", "lots"}, `--nodes "lots" is not a whole number`},
		{[]string{"load", "0", "1"}, "pod count 0 is out of range: allowed are 1-100000"},
		{[]string{"load", "10", "1", "--rate", "fast"}, `--rate "fast" is not a number`},
		{[]string{"load", "10", "1", "--rate", "9000"}, "rate 9000 is out of range"},
		{[]string{"churn", "1e9", "60"}, "rate 1e+09 is out of range"},
		{[]string{"churn-limited", "10", "60", "--concurrency", "many"}, `--concurrency "many" is not a whole number`},
		{[]string{"train", "--jobs", "20000"}, "job count 20000 is out of range: allowed are 1-10000"},
		{[]string{"train", "--gpus-per-pod", "0"}, "GPUs per pod 0 is out of range"},
		{[]string{"train", "--hold", "-1s"}, "hold -1s is out of range: allowed are 0 (end when every job runs) to 24h"},
		{[]string{"train", "--admission", "kueue"}, `--admission "kueue": allowed are none, quota`},
		{[]string{"train", "--admission", "quota", "--hold", "1m", "--restart", "job"}, "--admission quota with --restart job: a job made again would keep its admission"},
		{[]string{"train", "--admission", "quota", "--ungate-workers", "65"}, "--ungate-workers 65 is out of range: allowed are 0 (the default, 8) to 64"},
		{[]string{"train", "--ungate-workers", "-1"}, "--ungate-workers -1 is out of range: allowed are 0 (the default, 8) to 64"},
		{[]string{"train", "--admission", "quota", "--admit-by", "webhook"}, `--admit-by "webhook": allowed are gate, suspend`},
		{[]string{"train", "--admit-by", "suspend"}, "--admit-by suspend sets how quota admission holds jobs back: set --admission quota too"},
		{[]string{"train", "--admission", "quota", "--admit-by", "suspend", "--ungate-workers", "2"}, "--ungate-workers 2 sets how quota admission removes gates: set --admission quota too, by gate (--admit-by suspend removes none)"},
		{[]string{"train", "--ungate-workers", "4"}, "--ungate-workers 4 sets how quota admission removes gates: set --admission quota too, by gate (--admit-by suspend removes none)"},
		{[]string{"train", "--trace-apiserver", "30s"}, "apiserver trace 30s is of the hold's first seconds: set --hold too"},
		{[]string{"train", "--hold", "1m", "--trace-apiserver", "2m"}, "apiserver trace 2m0s is out of range: allowed are 0 (none) to the hold (1m0s), at most 10m0s"},
		{[]string{"train", "--hold", "1m", "--trace-apiserver", "1500ms"}, "apiserver trace 1.5s is not whole seconds: allowed are whole seconds up to the hold (1m0s), at most 10m0s"},
		{[]string{"train", "--trace-etcd", "30s"}, "etcd trace 30s is of the hold's first seconds: set --hold too"},
		{[]string{"train", "--hold", "1m", "--trace-etcd", "-1s"}, "etcd trace -1s is out of range: allowed are 0 (none) to the hold (1m0s), at most 10m0s"},
		{[]string{"train", "--hold", "1m", "--trace-etcd", "30s", "--kubeconfig", f.noContext}, "etcd trace 30s is of GhostFleet's own fleets, whose etcd serves one: "},
		{[]string{"fault", "node-down", "--fail-pods"}, "unknown flag: --fail-pods"},
		{[]string{"binpack", "--fill", "1.5"}, "fill 1.5 is out of range"},
		{[]string{"fault", "nvlink", "--nodes", "many"}, `--nodes "many" is not a whole number`},
		{[]string{"fault", "gpu-xid", "--xid", "abc"}, `--xid "abc" is not a whole number`},
		{[]string{"up", "--prometheus-port", "99999999999999999999"}, "is out of range"},
		{[]string{"probe", "--trials", "0"}, "--trials 0 is out of range: allowed are 1-1000"},
		{[]string{"probe", "--cpu", "4096"}, "--cpu 4096 is out of range: allowed are -1 (any) and 0-"},
		{[]string{"pprof", "--duration", "0s"}, "--duration 0s is out of range: allowed are 1s-10m"},
		// Unknown names.
		{[]string{"up", "--profile", "turbo"}, `unknown profile "turbo": allowed are`},
		{[]string{"nodes", "10", "--gpu-profile", "b300"}, `unknown GPU profile "b300": allowed are`},
		{[]string{"fault", "solar-flare"}, `unknown fault "solar-flare": allowed are`},
		{[]string{"load", "10", "1", "--mode", "statefulset"}, `mode "statefulset" is not supported: allowed are`},
		{[]string{"churn", "10", "60", "--namespace", "Bad_NS"}, `--namespace "Bad_NS" is not a namespace name`},
		{[]string{"load", "10", "1", "--namespace", "<script>"}, `--namespace "<script>" is not a namespace name`},
		{[]string{"save", "Before Faults"}, `state name "Before Faults" is not allowed`},
		{[]string{"snapshot", "--source", "thanos"}, `--source "thanos" is not a source`},
		// Bad durations.
		{[]string{"load", "10", "1", "--timeout", "forever"}, `--timeout "forever" is not a duration`},
		{[]string{"churn", "10", "an hour"}, `duration "an hour" is not a duration`},
		{[]string{"snapshot", "--since", "0"}, "--since 0s is out of range"},
		{[]string{"snapshot", "--step", "100ms"}, "--step 100ms is out of range: it must be at least 1s"},
		// Missing or corrupt run folders.
		{[]string{"snapshot", "--run", "nosuch"}, `no run with ID or folder "nosuch" under`},
		{[]string{"report", filepath.Join(f.results, "nosuch")}, "is not a snapshot folder"},
		{[]string{"report", f.corruptSnapshot}, "slo.json"},
		{[]string{"report", "--compare", f.corruptSnapshot}, "--compare takes two snapshot folders"},
		{[]string{"restore", "state-20260101-000000"}, `no saved state "state-20260101-000000"`},
		// A kubeconfig that does not work, a context that does not exist.
		{[]string{"load", "10", "1", "--kubeconfig", filepath.Join(home, "absent")}, "no such file or directory"},
		{[]string{"churn", "10", "60", "--kubeconfig", f.notYAML}, "error loading config file"},
		{[]string{"fault", "gpu-xid", "--kubeconfig", f.noContext, "--context", "prod"}, `context "prod" does not exist`},
		{[]string{"status", "--kubeconfig", f.notYAML}, "error loading config file"},
		// A port in use.
		{[]string{"up", "--prometheus-port", port}, "port " + port + " on 127.0.0.1 is in use"},
		// An unwritable results folder.
		{[]string{"load", "10", "1", "--results-dir", f.readOnly}, "results folder " + f.readOnly + " is not writable"},
		{[]string{"churn", "10", "60", "--results-dir", f.aFile}, "results folder " + f.aFile + " is a file, not a folder"},
		{[]string{"snapshot", "--results-dir", filepath.Join(f.aFile, "below")}, "cannot be created"},
		{[]string{"save", "--results-dir", f.readOnly}, "is not writable"},
		// A CL2 binary that is not one.
		{[]string{"cl2", "--config", densityConfig, "--binary", f.textBinary}, "is not executable"},
		{[]string{"cl2", "--config", densityConfig, "--binary", home}, "is a folder, not the clusterloader binary"},
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: a read-only folder is writable, those cases are skipped")
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if os.Geteuid() == 0 && strings.Contains(strings.Join(tt.args, " "), f.readOnly) {
				t.Skip("root writes anywhere")
			}
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--results-dir") {
				args = append(append([]string{}, args...), "--results-dir", f.results)
			}
			code, _, errOut := run(t, args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure (stderr %q)", errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.want)
			}
			checkOneLine(t, errOut)
			if left := runFolders(t, f.results); len(left) > 0 {
				t.Errorf("bad input left %v in the results folder", left)
			}
		})
	}
	if probes, _ := filepath.Glob(filepath.Join(f.results, ".writable-*")); len(probes) > 0 {
		t.Errorf("the writability probe was left behind: %v", probes)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "cache")); len(entries) != 0 {
		t.Errorf("bad input left %d entries in the binary cache", len(entries))
	}
}

// TestBadInputBatteryConsole: every console form given bad values gives
// one line (the same the flags give, see
// TestConsoleAndFlagsGiveTheSameErrors), leaves no run folder and never
// panics the console.
func TestBadInputBatteryConsole(t *testing.T) {
	f := newBadInputFixtures(t)
	acts := (&consoleOptions{globals: &globals{name: testCluster, resultsDir: f.results}}).actions()
	readOnly := (&consoleOptions{globals: &globals{name: testCluster, resultsDir: f.readOnly}}).actions()
	tests := []struct {
		name   string
		acts   map[tui.ActionKey]tui.Action
		key    tui.ActionKey
		values map[int]string
		want   string
	}{
		{"nodes not a number", acts, tui.ActNodes, map[int]string{0: "ten"}, `node count "ten" is not a whole number`},
		{"nodes negative", acts, tui.ActNodes, map[int]string{0: "-1"}, "node count -1 is out of range"},
		{"load pods empty", acts, tui.ActLoad, map[int]string{0: ""}, `pod count "" is not a whole number`},
		{"load GPUs zero", acts, tui.ActLoad, map[int]string{1: "0"}, "GPUs per pod 0 is out of range"},
		{"load unknown mode", acts, tui.ActLoad, map[int]string{2: "daemonset"}, `mode "daemonset" is not supported`},
		{"load rate not a number", acts, tui.ActLoad, map[int]string{3: "1/s"}, `rate "1/s" is not a number`},
		{"churn rate out of range", acts, tui.ActChurn, map[int]string{0: "-5"}, "rate -5 is out of range"},
		{"churn bad duration", acts, tui.ActChurn, map[int]string{1: "10 minutes"}, `duration "10 minutes" is not a duration`},
		{"churn-limited concurrency", acts, tui.ActChurnLimited, map[int]string{2: "0"}, "concurrency 0 is out of range"},
		{"train jobs not a number", acts, tui.ActTrain, map[int]string{0: "a few"}, `jobs "a few" is not a whole number`},
		{"train pods per job", acts, tui.ActTrain, map[int]string{1: "0"}, "pods per job 0 is out of range"},
		{"snapshot since", acts, tui.ActSnapshot, map[int]string{0: "-1m"}, "--since -1m0s is out of range"},
		{"fault unknown", acts, tui.ActFaults, map[int]string{0: "meteor"}, `unknown fault "meteor"`},
		{"fault nodes", acts, tui.ActFaults, map[int]string{1: "none"}, `"none"`},
		{"fault xid", acts, tui.ActFaults, map[int]string{2: "5"}, "5 is not a known Xid"},
		{"fault exit code", acts, tui.ActFaults, map[int]string{0: "pod-exit", 3: "300"}, "--exit-code 300 is out of range: allowed are 0-255"},
		{"fault delay", acts, tui.ActFaults, map[int]string{0: "pod-exit", 3: "3", 5: "soon"}, `"soon"`},
		{"load, results folder read-only", readOnly, tui.ActLoad, nil, "is not writable"},
		{"snapshot, results folder read-only", readOnly, tui.ActSnapshot, nil, "is not writable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if os.Geteuid() == 0 && strings.Contains(tt.name, "read-only") {
				t.Skip("root writes anywhere")
			}
			a, ok := tt.acts[tt.key]
			if !ok {
				t.Fatalf("no console action %q", tt.key)
			}
			v := defaults(a)
			for i, value := range tt.values {
				v[i] = value
			}
			_, err := a.Run(context.Background(), v, tui.Control{})
			if err == nil {
				t.Fatalf("form %s %q: no error", a.Name, v)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("form %s %q: %v, want %q", a.Name, v, err, tt.want)
			}
			checkOneLine(t, err.Error())
			if left := runFolders(t, f.results); len(left) > 0 {
				t.Errorf("bad input left %v in the results folder", left)
			}
		})
	}
}
