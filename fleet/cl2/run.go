package cl2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// DefaultConfig is the density test of experiment E, relative to the
// repository root.
const DefaultConfig = "scenarios/density/config.yaml"

// DefaultProvider is CL2's provider for a KWOK fleet. CL2 has no kwok
// provider; "kind" is the one without SSH to a master (local and skeleton
// try SSH, and GhostFleet's control plane has none), so SSH-based
// measurements skip themselves instead of failing.
const DefaultProvider = "kind"

// ReportDirName is CL2's --report-dir inside the run folder.
const ReportDirName = "report"

// LogName is CL2's output, kept in the run folder.
const LogName = "clusterloader.log"

// interruptGrace is how long CL2 gets to exit after SIGINT before it is
// killed.
const interruptGrace = 10 * time.Second

// Options configures a run.
type Options struct {
	// Binary is the clusterloader executable (see Find).
	Binary string
	// Config is the test config (--testconfig).
	Config string
	// Overrides are --testoverrides files, later ones winning.
	Overrides []string
	// Nodes is CL2's --nodes: the fleet's fake node count by default.
	Nodes int
	// Provider is CL2's --provider (DefaultProvider when empty).
	Provider string
	// Kubeconfig is the fleet's kubeconfig; CL2 uses its current context.
	Kubeconfig string
	// Set are test overrides (CL2_* keys) written to an overrides file in
	// the run folder and passed last, so they win over Overrides.
	Set map[string]any
	// ExtraArgs are passed to clusterloader after GhostFleet's own.
	ExtraArgs []string
	// Env is the environment to start from (os.Environ() when nil).
	Env []string

	// ResultsRoot is where the run folder is created.
	ResultsRoot string
	// Cluster and Profile go into the record.
	Cluster, Profile string
	// Params are extra parameters to record (the command's flags).
	Params map[string]any
	// Complete, when set, fills in the rest of what the caller knows of
	// the record (its profile's settings, the machine it ran on) just
	// before it is written.
	Complete func(*record.Record)

	// Log receives CL2's output line by line (it is also kept in the run
	// folder); nil drops it.
	Log io.Writer
	// Report receives a step per CL2 step ("Step … started/ended").
	Report progress.Func
}

// Validate checks what can be checked before anything runs.
func (o Options) Validate() error {
	if o.Binary == "" {
		return ErrNoBinary
	}
	if o.Nodes < 1 || o.Nodes > fleet.MaxNodes {
		return fmt.Errorf("--nodes %d is out of range: allowed are 1-%d (default: the fleet's fake node count)", o.Nodes, fleet.MaxNodes)
	}
	if err := CheckFiles(o.Config, o.Overrides); err != nil {
		return err
	}
	for k := range o.Set {
		if !overrideKey.MatchString(k) {
			return fmt.Errorf("override key %q is not a CL2 parameter: allowed are CL2_ followed by capitals, digits and _", k)
		}
	}
	if o.Kubeconfig == "" {
		return errors.New("no kubeconfig for the fleet")
	}
	if err := checkFile("kubeconfig", o.Kubeconfig); err != nil {
		return err
	}
	return nil
}

// CheckFiles checks that the test config and overrides files exist, so
// a typo is reported before a fleet is looked at.
func CheckFiles(config string, overrides []string) error {
	if err := checkFile("--config", config); err != nil {
		return err
	}
	for _, f := range overrides {
		if err := checkFile("--overrides", f); err != nil {
			return err
		}
	}
	return nil
}

func checkFile(what, path string) error {
	if path == "" {
		return fmt.Errorf("%s is empty: it must name a file", what)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, errors.Unwrap(err))
	}
	if fi.IsDir() {
		return fmt.Errorf("%s %s is a folder: it must name a file", what, path)
	}
	return nil
}

// Args are clusterloader's arguments for a run writing to reportDir.
// Paths are made absolute: CL2 resolves object templates relative to the
// test config, and the run's folder must not depend on the working
// directory.
func (o Options) Args(reportDir string) []string {
	args := []string{
		"--testconfig=" + abs(o.Config),
	}
	for _, f := range o.Overrides {
		args = append(args, "--testoverrides="+abs(f))
	}
	args = append(args,
		"--provider="+o.provider(),
		fmt.Sprintf("--nodes=%d", o.Nodes),
		"--kubeconfig="+abs(o.Kubeconfig),
		"--report-dir="+abs(reportDir),
		// The fake nodes are tainted, so CL2's check for at least one
		// schedulable untainted node would refuse the fleet.
		"--skip-cluster-verification",
		// CL2's exec-service pods do not tolerate the fake nodes' taint
		// and would never run; nothing in our config needs them.
		"--enable-exec-service=false",
		// Its Prometheus stack cannot run on fake nodes either.
		"--enable-prometheus-server=false",
		// Step start/end lines are logged at -v=2.
		"--v=2",
	)
	return append(args, o.ExtraArgs...)
}

