package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// Where a snapshot's series come from (SnapshotOptions.Source).
const (
	// SourceAuto is Prometheus when it answers, else a direct scrape.
	SourceAuto = "auto"
	// SourcePrometheus is Prometheus only: a snapshot without it fails.
	SourcePrometheus = "prometheus"
	// SourceDirect scrapes the components' /metrics for Sample.
	SourceDirect = "direct"
)

// SnapshotSources lists the sources, for menus and help.
var SnapshotSources = []string{SourceAuto, SourcePrometheus, SourceDirect}

// SnapshotOptions choose a snapshot's window and source.
type SnapshotOptions struct {
	// Since is the window: this long before now (unless RunID is set).
	Since time.Duration `json:"since"`
	// RunID is a run whose window (a minute either side) to snapshot.
	RunID string `json:"run,omitempty"`
	// Step is the series' resolution; with the direct source, how often
	// the components are scraped.
	Step time.Duration `json:"step"`
	// Source is SourceAuto, SourcePrometheus or SourceDirect.
	Source string `json:"source"`
	// Sample is how long the direct source scrapes the components.
	Sample time.Duration `json:"sample"`
}

// NewSnapshotOptions are a snapshot's defaults, the same for the flags
// and the console's form: the last 15 minutes at Prometheus's 15s
// resolution, from Prometheus when it answers, else from 30s of direct
// scrapes.
func NewSnapshotOptions() SnapshotOptions {
	return SnapshotOptions{Since: 15 * time.Minute, Step: 15 * time.Second, Source: SourceAuto, Sample: 30 * time.Second}
}

// Validate checks the options, each error naming the value and what is
// allowed.
func (o SnapshotOptions) Validate() error {
	if o.Since <= 0 {
		return fmt.Errorf("--since %s is out of range: it must be more than 0 (e.g. 15m)", o.Since)
	}
	if o.Step < time.Second {
		return fmt.Errorf("--step %s is out of range: it must be at least 1s", o.Step)
	}
	switch o.Source {
	case SourceAuto, SourcePrometheus, SourceDirect:
	default:
		return fmt.Errorf("--source %q is not a source: use auto, prometheus or direct", o.Source)
	}
	if o.Source == SourceDirect {
		if err := o.checkSample(); err != nil {
			return err
		}
		if o.RunID != "" {
			return fmt.Errorf("--run %s needs Prometheus's history: the direct source samples the components now (drop --source direct)", o.RunID)
		}
	}
	return nil
}

func (o SnapshotOptions) checkSample() error {
	if o.Sample < o.Step {
		return fmt.Errorf("--sample %s is out of range: it must be at least --step (%s), for two scrapes to take rates between", o.Sample, o.Step)
	}
	return nil
}

// SnapshotResult is a snapshot's folder (the run's Dir: run.json,
// metrics.json, slo.json) and its SLO verdicts.
type SnapshotResult struct {
	Run
	// Window is the time the snapshot covers: the one asked for, or with
	// the direct source the sampling time.
	Window report.Window `json:"window"`
	// Source is where the series came from: prometheus or direct scrape.
	Source string `json:"source"`
	// Note says how to read the window (the direct source's).
	Note string `json:"note,omitempty"`
	// Fallback says why Prometheus was not used, when auto fell back to
	// a direct scrape.
	Fallback string           `json:"fallback,omitempty"`
	Verdicts []report.Verdict `json:"verdicts"`
	// Unavailable are the components whose /metrics cannot be read on
	// this cluster, and why: their queries are marked not available.
	Unavailable metrics.Availability `json:"unavailable,omitempty"`
}

// Direct tells a snapshot from a direct scrape of the components.
func (r SnapshotResult) Direct() bool { return r.Source == metrics.DirectSourceName }

// Count is how many verdicts have status (report.StatusPass, …).
func (r SnapshotResult) Count(status string) int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Status == status {
			n++
		}
	}
	return n
}

// Summary counts the verdicts: "SLOs: 5 pass, 1 fail, 1 no data".
func (r SnapshotResult) Summary() string {
	var parts []string
	for _, s := range []string{report.StatusPass, report.StatusFail, report.StatusNoData, report.StatusNotAvailable} {
		if n := r.Count(s); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "SLOs: none judged"
	}
	return "SLOs: " + strings.Join(parts, ", ")
}

