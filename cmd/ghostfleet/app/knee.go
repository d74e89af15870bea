package app

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type kneeOptions struct {
	*globals
	runs.KneeOptions
	output string
}

func newKneeCommand(g *globals) *cobra.Command {
	knee := &cobra.Command{
		Use:   "knee",
		Short: "Search for the highest rate the fleet sustains",
		Long: `Find a knee by search, not by guess: run the workload at a rising rate,
then bisect between the last rate that held and the first that broke.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	o := &kneeOptions{globals: g, KneeOptions: runs.NewKneeOptions()}
	churn := &cobra.Command{
		Use:   "churn",
		Short: "The knee of sustainable churn: the highest rate that keeps creates and the mutating SLO",
		Long: `Run open-loop churn steps (each as ` + "`ghostfleet churn RATE STEP`" + ` runs,
recorded in its own run folder): from --from pods/s, doubling up to --max
until a step breaks, then halving the gap between the last step that held
and the first that broke until it is within --resolution.

A step holds when at least --min-ratio of its create slots succeeded (a
429 from API Priority and Fairness is a failed create, never retried) and,
when the fleet has Prometheus, the apiserver's mutating-calls SLI
(apiserver_request_sli_duration_seconds, scope resource: the upstream API
call latency SLO's metric) stayed at p99 ≤ 1s for every resource and
verb. The SLI is taken over each step and its cooldown, not over
upstream's 5-minute window, so that every step is judged on its own
requests; the verdict says so. --creates-only judges on the create ratio
alone and still records the SLI: a fleet with Prometheus is then judged
like one without (up --prometheus-port 0).

The search's record (results/knee-<time>/run.json) lists every step with
its create ratio, 429s, client create p99, SLI p99 and the churn run it
came from.`,
		Example: "  ghostfleet knee churn\n  ghostfleet knee churn --from 50 --max 400 --step 2m --resolution 0.05 -o json",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := churn.Flags()
	fs.Float64Var(&o.From, "from", o.From, "first rate, pods/s")
	fs.Float64Var(&o.Max, "max", o.Max, "highest rate tried, pods/s")
	fs.DurationVar(&o.StepDuration, "step", o.StepDuration, "how long each step churns")
	fs.Float64Var(&o.Resolution, "resolution", o.Resolution, "stop when the first failing rate is within this share above the knee")
	fs.Float64Var(&o.MinRatio, "min-ratio", o.MinRatio, "share of create slots that must succeed for a step to hold")
	fs.DurationVar(&o.Cooldown, "cooldown", o.Cooldown, "wait after each step (queues drain, Prometheus scrapes)")
	fs.BoolVar(&o.CreatesOnly, "creates-only", false, "judge steps on --min-ratio alone; the mutating SLI is still measured and recorded")
	fs.IntVar(&o.Churn.GPUs, "gpus", o.Churn.GPUs, "GPUs each pod requests")
	fs.DurationVar(&o.Churn.Lifetime, "lifetime", 0, "how long each pod lives (default: 10s, or half the step if shorter)")
	fs.StringVar(&o.Churn.Namespace, "namespace", o.Churn.Namespace, "workload namespace")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = churn.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	knee.AddCommand(churn)
	return knee
}

func (o *kneeOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Knee(ctx, o.env(p, ""), o.KneeOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printKnee(w, res) }); ferr != nil {
		return ferr
	}
	return err
}

func printKnee(w io.Writer, r runs.KneeResult) {
	fmt.Fprintln(w, r.Verdict)
	fmt.Fprintln(w, "SLO:", r.SLO)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RATE\tCREATES\t429\tCREATE P99\tSLI P99\tHELD\tRUN")
	for _, s := range r.Steps {
		sli := "-"
		if s.MutatingP99 != nil {
			sli = fmt.Sprintf("%.2fs (%s)", *s.MutatingP99, s.Where)
		}
		fmt.Fprintf(tw, "%g\t%.1f%%\t%d\t%.2fs\t%s\t%v\t%s\n", s.Rate, 100*s.CreateRatio, s.Errors429, s.CreateP99, sli, s.Pass, s.RunID)
	}
	tw.Flush()
}