// Environ is clusterloader's environment: Env with KUBECONFIG set to the
// fleet's kubeconfig. CL2 takes many defaults from the environment
// (KUBECONFIG among them); a user's shell must not point any part of a
// run at another cluster. CL2_* variables pass through on purpose: CL2
// reads them as test overrides.
func (o Options) Environ() []string {
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			out = append(out, kv)
		}
	}
	return append(out, "KUBECONFIG="+abs(o.Kubeconfig))
}

func (o Options) provider() string {
	if o.Provider == "" {
		return DefaultProvider
	}
	return o.Provider
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Outcomes of a run, as records spell them.
const (
	OutcomeCompleted   = "completed"
	OutcomeInterrupted = "interrupted"
)

// Params is what a cl2 record says was asked.
type Params struct {
	Binary    string         `json:"binary"`
	Args      []string       `json:"args"`
	Config    string         `json:"config"`
	Overrides []string       `json:"overrides,omitempty"`
	Nodes     int            `json:"nodes"`
	Provider  string         `json:"provider"`
	CL2Env    []string       `json:"cl2Env,omitempty"` // CL2_* variables passed through
	Extra     map[string]any `json:"extra,omitempty"`
}

// Run runs clusterloader once: a new run folder under ResultsRoot holds
// CL2's report folder, its log and run.json, whose Result is the parsed
// report (report.CL2Result). The record is written whatever happens once
// the folder exists: a failed or interrupted run keeps what CL2 wrote.
// The error says why a run did not pass: clusterloader could not start,
// exited non-zero, reported junit failures, or ctx was cancelled.
func Run(ctx context.Context, o Options) (record.Record, string, error) {
	if err := o.Validate(); err != nil {
		return record.Record{}, "", err
	}
	notify := o.Report
	if notify == nil {
		notify = progress.Discard
	}
	started := time.Now().UTC()
	dir, err := record.NewRunDir(o.ResultsRoot, record.KindCL2, started)
	if err != nil {
		return record.Record{}, "", err
	}
	// Until clusterloader starts, a failure leaves no folder behind: a
	// run folder always has its run.json.
	reportDir := filepath.Join(dir, ReportDirName)
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		os.RemoveAll(dir)
		return record.Record{}, "", err
	}
	if len(o.Set) > 0 {
		f, err := writeOverrides(dir, o.Set)
		if err != nil {
			os.RemoveAll(dir)
			return record.Record{}, "", err
		}
		o.Overrides = append(append([]string{}, o.Overrides...), f)
	}
	args := o.Args(reportDir)
	env := o.Environ()
	rec := record.Record{
		ID: filepath.Base(dir), Kind: record.KindCL2, Cluster: o.Cluster, Profile: o.Profile, Started: started,
		Params: Params{Binary: o.Binary, Args: args, Config: o.Config, Overrides: o.Overrides, Nodes: o.Nodes,
			Provider: o.provider(), CL2Env: cl2Env(env), Extra: o.Params},
		Phases: []record.Phase{},
	}

	logFile, err := os.Create(filepath.Join(dir, LogName))
	if err != nil {
		os.RemoveAll(dir)
		return record.Record{}, "", err
	}
	log := io.Writer(logFile)
	if o.Log != nil {
		log = io.MultiWriter(logFile, o.Log)
	}
	st, runErr := execute(ctx, o.Binary, args, env, log, notify)
	logFile.Close()
	rec.Phases = st.phases

	res, perr := report.ParseCL2Report(reportDir)
	if perr != nil {
		res.Problems = append(res.Problems, perr.Error())
	}
	res.ReportDir, res.ExitCode, res.NamespacePrefix = ReportDirName, st.exitCode, st.namespacePrefix
	rec.Result = res
	rec.Ended = time.Now().UTC()

	var verdict error
	switch {
	case ctx.Err() != nil:
		rec.Outcome = OutcomeInterrupted
		verdict = ctx.Err()
	case runErr != nil && st.exitCode == 0:
		rec.Outcome = "failed: " + runErr.Error()
		verdict = runErr
	case st.exitCode != 0:
		verdict = fmt.Errorf("clusterloader exited with code %d%s (log: %s)", st.exitCode, junitText(res.JUnit), filepath.Join(dir, LogName))
		rec.Outcome = "failed: " + verdict.Error()
	case res.JUnit == nil:
		verdict = fmt.Errorf("clusterloader exited 0 but wrote no junit.xml to %s", reportDir)
		rec.Outcome = "failed: " + verdict.Error()
	case !res.JUnit.Passed():
		verdict = fmt.Errorf("clusterloader exited 0 but junit.xml%s", junitText(res.JUnit))
		rec.Outcome = "failed: " + verdict.Error()
	default:
		rec.Outcome = OutcomeCompleted
	}
	if o.Complete != nil {
		o.Complete(&rec)
	}
	if err := record.WriteJSON(dir, "run.json", rec); err != nil {
		return rec, dir, fmt.Errorf("writing the run record: %w", err)
	}
	return rec, dir, verdict
}

