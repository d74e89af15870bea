package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/state"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// KindAB is an A/B run's folder kind.
const KindAB = "ab"

// ABOptions ask for one workload replayed from one saved state under two
// control-plane profiles, A then B, each on a fresh fleet.
type ABOptions struct {
	// State is the saved state (its folder's name or the name given to
	// save); Workload the workload file.
	State    string `json:"state"`
	Workload string `json:"workload"`
	// A and B are profiles: a built-in name or a profile file's path.
	A string `json:"a"`
	B string `json:"b"`
	// Threshold is how much worse (a share of A's figure) B may be on a
	// judged metric before the verdict is "worse"; Judge are the judged
	// metrics' IDs (ABMetricIDs; nil: DefaultJudged).
	Threshold float64  `json:"threshold"`
	Judge     []string `json:"judge"`
	// Fleet is the throwaway fleet each side runs on ("": the saved
	// fleet's name with -ab); it must not exist. Keep leaves B's up.
	Fleet          string `json:"fleet"`
	PrometheusPort int    `json:"prometheusPort,omitempty"`
	Keep           bool   `json:"keep,omitempty"`
	Namespace      string `json:"namespace"`
	// Timeout and Stall bound each side's wait after the last arrival.
	Timeout  time.Duration `json:"timeout"`
	Stall    time.Duration `json:"stall"`
	Binaries Binaries      `json:"binaries"`
}

// NewABOptions are an A/B run's defaults: default against tuned, B worse
// past 10%, each side ending 30 s after its last progress or at 10
// minutes.
func NewABOptions() ABOptions {
	return ABOptions{A: fleet.ProfileDefault.Name, B: fleet.ProfileTuned.Name, Threshold: 0.10, Judge: DefaultJudged, Namespace: "gf-ab",
		Timeout: 10 * time.Minute, Stall: 30 * time.Second}
}

// Check checks what needs no cluster and returns the workload and the
// two profiles.
func (o ABOptions) Check() (workload.Arrivals, [2]fleet.ComponentProfile, error) {
	var ps [2]fleet.ComponentProfile
	switch {
	case o.State == "":
		return workload.Arrivals{}, ps, fmt.Errorf("--state is missing: give a saved state's folder name (state-<time>) or the name given to `ghostfleet save`")
	case o.Workload == "":
		return workload.Arrivals{}, ps, fmt.Errorf("--workload is missing: give a workload file (`ghostfleet workload gen` writes one)")
	case o.Threshold < 0:
		return workload.Arrivals{}, ps, fmt.Errorf("--threshold %g is out of range: it must be 0 or more (0.1 or 10%%: B may be 10%% worse)", o.Threshold)
	case o.Timeout <= 0:
		return workload.Arrivals{}, ps, fmt.Errorf("--timeout %s is out of range: it must be more than 0", o.Timeout)
	case o.Stall < 0:
		return workload.Arrivals{}, ps, fmt.Errorf("--stall %s is out of range: it must be 0 (never) or more", o.Stall)
	case o.PrometheusPort < 0 || o.PrometheusPort > 65535:
		return workload.Arrivals{}, ps, fmt.Errorf("--prometheus-port %d is out of range: allowed are 1-65535 (0: any free port)", o.PrometheusPort)
	}
	for _, id := range o.Judge {
		if !slices.Contains(ABMetricIDs(), id) {
			return workload.Arrivals{}, ps, fmt.Errorf("--judge %q is not a metric: allowed are %s", id, strings.Join(ABMetricIDs(), ", "))
		}
	}
	for i, name := range []string{o.A, o.B} {
		p, err := fleet.ProfileByNameOrFile(name)
		if err != nil {
			return workload.Arrivals{}, ps, fmt.Errorf("--%s: %w", []string{"a", "b"}[i], err)
		}
		ps[i] = p
	}
	w, err := workload.ReadArrivals(o.Workload)
	return w, ps, err
}

// ABSide is one side's runs: its profile, the replay's figures and run
// folder, and the snapshot of the replay's window.
type ABSide struct {
	Profile string `json:"profile"`
	// Gang is set when the side's jobs were created with PodGroups (its
	// profile gang-schedules).
	Gang     bool                  `json:"gang"`
	Replay   Run                   `json:"replay"`
	Result   workload.ReplayResult `json:"result"`
	Snapshot string                `json:"snapshot,omitempty"`
}