// Snapshot queries every catalog query over the window and writes the
// snapshot folder. When Prometheus does not answer (or Source is direct)
// it samples the components' /metrics instead, warning why first.
// Nothing is written when it fails or is interrupted: both return an
// error.
func Snapshot(ctx context.Context, env Env, o SnapshotOptions) (SnapshotResult, error) {
	if err := o.Validate(); err != nil {
		return SnapshotResult{}, err
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return SnapshotResult{}, err
	}
	end := time.Now()
	start := end.Add(-o.Since)
	if o.RunID != "" {
		r, err := record.FindRun(env.ResultsDir, o.RunID)
		if err != nil {
			return SnapshotResult{}, err
		}
		start, end = r.Started.Add(-time.Minute), r.Ended.Add(time.Minute)
		if end.After(time.Now()) {
			end = time.Now()
		}
	}
	st, err := fleet.GetStatus(ctx, env.Target, env.PrometheusURL)
	if err != nil {
		return SnapshotResult{}, err
	}
	fl := report.Fleet{Cluster: st.Cluster, Profile: st.Profile, Nodes: st.Nodes.Total, GPUs: st.GPUs.Allocatable, Prometheus: st.Prometheus.URL}
	if !st.Attached && !env.Target.Attached() {
		if s, err := fleet.LoadState(env.Target.Name); err == nil {
			fl.Versions = s.RunningVersions()
		}
	}
	opts := report.SnapshotOptions{Root: env.ResultsDir, Fleet: fl, Start: start, End: end, Step: o.Step}

	// Why Prometheus is not used, when it is not: said before sampling.
	var fallback string
	switch {
	case o.Source == SourceDirect:
	case st.Prometheus.URL == "":
		fallback = fmt.Sprintf("no Prometheus for %s (pass --prometheus-url if it has one)", env.Target)
	case !st.Prometheus.Reachable:
		fallback = fmt.Sprintf("Prometheus at %s is unreachable (%s)", st.Prometheus.URL, st.Prometheus.Error)
	}
	direct := o.Source == SourceDirect || fallback != ""
	switch {
	case direct && o.Source == SourcePrometheus:
		return SnapshotResult{}, fmt.Errorf("%s; nothing was written (--source auto or direct scrapes the components instead)", fallback)
	case direct && o.RunID != "":
		return SnapshotResult{}, fmt.Errorf("%s, and --run %s needs Prometheus's history: nothing was written (without --run, the snapshot samples the components' /metrics directly)", fallback, o.RunID)
	case direct:
		if err := sampleDirect(ctx, env, o, fallback, &opts); err != nil {
			return SnapshotResult{}, err
		}
	default:
		prom, err := metrics.NewPrometheus(st.Prometheus.URL)
		if err != nil {
			return SnapshotResult{}, err
		}
		opts.Source = prom
	}
	dir, verdicts, err := report.Snapshot(ctx, opts)
	if err != nil {
		return SnapshotResult{}, err
	}
	source := opts.SourceName
	if source == "" {
		source = report.SourcePrometheus
	}
	if verdicts == nil {
		verdicts = []report.Verdict{}
	}
	res := SnapshotResult{
		Run:    Run{ID: filepath.Base(dir), Kind: "snapshot", Dir: dir, Outcome: Completed},
		Window: report.Window{Start: opts.Start.UTC(), End: opts.End.UTC()}, Source: source, Note: opts.Note,
		Fallback: fallback, Verdicts: verdicts,
	}
	if a := metrics.AvailabilityOf(ctx, opts.Source); len(a) > 0 {
		res.Unavailable = a
	}
	return res, nil
}

// sampleDirect scrapes the components for o.Sample and makes the
// recording the snapshot's source, its window the sampling time.
func sampleDirect(ctx context.Context, env Env, o SnapshotOptions, why string, opts *report.SnapshotOptions) error {
	if err := o.checkSample(); err != nil {
		return fmt.Errorf("%s, and %w", why, err)
	}
	endpoints, err := fleet.MetricsEndpoints(ctx, env.Target)
	if err != nil {
		return err
	}
	jobs := make([]string, len(endpoints))
	for i, e := range endpoints {
		jobs[i] = e.Job
	}
	if why != "" {
		env.warn("%s: sampling the components' /metrics directly instead", why)
	}
	notify := env.reporter().Report
	total := int(o.Sample/o.Step) + 1
	done := progress.Step(notify, "sample", fmt.Sprintf("scraping %s every %s for %s (%d scrapes)", strings.Join(jobs, ", "), o.Step, o.Sample, total), o.Sample)
	said := map[string]bool{} // a hidden component is said once, not at every scrape
	rec, failures, err := metrics.Sample(ctx, metrics.SampleOptions{
		Endpoints: endpoints, Period: o.Sample, Step: o.Step,
		Scraped: func(n, total int, _ time.Time, errs []error) {
			notify(progress.Event{Kind: progress.Update, Step: "sample", Done: n, Total: total})
			for _, e := range errs {
				if msg := e.Error(); !said[msg] {
					said[msg] = true
					env.warn("scrape %s", msg)
				}
			}
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("sampling interrupted: nothing was written")
		}
		return err
	}
	done()
	scrapes := rec.Scrapes()
	opts.Start, opts.End = scrapes[0], scrapes[len(scrapes)-1]
	opts.Source = rec
	opts.SourceName = metrics.DirectSourceName
	opts.Note = fmt.Sprintf("the window is the %s the components were sampled for, a scrape every %s, not --since: the direct scrape source has no history", o.Sample, o.Step)
	if len(failures) > 0 {
		opts.Note += fmt.Sprintf("; %d scrapes failed (first: %v)", len(failures), failures[0])
	}
	return nil
}
