package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

type snapshotOptions struct {
	*globals
	since         time.Duration
	runID         string
	step          time.Duration
	check         bool
	prometheusURL string
	source        string
	sample        time.Duration
}

// Snapshot sources: --source.
const (
	sourceAuto       = "auto"
	sourcePrometheus = "prometheus"
	sourceDirect     = "direct"
)

func newSnapshotCommand(g *globals) *cobra.Command {
	o := &snapshotOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Write the SLO metrics of a time window (or a run) into a new results/ folder",
		Long: `Query Prometheus for every query of GhostFleet's catalog (the seed's
PromQL cheat sheet and the upstream SLIs) over the last --since, or over the
window of run --run, and write a new folder results/snapshot-<time>/ with
run.json (fleet, versions, window, the run records that overlap it),
metrics.json (every series) and slo.json (a verdict per SLO, as
sig-scalability defines them: API call latency p99 ≤ 1s for mutating calls
and single-object reads, ≤ 5s for LISTs in one namespace, ≤ 30s for LISTs
across the cluster; pod startup p99 ≤ 5s judged on the steady-state runs
only, bursts listed but not judged; GhostFleet's own scheduling-latency
target p99 ≤ 5s, marked as not upstream's). docs/measurements.md defines
every figure.

When no Prometheus answers (it is stopped, or an attached cluster has none:
pass --prometheus-url if it has), or with --source direct, the snapshot
comes from the components' own /metrics instead: GhostFleet scrapes the
apiserver, etcd, scheduler and controller-manager every --step for
--sample, with the addresses and client certificates kwokctl gave
Prometheus, and computes the same queries (rates and histogram quantiles,
as PromQL does) between the scrapes. Of an attached cluster it reads the
apiserver only, through the kubeconfig: etcd and scheduler queries then
have no data. That source has no history: the snapshot covers the
sampling time, not --since, and says so in run.json and slo.json
("source": "direct scrape") and in the report. --run needs Prometheus.

With --check it exits 1 when an SLO fails, for CI jobs. Prometheus scrapes
every 15s and rate() needs two scrapes: right after a short run on a fresh
fleet, counters that the run created may not have a rate yet — wait half a
minute before the snapshot.`,
		Example: `  ghostfleet snapshot
  ghostfleet snapshot --since 1h --check
  ghostfleet snapshot --run load-20261129-172921
  # no Prometheus: sample the components for a minute, every 10s
  ghostfleet snapshot --source direct --sample 1m --step 10s
  ghostfleet snapshot --kubeconfig ~/.kube/other.yaml --sample 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.since, "since", 15*time.Minute, "window: this long before now")
	fs.StringVar(&o.runID, "run", "", "window: the run with this id (its folder name), a minute either side")
	fs.DurationVar(&o.step, "step", 15*time.Second, "resolution of the series (Prometheus scrapes every 15s); with the direct source, how often it scrapes")
	fs.BoolVar(&o.check, "check", false, "exit 1 when an SLO fails")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	fs.StringVar(&o.source, "source", sourceAuto, "where the series come from: auto (Prometheus when it answers, else direct), prometheus, direct (scrape the components' /metrics)")
	fs.DurationVar(&o.sample, "sample", 30*time.Second, "with the direct source: how long to sample the components (at least --step)")
	return cmd
}

func (o *snapshotOptions) run(ctx context.Context) error {
	if o.since <= 0 {
		return fmt.Errorf("--since %s is out of range: it must be more than 0 (e.g. 15m)", o.since)
	}
	if o.step < time.Second {
		return fmt.Errorf("--step %s is out of range: it must be at least 1s", o.step)
	}
	switch o.source {
	case sourceAuto, sourcePrometheus, sourceDirect:
	default:
		return fmt.Errorf("--source %q is not a source: use auto, prometheus or direct", o.source)
	}
	if o.source == sourceDirect {
		if err := o.checkSample(); err != nil {
			return err
		}
	}
	if o.source == sourceDirect && o.runID != "" {
		return fmt.Errorf("--run %s needs Prometheus's history: the direct source samples the components now (drop --source direct)", o.runID)
	}
	end := time.Now()
	start := end.Add(-o.since)
	if o.runID != "" {
		r, err := record.FindRun(o.resultsDir, o.runID)
		if err != nil {
			return err
		}
		start, end = r.Started.Add(-time.Minute), r.Ended.Add(time.Minute)
		if end.After(time.Now()) {
			end = time.Now()
		}
	}
	st, err := fleet.GetStatus(ctx, o.target(), o.prometheusURL)
	if err != nil {
		return err
	}
	fl := report.Fleet{Cluster: st.Cluster, Profile: st.Profile, Nodes: st.Nodes.Total, GPUs: st.GPUs.Allocatable, Prometheus: st.Prometheus.URL}
	if s, err := fleet.LoadState(o.name); err == nil && !st.Attached {
		fl.Versions = s.Versions
	}
	opts := report.SnapshotOptions{Root: o.resultsDir, Fleet: fl, Start: start, End: end, Step: o.step}

	// Why Prometheus is not used, when it is not: said before sampling.
	var fallback string
	switch {
	case o.source == sourceDirect:
	case st.Prometheus.URL == "":
		fallback = fmt.Sprintf("no Prometheus for %s (pass --prometheus-url if it has one)", o.target())
	case !st.Prometheus.Reachable:
		fallback = fmt.Sprintf("Prometheus at %s is unreachable (%s)", st.Prometheus.URL, st.Prometheus.Error)
	}
	direct := o.source == sourceDirect || fallback != ""
	switch {
	case direct && o.source == sourcePrometheus:
		return fmt.Errorf("%s; nothing was written (--source auto or direct scrapes the components instead)", fallback)
	case direct && o.runID != "":
		return fmt.Errorf("%s, and --run %s needs Prometheus's history: nothing was written (without --run, the snapshot samples the components' /metrics directly)", fallback, o.runID)
	case direct:
		if err := o.sampleDirect(ctx, fallback, &opts); err != nil {
			return err
		}
	default:
		prom, err := metrics.NewPrometheus(st.Prometheus.URL)
		if err != nil {
			return err
		}
		opts.Source = prom
	}
	dir, verdicts, err := report.Snapshot(ctx, opts)
	if err != nil {
		return err
	}
	w := o.streams.Out
	if direct {
		fmt.Fprintf(w, "snapshot from a direct scrape of the components, sampled %s to %s (not --since), written to %s\n", opts.Start.UTC().Format(time.RFC3339), opts.End.UTC().Format(time.RFC3339), dir)
	} else {
		fmt.Fprintf(w, "snapshot of %s to %s written to %s\n", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), dir)
	}
	failed := 0
	for _, v := range verdicts {
		value := "—"
		if v.Status != report.StatusNoData {
			value = fmt.Sprintf("%.3g (%s)", v.Value, v.Where)
		}
		whose := ""
		if v.Origin == metrics.OriginGhostFleet {
			whose = "  (GhostFleet's own target, not an upstream SLO)"
		}
		fmt.Fprintf(w, "  %-8s %-24s ≤ %-5g worst %s%s\n", v.Status, v.ID, v.Threshold, value, whose)
		if v.Note != "" {
			fmt.Fprintf(w, "           %s\n", v.Note)
		}
		if v.Status == report.StatusFail {
			failed++
		}
	}
	if o.check && failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d SLOs failed", failed)}
	}
	return nil
}

// sampleDirect scrapes the components for --sample and makes the
// recording the snapshot's source, its window the sampling time.
func (o *snapshotOptions) sampleDirect(ctx context.Context, why string, opts *report.SnapshotOptions) error {
	if err := o.checkSample(); err != nil {
		return fmt.Errorf("%s, and %w", why, err)
	}
	endpoints, err := fleet.MetricsEndpoints(ctx, o.target())
	if err != nil {
		return err
	}
	jobs := make([]string, len(endpoints))
	for i, e := range endpoints {
		jobs[i] = e.Job
	}
	p := o.streams.printer(false)
	defer p.Close()
	if why != "" {
		p.Report(progress.Event{Kind: progress.Warn, Message: why + ": sampling the components' /metrics directly instead"})
	}
	total := int(o.sample/o.step) + 1
	done := progress.Step(p.Report, "sample", fmt.Sprintf("scraping %s every %s for %s (%d scrapes)", strings.Join(jobs, ", "), o.step, o.sample, total), o.sample)
	rec, failures, err := metrics.Sample(ctx, metrics.SampleOptions{
		Endpoints: endpoints, Period: o.sample, Step: o.step,
		Scraped: func(n, total int, _ time.Time, errs []error) {
			p.Report(progress.Event{Kind: progress.Update, Step: "sample", Done: n, Total: total})
			for _, e := range errs {
				p.Report(progress.Event{Kind: progress.Warn, Message: "scrape " + e.Error()})
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
	p.Close()
	scrapes := rec.Scrapes()
	opts.Start, opts.End = scrapes[0], scrapes[len(scrapes)-1]
	opts.Source = rec
	opts.SourceName = metrics.DirectSourceName
	opts.Note = fmt.Sprintf("the window is the %s the components were sampled for, a scrape every %s, not --since: the direct scrape source has no history", o.sample, o.step)
	if len(failures) > 0 {
		opts.Note += fmt.Sprintf("; %d scrapes failed (first: %v)", len(failures), failures[0])
	}
	return nil
}

func (o *snapshotOptions) checkSample() error {
	if o.sample < o.step {
		return fmt.Errorf("--sample %s is out of range: it must be at least --step (%s), for two scrapes to take rates between", o.sample, o.step)
	}
	return nil
}