// ABResult is an A/B run: its folder (run.json, report.html), both sides
// and the verdict on B against A.
type ABResult struct {
	Run
	State     string            `json:"state"`
	Workload  string            `json:"workload"`
	Threshold float64           `json:"threshold"`
	A         ABSide            `json:"a"`
	B         ABSide            `json:"b"`
	Metrics   []report.ABMetric `json:"metrics"`
	// Verdict is report.ABWorse, ABBetter or ABSame: B against A on the
	// judged metrics.
	Verdict string `json:"verdict"`
	// Report is report.html in the folder.
	Report string `json:"report"`
}

// Worse says whether B is worse than A past the threshold.
func (r ABResult) Worse() bool { return r.Verdict == report.ABWorse }

// Summary is the verdict, the judged metrics that decided it, and the
// two sides' jobs in one line.
func (r ABResult) Summary() string {
	return fmt.Sprintf("B (%s) is %s than A (%s)%s; jobs fully started %d (A) vs %d (B), partial GPU-seconds %.0f vs %.0f",
		r.B.Profile, verdictWords(r.Verdict), r.A.Profile, report.ABDeciders(r.Metrics), r.A.Result.JobsStarted, r.B.Result.JobsStarted, r.A.Result.PartialGPUSeconds, r.B.Result.PartialGPUSeconds)
}

func verdictWords(v string) string {
	if v == report.ABSame {
		return "neither better nor worse"
	}
	return v
}

// AB restores the saved state into a fresh fleet under profile A,
// replays the workload, snapshots and records it, removes the fleet, does
// the same under B, and writes the comparison into an ab-<time> folder.
// The fleets are removed however the run ends (an interrupted restore
// first runs to its end); Keep leaves B's fleet up after a run that
// completed. An interrupted run writes no comparison: its sides' records
// stay.
func AB(ctx context.Context, env Env, o ABOptions) (ABResult, error) {
	if err := ownFleet(env, "ab"); err != nil {
		return ABResult{}, err
	}
	w, profiles, err := o.Check()
	if err != nil {
		return ABResult{}, err
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return ABResult{}, err
	}
	report := env.reporter().Report
	r, err := o.Binaries.Resolver(report)
	if err != nil {
		return ABResult{}, err
	}
	saved, _, err := state.CheckCopy(env.ResultsDir, o.State, r.Versions)
	if err != nil {
		return ABResult{}, err
	}
	if o.Fleet == "" {
		o.Fleet = saved.Cluster + "-ab"
	}
	if fleet.Exists(ctx, o.Fleet) {
		return ABResult{}, fmt.Errorf("fleet %q exists: ab makes and removes its own fleet for each side; choose another with --fleet, or remove it (`ghostfleet clean --name %s`) if an earlier ab left it", o.Fleet, o.Fleet)
	}
	if o.PrometheusPort == 0 {
		if o.PrometheusPort, err = freePort(); err != nil {
			return ABResult{}, err
		}
	} else if err := fleet.PortFree(o.PrometheusPort); err != nil {
		return ABResult{}, fmt.Errorf("--prometheus-port: %w", err)
	}
	done := progress.Step(report, "binaries", "resolving the control plane's binaries", 0)
	set, err := r.Resolve(ctx)
	done()
	if err != nil {
		return ABResult{}, err
	}
	host := startHost(env, "the A/B's record")
	started := time.Now().UTC()
	out := ABResult{State: saved.ID, Workload: o.Workload, Threshold: o.Threshold}
	sides := []*ABSide{&out.A, &out.B}
	for i, label := range []string{"A", "B"} {
		keep := o.Keep && label == "B"
		side, err := abSide(ctx, env, o, abRun{label: label, profile: profiles[i], workload: w, set: set, versions: r.Versions, keep: keep})
		*sides[i] = side
		if err != nil {
			return out, err
		}
	}
	return writeAB(env, o, out, profiles, started, host)
}

// abRun is what one side runs with.
type abRun struct {
	label    string
	profile  fleet.ComponentProfile
	workload workload.Arrivals
	set      binaries.Set
	versions binaries.Versions
	keep     bool
}

