package cl2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// standInSource is a clusterloader stand-in: it records the argv and
// environment it got, prints CL2-style klog lines, copies the artifacts
// of $STANDIN_DIR/artifacts into its --report-dir and exits with
// $STANDIN_EXIT. With STANDIN_BLOCK set it waits inside the first step
// for SIGINT, as a long CL2 step would. It is a Go program rather than a
// shell script because a shell started with SIGINT ignored (any
// background job) cannot trap it, while Go's signal.Notify can.
const standInSource = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	dir := os.Getenv("STANDIN_DIR")
	os.WriteFile(filepath.Join(dir, "argv"), []byte(strings.Join(os.Args[1:], "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "env"), []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o644)
	report := ""
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--report-dir="); ok {
			report = v
		}
	}
	copyArtifacts := func() {
		entries, _ := os.ReadDir(filepath.Join(dir, "artifacts"))
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, "artifacts", e.Name()))
			os.WriteFile(filepath.Join(report, e.Name()), data, 0o644)
		}
	}
	fmt.Println("I1129 18:00:00.000001   4242 clusterloader.go:200] Using config: {ClusterConfig:{...}}")
	fmt.Fprintln(os.Stderr, "I1129 18:00:00.100000   4242 simple_test_executor.go:63] AutomanagedNamespacePrefix: test-q7x2kd")
	if os.Getenv("STANDIN_BLOCK") != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		fmt.Fprintln(os.Stderr, "I1129 18:00:00.200000   4242 simple_test_executor.go:150] Step \"Start saturation measurements\" started")
		select {
		case <-sig:
			fmt.Fprintln(os.Stderr, "interrupted by SIGINT")
			copyArtifacts()
			os.Exit(130)
		case <-time.After(2 * time.Minute):
			os.Exit(3)
		}
	}
	for _, l := range []string{
		"I1129 18:00:00.200000   4242 simple_test_executor.go:150] Step \"Start saturation measurements\" started",
		"I1129 18:00:00.300000   4242 simple_test_executor.go:180] Step \"Start saturation measurements\" ended",
		"I1129 18:00:00.400000   4242 simple_test_executor.go:150] Step \"Create saturation deployments\" started",
		"W1129 18:00:01.000000   4242 wait_for_controlled_pods.go:300] WaitForSaturationDeployments: 10/40 running",
		"I1129 18:00:02.000000   4242 simple_test_executor.go:180] Step \"Create saturation deployments\" ended",
	} {
		fmt.Fprintln(os.Stderr, l)
	}
	copyArtifacts()
	code, _ := strconv.Atoi(os.Getenv("STANDIN_EXIT"))
	os.Exit(code)
}
`

var (
	standInOnce sync.Once
	standInPath string
	standInErr  error
)

// standIn builds the stand-in once per test binary.
func standIn(t *testing.T) string {
	t.Helper()
	standInOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cl2-standin-")
		if err != nil {
			standInErr = err
			return
		}
		src := filepath.Join(dir, "main.go")
		if standInErr = os.WriteFile(src, []byte(standInSource), 0o644); standInErr != nil {
			return
		}
		standInPath = filepath.Join(dir, "clusterloader")
		cmd := exec.Command("go", "build", "-o", standInPath, src)
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GO111MODULE=on")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			standInErr = fmt.Errorf("building the stand-in: %v\n%s", err, out)
		}
	})
	if standInErr != nil {
		t.Fatal(standInErr)
	}
	return standInPath
}

type fixture struct {
	dir, binary, config, kubeconfig, results string
}

// newFixture writes the stand-in, a config, a kubeconfig and the
// artifacts of metrics/report/testdata/cl2/<artifacts> ("" for none).
func newFixture(t *testing.T, artifacts string) fixture {
	t.Helper()
	f := fixture{dir: t.TempDir()}
	f.binary = filepath.Join(f.dir, "clusterloader")
	f.config = filepath.Join(f.dir, "config.yaml")
	f.kubeconfig = filepath.Join(f.dir, "kubeconfig.yaml")
	f.results = filepath.Join(f.dir, "results")
	bin, err := os.ReadFile(standIn(t))
	if err != nil {
		t.Fatal(err)
	}
	write(t, f.binary, string(bin), 0o755)
	write(t, f.config, "name: gpu-density\n", 0o644)
	write(t, f.kubeconfig, "apiVersion: v1\nkind: Config\n", 0o644)
	if artifacts != "" {
		src := filepath.Join("..", "..", "metrics", "report", "testdata", "cl2", artifacts)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(f.dir, "artifacts"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(f.dir, "artifacts", strings.ReplaceAll(e.Name(), "TIME", "2026-11-29T18:20:31Z")), string(data), 0o644)
		}
	}
	return f
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) options(extraEnv ...string) Options {
	return Options{
		Binary: f.binary, Config: f.config, Nodes: 100, Kubeconfig: f.kubeconfig, ResultsRoot: f.results,
		Cluster: "gf-cl2-unit", Profile: "h100",
		Env: append([]string{
			"PATH=" + os.Getenv("PATH"), "HOME=/home/someone", "STANDIN_DIR=" + f.dir,
			"KUBECONFIG=/home/someone/.kube/prod-cluster", "CL2_PODS_PER_NODE=2",
		}, extraEnv...),
	}
}

func (f fixture) recorded(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatalf("the stand-in did not record %s: %v", name, err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func readRecord(t *testing.T, dir string) (record.Record, report.CL2Result) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec record.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rec.Result)
	var res report.CL2Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return rec, res
}

func TestRunPasses(t *testing.T) {
	f := newFixture(t, "passed")
	overrides := filepath.Join(f.dir, "overrides.yaml")
	write(t, overrides, "CL2_PODS_PER_NODE: 4\n", 0o644)
	o := f.options()
	o.Overrides = []string{overrides}
	o.ExtraArgs = []string{"--port=8123"}
	o.Set = map[string]any{"CL2_POD_THROUGHPUT": 75.5, "CL2_PODS_PER_NODE": 6}
	var events []progress.Event
	o.Report = func(e progress.Event) { events = append(events, e) }
	var log strings.Builder
	o.Log = &log
	o.Complete = func(r *record.Record) { r.ProfileSettings = "settings the caller knows" }

	rec, dir, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if filepath.Dir(dir) != f.results || !strings.HasPrefix(filepath.Base(dir), "cl2-") || rec.ID != filepath.Base(dir) {
		t.Errorf("run folder %s, id %s", dir, rec.ID)
	}
	report := filepath.Join(dir, ReportDirName)

	// The exact argv: absolute paths, the KWOK flags, extras last.
	wantArgs := []string{
		"--testconfig=" + f.config,
		"--testoverrides=" + overrides,
		"--testoverrides=" + filepath.Join(dir, SetOverridesName),
		"--provider=kind",
		"--nodes=100",
		"--kubeconfig=" + f.kubeconfig,
		"--report-dir=" + report,
		"--skip-cluster-verification",
		"--enable-exec-service=false",
		"--enable-prometheus-server=false",
		"--v=2",
		"--port=8123",
	}
	if got := f.recorded(t, "argv"); !reflect.DeepEqual(got, wantArgs) {
		t.Errorf("argv\n got %q\nwant %q", got, wantArgs)
	}
	// --pods-per-node and --throughput land in an overrides file of the
	// run, passed last so they win.
	if set, err := os.ReadFile(filepath.Join(dir, SetOverridesName)); err != nil || !strings.HasSuffix(string(set), "CL2_PODS_PER_NODE: 6\nCL2_POD_THROUGHPUT: 75.5\n") {
		t.Errorf("overrides file %q (%v)", set, err)
	}
	// The environment: the fleet's kubeconfig replaces the user's,
	// CL2_* and everything else pass through.
	env := map[string][]string{}
	for _, kv := range f.recorded(t, "env") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = append(env[k], v)
	}
	if got := env["KUBECONFIG"]; !reflect.DeepEqual(got, []string{f.kubeconfig}) {
		t.Errorf("KUBECONFIG = %q, want only %s", got, f.kubeconfig)
	}
	if env["CL2_PODS_PER_NODE"][0] != "2" || env["HOME"][0] != "/home/someone" {
		t.Errorf("environment not passed through: %v", env)
	}

	if rec.Outcome != OutcomeCompleted || rec.Kind != "cl2" || rec.Cluster != "gf-cl2-unit" || rec.Profile != "h100" {
		t.Errorf("record = %+v", rec)
	}
	// Phases from CL2's step lines, and the same as progress steps.
	if len(rec.Phases) != 2 || rec.Phases[0].Name != "Start saturation measurements" || rec.Phases[1].Name != "Create saturation deployments" {
		t.Errorf("phases = %+v", rec.Phases)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, map[progress.Kind]string{progress.Start: "start", progress.Finish: "finish"}[e.Kind]+" "+e.Step)
	}
	wantKinds := []string{"start Start saturation measurements", "finish Start saturation measurements",
		"start Create saturation deployments", "finish Create saturation deployments"}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("progress %q", kinds)
	}
	// The log is streamed and kept.
	kept, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil || string(kept) != log.String() || !strings.Contains(log.String(), "10/40 running") {
		t.Errorf("log kept %q, streamed %q (%v)", kept, log.String(), err)
	}

	// run.json on disk has the parsed artifacts, and what the caller
	// filled in.
	onDisk, res := readRecord(t, dir)
	if onDisk.ProfileSettings != "settings the caller knows" {
		t.Errorf("profile settings %q; want what Complete set", onDisk.ProfileSettings)
	}
	if onDisk.Outcome != OutcomeCompleted || res.ExitCode != 0 || res.NamespacePrefix != "test-q7x2kd" || res.ReportDir != "report" {
		t.Errorf("result = %+v", res)
	}
	if len(res.PodStartupLatency) != 7 || len(res.SchedulingThroughput) != 1 || res.SchedulingThroughput[0].Max != 51 || len(res.APIResponsiveness) != 2 {
		t.Errorf("artifacts not parsed: %+v", res)
	}
	if res.JUnit == nil || !res.JUnit.Passed() {
		t.Errorf("junit = %+v", res.JUnit)
	}
	p, _ := json.Marshal(onDisk.Params)
	for _, want := range []string{`"nodes":100`, `"provider":"kind"`, `"cl2Env":["CL2_PODS_PER_NODE=2"]`, `--skip-cluster-verification`} {
		if !strings.Contains(string(p), want) {
			t.Errorf("params %s lack %s", p, want)
		}
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name      string
		artifacts string
		exit      string
		want      string
		exitCode  int
	}{
		{"non-zero exit with junit failures", "failed", "1", "clusterloader exited with code 1 reports 2 of 3 tests failed, first: gpu-density overall", 1},
		{"non-zero exit, nothing written", "", "2", "clusterloader exited with code 2 (log: ", 2},
		{"exit 0 but junit failures", "failed", "0", "clusterloader exited 0 but junit.xml reports 2 of 3 tests failed", 0},
		{"exit 0 without junit", "", "0", "clusterloader exited 0 but wrote no junit.xml", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.artifacts)
			rec, dir, err := Run(context.Background(), f.options("STANDIN_EXIT="+tt.exit))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			onDisk, res := readRecord(t, dir)
			if onDisk.Outcome != "failed: "+err.Error() || rec.Outcome != onDisk.Outcome {
				t.Errorf("outcome %q, error %q", onDisk.Outcome, err)
			}
			if res.ExitCode != tt.exitCode {
				t.Errorf("exit code %d, want %d", res.ExitCode, tt.exitCode)
			}
			// What CL2 wrote before failing is kept and parsed.
			if tt.artifacts == "failed" && (len(res.PodStartupLatency) != 1 || res.PodStartupLatency[0].P99 != 12004) {
				t.Errorf("partial artifacts lost: %+v", res.PodStartupLatency)
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	f := newFixture(t, "failed")
	o := f.options("STANDIN_BLOCK=1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once CL2 is inside a step, as Ctrl-C would.
	var last progress.Event
	o.Report = func(e progress.Event) {
		last = e
		if e.Kind == progress.Start {
			cancel()
		}
	}
	var log strings.Builder
	o.Log = &log
	rec, dir, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	onDisk, res := readRecord(t, dir)
	if rec.Outcome != OutcomeInterrupted || onDisk.Outcome != OutcomeInterrupted {
		t.Errorf("outcome %q", onDisk.Outcome)
	}
	// SIGINT, not SIGKILL: the stand-in had time to say so and to write.
	if !strings.Contains(log.String(), "interrupted by SIGINT") || res.ExitCode != 130 {
		t.Errorf("exit %d, log %q", res.ExitCode, log.String())
	}
	if len(res.PodStartupLatency) != 1 || res.NamespacePrefix != "test-q7x2kd" {
		t.Errorf("what CL2 wrote before the interrupt is lost: %+v", res)
	}
	// The open step is closed at the interrupt, and says it was cut short.
	if len(onDisk.Phases) != 1 || onDisk.Phases[0].End.IsZero() {
		t.Errorf("phases %+v", onDisk.Phases)
	}
	if last.Kind != progress.Finish || !strings.Contains(last.Message, "cut short") {
		t.Errorf("last event %+v", last)
	}
}

func TestValidate(t *testing.T) {
	f := newFixture(t, "")
	tests := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"nodes 0", func(o *Options) { o.Nodes = 0 }, "--nodes 0 is out of range: allowed are 1-10000"},
		{"nodes negative", func(o *Options) { o.Nodes = -3 }, "--nodes -3 is out of range"},
		{"nodes too many", func(o *Options) { o.Nodes = 10001 }, "--nodes 10001 is out of range"},
		{"missing config", func(o *Options) { o.Config = filepath.Join(f.dir, "nope.yaml") }, "--config " + filepath.Join(f.dir, "nope.yaml") + ": no such file or directory"},
		{"config is a folder", func(o *Options) { o.Config = f.dir }, "is a folder: it must name a file"},
		{"missing overrides", func(o *Options) { o.Overrides = []string{"absent.yaml"} }, "--overrides absent.yaml: no such file"},
		{"no binary", func(o *Options) { o.Binary = "" }, "no ClusterLoader2 binary"},
		{"bad override key", func(o *Options) { o.Set = map[string]any{"PODS_PER_NODE": 3} }, `override key "PODS_PER_NODE" is not a CL2 parameter`},
		{"fleet not up", func(o *Options) { o.Kubeconfig = filepath.Join(f.dir, "gone", "kubeconfig.yaml") }, "kubeconfig " + filepath.Join(f.dir, "gone", "kubeconfig.yaml")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := f.options()
			tt.mod(&o)
			_, dir, err := Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			// Refused before anything was created.
			if dir != "" {
				t.Errorf("a run folder %s was created", dir)
			}
			if _, err := os.Stat(f.results); !os.IsNotExist(err) {
				t.Errorf("results folder exists: %v", err)
			}
		})
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	onPath := filepath.Join(dir, "bin")
	if err := os.Mkdir(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := func(path string) string { write(t, path, "#!/bin/sh\n", 0o755); return path }
	flagBin := exe(filepath.Join(dir, "flag-cl"))
	envBin := exe(filepath.Join(dir, "env-cl"))
	pathCL2 := exe(filepath.Join(onPath, "clusterloader2"))
	notExec := filepath.Join(dir, "plain")
	write(t, notExec, "", 0o644)

	tests := []struct {
		name, flag, env, path string
		want                  string
		source                Source
		err                   string
	}{
		{"flag wins over the variable", flagBin, envBin, onPath, flagBin, SourceFlag, ""},
		{"variable wins over PATH", "", envBin, onPath, envBin, SourceEnv, ""},
		{"PATH clusterloader2", "", "", onPath, pathCL2, SourcePath, ""},
		{"nothing", "", "", t.TempDir(), "", "", "no ClusterLoader2 binary"},
		{"flag names nothing", filepath.Join(dir, "absent"), envBin, onPath, "", "", "--binary " + filepath.Join(dir, "absent") + ": no such file"},
		{"variable names nothing", "", filepath.Join(dir, "absent"), onPath, "", "", "$GHOSTFLEET_CL2 " + filepath.Join(dir, "absent") + ": no such file"},
		{"not executable", notExec, "", onPath, "", "", "is not executable"},
		{"a folder", dir, "", onPath, "", "", "is a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvBinary, tt.env)
			t.Setenv("PATH", tt.path)
			got, src, err := Find(tt.flag)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || src != tt.source {
				t.Errorf("Find = %q, %q, %v; want %q, %q", got, src, err, tt.want, tt.source)
			}
		})
	}
	// clusterloader is preferred over clusterloader2 on PATH.
	first := exe(filepath.Join(onPath, "clusterloader"))
	t.Setenv(EnvBinary, "")
	t.Setenv("PATH", onPath)
	if got, _, _ := Find(""); got != first {
		t.Errorf("Find = %q, want %q", got, first)
	}
}

func TestNoBinaryMessage(t *testing.T) {
	for _, want := range []string{
		"git clone https://github.com/kubernetes/perf-tests",
		"cd perf-tests/clusterloader2",
		"go build -o clusterloader ./cmd",
		"export GHOSTFLEET_CL2=$PWD/clusterloader",
	} {
		if !strings.Contains(ErrNoBinary.Error(), want) {
			t.Errorf("ErrNoBinary lacks %q", want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if standInPath != "" {
		os.RemoveAll(filepath.Dir(standInPath))
	}
	os.Exit(code)
}
