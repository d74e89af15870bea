package app

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// exitWorse is ab's exit code when B is worse than A past the threshold
// (1 stays "the command failed", 130 "interrupted").
const exitWorse = 3

type abOptions struct {
	*globals
	binaryFlags
	runs.ABOptions
	threshold string
	output    string
	verbose   bool
}

func newABCommand(g *globals) *cobra.Command {
	o := &abOptions{globals: g, ABOptions: runs.NewABOptions(), threshold: "10%"}
	cmd := &cobra.Command{
		Use:   "ab --state STATE --workload FILE --a PROFILE --b PROFILE",
		Short: "Replay one workload from one saved state under two control-plane profiles and compare",
		Long: `Scheduler A/B from one saved state. For side A, then side B: bring up a
fresh fleet (--fleet, default the saved fleet's name with -ab) with that
side's profile, restore the saved state into it (` + "`ghostfleet save`" + ` made
it; its nodes and pods come back as saved), replay the workload file (each
job created at its arrival time, as train creates its jobs), take a
snapshot of the replay's window, record it, and remove the fleet. Then
write the comparison into a new results/ab-<time>/ folder: report.html
(the figures side by side, GPU occupancy and fragmentation over time, the
control plane's SLOs and queries as report --compare shows them) and
run.json (every figure, typed).

PROFILE is a built-in profile (` + strings.Join(fleet.ComponentProfileNames(), ", ") + `) or a profile file's
path (the format of ` + "`ghostfleet profile show default`" + `).

Figures per side: per job, time to start (creation → last pod running),
gang wait (first pod bound → last running) and whether it started fully,
partly or not at all; over the replay, GPU occupancy every second,
fragmentation (free GPUs on partly used nodes), GPU-seconds held by partly
started jobs, and control-plane CPU per pod (from /proc).

Verdict and exit code: B is worse when, on any judged metric, it is worse
than A by more than --threshold × A plus the metric's slack. Judged by
default (--judge): jobs-started (jobs fully started, slack 0), start-p99
(time to start a job p99, 1 s), partial-gpu-seconds (GPU-seconds held by
partly started jobs, 16 GPU·s) and fragmented-gpus (free GPUs on partly
used nodes at the end, 0). cpu-per-pod (control-plane CPU per pod, 2 ms)
is shown and judged only when named: at small sizes it is mostly the idle
control plane's cost, and on a shared machine it moves by tens of
percent. Exit code 0 when B is not worse, 3 when it is, 1 on an error,
130 when interrupted.

The fleet is removed after each side, also on an error or Ctrl-C (a
restore that has begun first runs to its end); --keep leaves B's up.
An interrupted ab writes no comparison; the sides' records stay.

A workload file is YAML or JSON: version: 1 and a list of jobs, each with
at (arrival after the replay starts: 90s or seconds), pods, gpusPerPod,
and optionally name and claim. ` + "`ghostfleet workload gen`" + ` writes a seeded one,
` + "`ghostfleet train --write-workload FILE`" + ` the one train runs, and
` + "`ghostfleet workload check FILE`" + ` checks one.`,
		Example: `  ghostfleet up --name gf-src --nodes 64 && ghostfleet --name gf-src save before-ab
  ghostfleet workload gen --seed 7 --jobs 20 --pods 2,4,8 --gap 3s --out jobs.yaml
  ghostfleet ab --state before-ab --workload jobs.yaml --a default --b tuned
  ghostfleet ab --state before-ab --workload jobs.yaml --a default --b ./mine.yaml --threshold 25%`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.State, "state", "", "saved state: its folder's name (state-<time>) or the name given to save")
	fs.StringVar(&o.Workload, "workload", "", "workload `FILE` (YAML or JSON; see above)")
	fs.StringVar(&o.A, "a", o.A, "side A's profile: a built-in name or a profile file")
	fs.StringVar(&o.B, "b", o.B, "side B's profile: a built-in name or a profile file")
	fs.StringVar(&o.threshold, "threshold", o.threshold, "how much worse than A B may be on a judged metric: 10% or 0.1")
	fs.StringSliceVar(&o.Judge, "judge", o.Judge, "the metrics that decide the verdict, comma-separated: "+strings.Join(runs.ABMetricIDs(), ", "))
	fs.StringVar(&o.Fleet, "fleet", "", "the throwaway fleet each side runs on (default: the saved fleet's name with -ab); it must not exist")
	fs.IntVar(&o.PrometheusPort, "prometheus-port", 0, "port of the throwaway fleet's Prometheus (0: a free one)")
	fs.BoolVar(&o.Keep, "keep", false, "leave side B's fleet up afterwards")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace the jobs are created in")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "per side, give up this long after the last arrival")
	fs.DurationVar(&o.Stall, "stall", o.Stall, "per side, end when no pod was bound or started for this long after the last arrival (0: never)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	o.binaryFlags.add(fs)
	_ = cmd.RegisterFlagCompletionFunc("a", fixed(fleet.ComponentProfileNames()...))
	_ = cmd.RegisterFlagCompletionFunc("b", fixed(fleet.ComponentProfileNames()...))
	return cmd
}

// parseThreshold reads 10% or 0.1.
func parseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("--threshold %q is not a share: write 10%% or 0.1", s)
	}
	if pct {
		f /= 100
	}
	if f < 0 {
		return 0, fmt.Errorf("--threshold %q is out of range: it must be 0 or more", s)
	}
	return f, nil
}

func (o *abOptions) run(ctx context.Context) error {
	if err := o.ownOnly("ab"); err != nil {
		return err
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	t, err := parseThreshold(o.threshold)
	if err != nil {
		return err
	}
	o.Threshold, o.Binaries = t, o.binaries()
	p := o.streams.printer(o.verbose)
	defer p.Close()
	res, err := runs.AB(ctx, o.env(p, ""), o.ABOptions)
	p.Close()
	if err != nil {
		if res.A.Replay.Dir != "" || res.B.Replay.Dir != "" {
			fmt.Fprintf(o.streams.ErrOut, "side records: %s %s\n", res.A.Replay.Dir, res.B.Replay.Dir)
		}
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printAB(w, res) }); ferr != nil {
		return ferr
	}
	fmt.Fprintf(o.streams.ErrOut, "report: %s\n", res.Report)
	if res.Worse() {
		return exitError{code: exitWorse}
	}
	return nil
}

func printAB(w io.Writer, r runs.ABResult) {
	fmt.Fprintf(w, "ab: state %s, workload %s — A %s (%s), B %s (%s)\n", r.State, r.Workload, r.A.Profile, r.A.Replay.Outcome, r.B.Profile, r.B.Replay.Outcome)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  metric\tunit\tA\tB\tB−A\tjudged\tB is\t")
	for _, m := range r.Metrics {
		judged := "no"
		if m.Judged {
			judged = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Title, m.Unit, abNum(m.A, m.HasA), abNum(m.B, m.HasB), abDelta(m), judged, m.Status)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "verdict: %s (threshold %g%% of A plus each metric's slack)\n", r.Summary(), 100*r.Threshold)
}

func abNum(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func abDelta(m report.ABMetric) string {
	if !m.HasA || !m.HasB {
		return ""
	}
	return fmt.Sprintf("%+.4g", m.B-m.A)
}