// abSide runs one side on a fresh fleet and removes the fleet after,
// unless keep and the side completed.
func abSide(ctx context.Context, env Env, o ABOptions, s abRun) (side ABSide, err error) {
	side.Profile = s.profile.Name
	base := env.reporter().Report
	prefix := fmt.Sprintf("%s (%s): ", s.label, s.profile.Name)
	report := func(ev progress.Event) {
		if ev.Message != "" && !strings.HasPrefix(ev.Message, "kwokctl: ") { // kwokctl's lines stay as they are: the CLI shows them with -v only
			ev.Message = prefix + ev.Message
		}
		base(ev)
	}
	done := progress.Step(report, "up", fmt.Sprintf("fresh fleet %s with profile %s", o.Fleet, s.profile.Name), 30*time.Second)
	_, err = fleet.Up(ctx, fleet.UpOptions{Name: o.Fleet, Profile: s.profile, PrometheusPort: o.PrometheusPort, Versions: s.versions, Report: report,
		Binaries: func(context.Context) (binaries.Set, error) { return s.set, nil }})
	done()
	if err != nil {
		return side, err // Up removes a fleet it could not finish
	}
	defer func() {
		if s.keep && err == nil {
			return
		}
		done := progress.Step(report, "clean", "removing fleet "+o.Fleet, 5*time.Second)
		derr := fleet.Delete(context.WithoutCancel(ctx), o.Fleet, progress.Discard)
		done()
		if derr != nil {
			err = errors.Join(err, fmt.Errorf("removing fleet %s: %w (run `ghostfleet clean --name %s`)", o.Fleet, derr, o.Fleet))
		}
	}()
	fenv := env
	fenv.Target, fenv.Reporter = fleet.Own(o.Fleet), prefixed{env.reporter(), report}
	st, err := fleet.UpState(o.Fleet)
	if err != nil {
		return side, err
	}
	rr, err := o.Binaries.Resolver(report)
	if err != nil {
		return side, err
	}
	tools, err := state.Tools(ctx, rr, st, true)
	if err != nil {
		return side, err
	}
	rs, err := recorder(fenv)
	if err != nil {
		return side, err
	}
	rec, err := state.RestoreCopy(ctx, o.Fleet, env.ResultsDir, o.State, tools, report)
	if err != nil {
		return side, err
	}
	if _, err := rs.write(rec); err != nil {
		return side, fmt.Errorf("%s: the restore's record: %w", s.label, err)
	}
	if ctx.Err() != nil {
		return side, fmt.Errorf("%s: interrupted after the restore: %w", s.label, ctx.Err())
	}
	sess, capacity, err := openWorkload(ctx, fenv)
	if err != nil {
		return side, err
	}
	side.Gang = servesPodGroups(sess)
	if side.Gang {
		fenv.report(progress.Event{Kind: progress.Info, Message: "the fleet serves PodGroups (" + podGroupVersion + "): each job is created with its gang, as train --gang does"})
	}
	ro := workload.ReplayOptions{RunID: NewID("replay"), Namespace: o.Namespace, Workload: s.workload, File: o.Workload,
		Timeout: o.Timeout, Stall: o.Stall, Cluster: o.Fleet, Gang: workload.Gang{Enabled: side.Gang}, Report: report}
	warnings, err := ro.Validate(capacity)
	if err != nil {
		return side, err
	}
	for _, w := range warnings {
		fenv.warn("%s", w)
	}
	res, rrec, err := workload.Replay(ctx, sess.clients, ro)
	side.Result = res
	if err != nil && rrec.Outcome == "" {
		return side, err
	}
	run, werr := sess.write(rrec)
	side.Replay = run
	if err := errors.Join(err, werr); err != nil {
		return side, err
	}
	if run.Outcome == Interrupted {
		return side, fmt.Errorf("%s: replay interrupted (its record: %s)", s.label, run.Dir)
	}
	// One more Prometheus scrape (every 15 s) lands after the replay, so
	// the snapshot holds its end.
	done = progress.Step(report, "snapshot", "snapshot of the replay's window (after one more Prometheus scrape)", 20*time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(16 * time.Second):
	}
	snap, serr := Snapshot(ctx, fenv, SnapshotOptions{RunID: run.ID, Step: 5 * time.Second, Source: SourcePrometheus, Since: time.Minute})
	done()
	if ctx.Err() != nil {
		return side, fmt.Errorf("%s: interrupted while taking the snapshot: %w", s.label, ctx.Err())
	}
	if serr != nil {
		fenv.warn("no snapshot of the replay: %v", serr)
	} else {
		side.Snapshot = snap.Dir
	}
	return side, nil
}

const podGroupVersion = "scheduling.k8s.io/v1alpha2"

// servesPodGroups says whether the fleet's profile turned kube-scheduler's
// gang layer on: its apiserver then serves PodGroups.
func servesPodGroups(s session) bool {
	list, err := s.clients.Admin.Discovery().ServerResourcesForGroupVersion(podGroupVersion)
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "podgroups" {
			return true
		}
	}
	return false
}