// SetOverridesName is the overrides file Options.Set is written to.
const SetOverridesName = "overrides.ghostfleet.yaml"

func writeOverrides(dir string, set map[string]any) (string, error) {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by ghostfleet cl2 from its flags; passed to CL2 last.\n")
	for _, k := range keys {
		v, err := json.Marshal(set[k]) // a JSON scalar is a YAML scalar
		if err != nil {
			return "", fmt.Errorf("override %s: %w", k, err)
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	return filepath.Join(dir, SetOverridesName), record.WriteFile(dir, SetOverridesName, []byte(b.String()))
}

func junitText(j *report.CL2JUnit) string {
	if j == nil || j.Passed() {
		return ""
	}
	s := fmt.Sprintf(" reports %d of %d tests failed", j.Failures+j.Errors, j.Tests)
	if len(j.Failed) > 0 {
		s += ", first: " + j.Failed[0].Name
	}
	return s
}

func cl2Env(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "CL2_") {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}

// CL2's klog lines this runner reads, and the override keys it writes.
var (
	overrideKey = regexp.MustCompile(`^CL2_[A-Z0-9_]+$`)
	stepLine    = regexp.MustCompile(`Step "(.*)" (started|ended)`)
	prefixLine  = regexp.MustCompile(`AutomanagedNamespacePrefix: (\S+)`)
)

type runState struct {
	exitCode        int
	namespacePrefix string
	phases          []record.Phase
	open            *record.Phase
	report          progress.Func
}

// line reads one line of CL2's output: the namespace prefix and step
// starts and ends.
func (st *runState) line(line string) {
	if m := prefixLine.FindStringSubmatch(line); m != nil && st.namespacePrefix == "" {
		st.namespacePrefix = m[1]
	}
	m := stepLine.FindStringSubmatch(line)
	if m == nil {
		return
	}
	now := time.Now().UTC()
	if m[2] == "started" {
		st.finish(now) // steps run one after another; close a stray one
		st.open = &record.Phase{Name: m[1], Start: now}
		st.report(progress.Event{Kind: progress.Start, Step: m[1], Message: m[1]})
	} else if st.open != nil && st.open.Name == m[1] {
		st.finish(now)
	}
}

func (st *runState) finish(now time.Time) { st.close(now, "") }

// close ends the open step; note says why when CL2 did not end it.
func (st *runState) close(now time.Time, note string) {
	if st.open == nil {
		return
	}
	st.open.End = now
	st.report(progress.Event{Kind: progress.Finish, Step: st.open.Name, Message: st.open.Name + note, Elapsed: st.open.End.Sub(st.open.Start)})
	st.phases = append(st.phases, *st.open)
	st.open = nil
}

// lineWriter splits what it is written into lines for fn, copying the
// bytes to out.
type lineWriter struct {
	out     io.Writer
	fn      func(string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if _, err := w.out.Write(p); err != nil {
		return 0, err
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.fn(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.fn(string(w.partial))
		w.partial = nil
	}
}

// execute runs the binary, copying its output to log and turning its step
// lines into progress steps and phases. Cancelling ctx sends SIGINT (what
// Ctrl-C sends CL2), then kills it after interruptGrace; Wait stops
// reading its output then too, even if something it started holds the
// pipe open.
func execute(ctx context.Context, binary string, args, env []string, log io.Writer, report progress.Func) (runState, error) {
	st := runState{report: report}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = interruptGrace
	// One writer for both streams: exec then calls Write from one
	// goroutine at a time, so lines are never interleaved mid-line.
	w := &lineWriter{out: log, fn: st.line}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		st.exitCode = -1
		return st, fmt.Errorf("starting %s: %w", binary, err)
	}
	err := cmd.Wait()
	w.flush()
	st.close(time.Now().UTC(), " — cut short: clusterloader ended inside it")
	st.exitCode = cmd.ProcessState.ExitCode()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil // the exit code says it
	}
	return st, err
}
