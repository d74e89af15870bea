package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

type snapshotOptions struct {
	*globals
	runs.SnapshotOptions
	check         bool
	prometheusURL string
}

func newSnapshotCommand(g *globals) *cobra.Command {
	o := &snapshotOptions{globals: g, SnapshotOptions: runs.NewSnapshotOptions()}
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
apiserver through the kubeconfig, and the others as attach --metrics
said (through the apiserver's pod proxy, or not at all). A component
whose /metrics is hidden (declared so, refused, 403, 404) has its queries
marked "not available on this cluster" with the reason — not "no data",
not zero; everything the apiserver answers is unaffected. That source has no history: the snapshot covers the
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
	fs.DurationVar(&o.Since, "since", o.Since, "window: this long before now")
	fs.StringVar(&o.RunID, "run", "", "window: the run with this ID, else the one in this folder under the results directory, a minute either side")
	fs.DurationVar(&o.Step, "step", o.Step, "resolution of the series (Prometheus scrapes every 15s); with the direct source, how often it scrapes")
	fs.BoolVar(&o.check, "check", false, "exit 1 when an SLO fails")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	fs.StringVar(&o.Source, "source", o.Source, "where the series come from: auto (Prometheus when it answers, else direct), prometheus, direct (scrape the components' /metrics)")
	fs.DurationVar(&o.Sample, "sample", o.Sample, "with the direct source: how long to sample the components (at least --step)")
	_ = cmd.RegisterFlagCompletionFunc("source", fixed(runs.SnapshotSources...))
	return cmd
}

func (o *snapshotOptions) run(ctx context.Context) error {
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Snapshot(ctx, o.env(p, o.prometheusURL), o.SnapshotOptions)
	p.Close()
	if err != nil {
		return err
	}
	printSnapshot(o.streams.Out, res)
	if failed := res.Count(report.StatusFail); o.check && failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d SLOs failed", failed)}
	}
	return nil
}

// printSnapshot says what the snapshot covers and where it is, then a
// line per SLO verdict, its note (if any) under it.
func printSnapshot(w io.Writer, r runs.SnapshotResult) {
	start, end := r.Window.Start.UTC().Format(time.RFC3339), r.Window.End.UTC().Format(time.RFC3339)
	if r.Direct() {
		fmt.Fprintf(w, "snapshot from a direct scrape of the components, sampled %s to %s (not --since), written to %s\n", start, end, r.Dir)
	} else {
		fmt.Fprintf(w, "snapshot of %s to %s written to %s\n", start, end, r.Dir)
	}
	for _, c := range r.Unavailable.Components() {
		fmt.Fprintf(w, "  %s queries: %s\n", c, metrics.NotAvailable(r.Unavailable[c]))
	}
	rows := make([]string, len(r.Verdicts))
	indent := 0 // notes start under the SLO's id
	for i, v := range r.Verdicts {
		indent = max(indent, len("  "+v.Status)+2)
		value := "—"
		if v.Status != report.StatusNoData && v.Status != report.StatusNotAvailable {
			value = fmt.Sprintf("%.3g (%s)", v.Value, v.Where)
		}
		whose := ""
		if v.Origin == metrics.OriginGhostFleet {
			whose = "  (GhostFleet's own target, not an upstream SLO)"
		}
		rows[i] = fmt.Sprintf("  %s\t%s\t≤ %g\tworst %s%s", v.Status, v.ID, v.Threshold, value, whose)
	}
	for i, line := range tabulate(rows) {
		fmt.Fprintln(w, line)
		if note := r.Verdicts[i].Note; note != "" {
			fmt.Fprintf(w, "%*s%s\n", indent, "", note)
		}
	}
}