// abPage is the A/B report of out: about describes the two profiles.
func abPage(o ABOptions, out ABResult, about [2]string, warn func(string, ...any)) report.ABReport {
	page := report.ABReport{State: out.State, Workload: o.Workload, Threshold: o.Threshold, Verdict: out.Verdict, Metrics: out.Metrics}
	for i, s := range []ABSide{out.A, out.B} {
		side := report.ABSide{Label: []string{"A", "B"}[i], Profile: s.Profile, About: about[i], Fleet: o.Fleet,
			Replay: s.Replay.Dir, Snapshot: s.Snapshot, Outcome: s.Replay.Outcome}
		for _, p := range s.Result.Occupancy {
			pct := 0.0
			if s.Result.FleetGPUs > 0 {
				pct = 100 * float64(p.UsedGPUs) / float64(s.Result.FleetGPUs)
			}
			side.Occupancy = append(side.Occupancy, [3]float64{p.Seconds, pct, float64(p.Fragmented)})
		}
		if i == 0 {
			page.A = side
		} else {
			page.B = side
		}
	}
	for i, ja := range out.A.Result.JobResults {
		job := report.ABJob{Name: ja.Name, At: ja.At, Pods: ja.Pods, GPUsPerPod: ja.GPUsPerPod,
			A: report.ABJobSide{Started: ja.Started, Running: ja.Running, StartSeconds: ja.StartSeconds}}
		if i < len(out.B.Result.JobResults) {
			jb := out.B.Result.JobResults[i]
			job.B = report.ABJobSide{Started: jb.Started, Running: jb.Running, StartSeconds: jb.StartSeconds}
		}
		page.Jobs = append(page.Jobs, job)
	}
	if out.A.Snapshot != "" && out.B.Snapshot != "" {
		if c, err := report.CompareSnapshots(out.A.Snapshot, out.B.Snapshot); err == nil {
			page.Snapshots = &c
		} else {
			warn("the snapshots are not compared: %v", err)
		}
	}
	return page
}

