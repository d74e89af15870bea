package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/results"
)

type snapshotOptions struct {
	*globals
	since         time.Duration
	runID         string
	step          time.Duration
	check         bool
	resultsDir    string
	prometheusURL string
}

func newSnapshotCommand(g *globals) *cobra.Command {
	o := &snapshotOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Write the SLO metrics of a time window (or a run) into a new results/ folder",
		Long: `Query Prometheus for every query of GhostFleet's catalog (the seed's
PromQL cheat sheet and the upstream SLIs) over the last --since, or over the
window of run --run, and write a new folder results/snapshot-<time>/ with
run.json (fleet, versions, window, the run records that overlap it),
metrics.json (every series) and slo.json (a verdict per SLO: API call
latency p99 ≤ 1s mutating and single-object reads, ≤ 30s lists; pod
scheduling p99 ≤ 5s; pod startup p99 ≤ 5s from the runs' own measurement).

With --check it exits 1 when an SLO fails, for CI jobs. Prometheus scrapes
every 15s and rate() needs two scrapes: right after a short run on a fresh
fleet, counters that the run created may not have a rate yet — wait half a
minute before the snapshot.`,
		Example: `  ghostfleet snapshot
  ghostfleet snapshot --since 1h --check
  ghostfleet snapshot --run load-20261129-172921`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.since, "since", 15*time.Minute, "window: this long before now")
	fs.StringVar(&o.runID, "run", "", "window: the run with this id (its folder name), a minute either side")
	fs.DurationVar(&o.step, "step", 15*time.Second, "resolution of the series (Prometheus scrapes every 15s)")
	fs.BoolVar(&o.check, "check", false, "exit 1 when an SLO fails")
	fs.StringVar(&o.resultsDir, "results-dir", results.DefaultRoot, "where runs are read from and the snapshot is written")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	return cmd
}

func (o *snapshotOptions) run(ctx context.Context) error {
	if o.since <= 0 {
		return fmt.Errorf("--since %s is out of range: it must be more than 0 (e.g. 15m)", o.since)
	}
	if o.step < time.Second {
		return fmt.Errorf("--step %s is out of range: it must be at least 1s", o.step)
	}
	end := time.Now()
	start := end.Add(-o.since)
	if o.runID != "" {
		r, err := results.FindRun(o.resultsDir, o.runID)
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
	if st.Prometheus.URL == "" {
		return fmt.Errorf("no Prometheus for %s: pass --prometheus-url", o.target())
	}
	if !st.Prometheus.Reachable {
		return fmt.Errorf("prometheus at %s is unreachable (%s); nothing was written", st.Prometheus.URL, st.Prometheus.Error)
	}
	prom, err := metrics.NewPrometheus(st.Prometheus.URL)
	if err != nil {
		return err
	}
	fl := results.Fleet{Cluster: st.Cluster, Profile: st.Profile, Nodes: st.Nodes.Total, GPUs: st.GPUs.Allocatable, Prometheus: st.Prometheus.URL}
	if s, err := fleet.LoadState(o.name); err == nil && !st.Attached {
		fl.Versions = s.Versions
	}
	dir, verdicts, err := results.Snapshot(ctx, results.SnapshotOptions{
		Root: o.resultsDir, Fleet: fl, Start: start, End: end, Step: o.step, Source: prom,
	})
	if err != nil {
		return err
	}
	w := o.streams.Out
	fmt.Fprintf(w, "snapshot of %s to %s written to %s\n", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), dir)
	failed := 0
	for _, v := range verdicts {
		value := "—"
		if v.Status != results.StatusNoData {
			value = fmt.Sprintf("%.3g (%s)", v.Value, v.Where)
		}
		fmt.Fprintf(w, "  %-8s %-22s ≤ %-5g worst %s\n", v.Status, v.ID, v.Threshold, value)
		if v.Status == results.StatusFail {
			failed++
		}
	}
	if o.check && failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d SLOs failed", failed)}
	}
	return nil
}