// RenderAB writes dir/report.html again from the A/B run's run.json
// (report DIR on an ab folder): the page as this GhostFleet draws it,
// from the figures recorded then. A profile that is neither built in nor
// a file still there is described by its name.
func RenderAB(dir string) (string, error) {
	var rec struct {
		Kind   string    `json:"kind"`
		Params ABOptions `json:"params"`
		Result ABResult  `json:"result"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return "", fmt.Errorf("A/B folder %s: %w", dir, err)
	}
	if rec.Kind != KindAB {
		return "", fmt.Errorf("%s holds a %s run, not an A/B run", dir, rec.Kind)
	}
	var about [2]string
	for i, name := range []string{rec.Params.A, rec.Params.B} {
		about[i] = name
		if p, err := fleet.ProfileByNameOrFile(name); err == nil {
			about[i] = p.Description
		}
	}
	// The sides' snapshots are found beside the folder, wherever the
	// results folder has moved since.
	for _, side := range []*ABSide{&rec.Result.A, &rec.Result.B} {
		if side.Snapshot != "" {
			side.Snapshot = filepath.Join(filepath.Dir(filepath.Clean(dir)), filepath.Base(side.Snapshot))
		}
	}
	page := abPage(rec.Params, rec.Result, about, func(string, ...any) {})
	return filepath.Join(dir, "report.html"), report.WriteAB(dir, page)
}

// prefixed passes a side's progress, its messages marked with the side.
type prefixed struct {
	Reporter
	report progress.Func
}

func (p prefixed) Report(ev progress.Event) { p.report(ev) }

// writeAB judges B against A and writes the A/B folder; its record holds
// both sides' profiles and settings (A's "vs" B's) and the machine from
// started on (host, nil when it could not be read).
func writeAB(env Env, o ABOptions, out ABResult, profiles [2]fleet.ComponentProfile, started time.Time, host *fleet.HostStart) (ABResult, error) {
	out.Metrics, out.Verdict = report.JudgeAB(ABMetrics(out.A.Result, out.B.Result, o.Judge), o.Threshold)
	rec := record.Record{Kind: KindAB, Cluster: o.Fleet, Profile: out.A.Profile + " vs " + out.B.Profile,
		ProfileSettings: profiles[0].Settings() + " vs " + profiles[1].Settings(), Started: started, Ended: time.Now().UTC(),
		Outcome: Completed, Params: o}
	endHost(&rec, host)
	dir, err := record.NewRunDir(env.ResultsDir, KindAB, started)
	if err != nil {
		return out, err
	}
	out.Run = Run{ID: filepath.Base(dir), Kind: KindAB, Dir: dir, Outcome: Completed, Warning: strings.Join(rec.Warnings, "; ")}
	out.Report = filepath.Join(dir, "report.html")
	rec.ID, rec.Result = out.ID, out
	page := abPage(o, out, [2]string{profiles[0].Description, profiles[1].Description}, env.warn)
	if err := record.WriteJSON(dir, "run.json", rec); err != nil {
		return out, err
	}
	return out, report.WriteAB(dir, page)
}

// DefaultJudged are the metrics that decide an A/B verdict unless --judge
// says otherwise: how many jobs fully started, how long the slowest took,
// the GPU time partly started jobs held, and the fragmentation left.
// Control-plane CPU per pod is shown but not judged by default: at small
// sizes it is mostly the idle control plane's cost over the replay, and
// on a machine shared with other work it moves by tens of percent.
var DefaultJudged = []string{"jobs-started", "start-p99", "partial-gpu-seconds", "fragmented-gpus"}

// ABMetricIDs lists every A/B metric's ID, in the table's order.
func ABMetricIDs() []string {
	var ids []string
	for _, m := range ABMetrics(workload.ReplayResult{}, workload.ReplayResult{}, nil) {
		ids = append(ids, m.ID)
	}
	return ids
}

// ABMetrics are the figures an A/B run compares, those named in judged
// (nil: DefaultJudged) deciding the verdict; each has a slack for noise
// on small figures.
func ABMetrics(a, b workload.ReplayResult, judged []string) []report.ABMetric {
	if judged == nil {
		judged = DefaultJudged
	}
	m := func(id, title, unit, better string, slack float64, get func(workload.ReplayResult) (float64, bool)) report.ABMetric {
		va, oka := get(a)
		vb, okb := get(b)
		return report.ABMetric{ID: id, Title: title, Unit: unit, Better: better, Judged: slices.Contains(judged, id), Slack: slack, A: va, B: vb, HasA: oka, HasB: okb}
	}
	always := func(f func(workload.ReplayResult) float64) func(workload.ReplayResult) (float64, bool) {
		return func(r workload.ReplayResult) (float64, bool) { return f(r), true }
	}
	started := func(f func(workload.ReplayResult) float64) func(workload.ReplayResult) (float64, bool) {
		return func(r workload.ReplayResult) (float64, bool) { return f(r), r.JobsStarted > 0 }
	}
	type R = workload.ReplayResult
	return []report.ABMetric{
		m("jobs-started", "jobs fully started", "jobs", report.Higher, 0, always(func(r R) float64 { return float64(r.JobsStarted) })),
		m("jobs-partial", "jobs partly started", "jobs", report.Lower, 0, always(func(r R) float64 { return float64(r.JobsPartial) })),
		m("jobs-waiting", "jobs not started", "jobs", report.Lower, 0, always(func(r R) float64 { return float64(r.JobsWaiting) })),
		m("start-p50", "time to start a job p50 (creation → last pod running)", "s", report.Lower, 1, started(func(r R) float64 { return r.StartLatency.P50 })),
		m("start-p99", "time to start a job p99", "s", report.Lower, 1, started(func(r R) float64 { return r.StartLatency.P99 })),
		m("gang-wait-p99", "gang wait p99 (first pod bound → last running)", "s", report.Lower, 1, started(func(r R) float64 { return r.GangWait.P99 })),
		m("partial-gpu-seconds", "GPU-seconds held by partly started jobs", "GPU·s", report.Lower, 16, always(func(r R) float64 { return r.PartialGPUSeconds })),
		m("stranded-gpus", "GPUs held at the end by jobs not fully started", "GPUs", report.Lower, 0, always(func(r R) float64 { return float64(r.StrandedGPUs) })),
		m("fragmented-gpus", "fragmentation at the end (GPUs free on partly used nodes)", "GPUs", report.Lower, 0, always(func(r R) float64 { return float64(r.FragmentedGPUs) })),
		m("fragmented-mean", "fragmentation, mean over the replay", "GPUs", report.Lower, 0, always(func(r R) float64 { return r.MeanFragmentedGPUs })),
		m("occupancy-mean", "GPU occupancy, mean over the replay", "% of GPUs", report.Higher, 0, always(func(r R) float64 { return 100 * r.MeanOccupancy })),
		m("occupancy-end", "GPU occupancy at the end", "% of GPUs", report.Higher, 0, always(func(r R) float64 { return 100 * r.EndOccupancy })),
		m("cpu-per-pod", "control-plane CPU per pod scheduled (apiserver, etcd, scheduler, controller-manager, kwok)", "ms", report.Lower, 2,
			func(r R) (float64, bool) { return r.ControlPlaneCPUPerPod, r.CPU != nil && r.ControlPlaneCPUPerPod > 0 }),
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
