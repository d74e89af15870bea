package app

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

type churnOptions struct {
	*globals
	runs.ChurnOptions
	output string
}

func newChurnCommand(g *globals, limited bool) *cobra.Command {
	o := &churnOptions{globals: g, ChurnOptions: runs.NewChurnOptions(limited)}
	use, short := "churn RATE DURATION", "Open-loop create/delete churn at RATE pods/s for DURATION"
	long := `Create pods at RATE per second and delete each one --lifetime after it was
created, so the population stays steady, for DURATION (seconds, or 10m
form). The load is open loop: requests go out on schedule whatever the
server does, so the achieved rate and every error (429, other 4xx, 5xx,
timeouts, connection failures) show what the control plane could take.
Requests are not retried and carry the ServiceAccount identity
ghostfleet-load, so API Priority and Fairness applies to them.

Reports achieved create and delete rates, per-second counts, request
latency p50/p99 per verb and errors by kind; the run record goes to
results/churn-<time>/run.json.`
	if limited {
		use, short = "churn-limited RATE DURATION", "The same churn with bounded in-flight requests and a per-request timeout"
		long += `

churn-limited keeps at most --concurrency requests in flight; a request
whose turn comes while all are busy is shed (not sent) and counted, and
each request gives up after --request-timeout.`
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Aliases: map[bool][]string{true: {"churn_limited"}}[limited],
		Example: "  ghostfleet " + map[bool]string{false: "churn", true: "churn-limited"}[limited] + " 200 600\n" +
			"  ghostfleet " + map[bool]string{false: "churn", true: "churn-limited"}[limited] + " 50 60s -o json",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.GPUs, "gpus", o.GPUs, "GPUs each pod requests")
	fs.DurationVar(&o.Lifetime, "lifetime", 0, "how long each pod lives (default: 10s, or half the duration if shorter)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	if limited {
		fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "requests in flight at most")
		fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "give up on a request after this long")
	}
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *churnOptions) run(ctx context.Context, args []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var err error
	if o.Rate, err = runs.Float("rate", args[0]); err != nil {
		return err
	}
	if o.Duration, err = runs.Duration("duration", args[1]); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Churn(ctx, o.env(p, ""), o.ChurnOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printChurn(w, res.Kind, res.ChurnResult) }); ferr != nil {
		return ferr
	}
	return err
}

func printChurn(w io.Writer, kind string, r workload.ChurnResult) {
	fmt.Fprintf(w, "%s: target %g pods/s for %.0fs (pods live %.0fs)\n", kind, r.TargetRate, r.DurationSeconds, r.LifetimeSeconds)
	fmt.Fprintf(w, "  creates: %d of %d slots succeeded, achieved %.1f pods/s (%.1f%% of target)\n",
		r.Created, r.Attempted[workload.VerbCreate], r.AchievedCreateRate, 100*r.CreateRatio)
	fmt.Fprintf(w, "  deletes: %d of %d, achieved %.1f pods/s\n", r.Deleted, r.Attempted[workload.VerbDelete], r.AchievedDeleteRate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, verb := range []string{workload.VerbCreate, workload.VerbDelete} {
		l := r.Latency[verb]
		fmt.Fprintf(tw, "  %s\tlatency p50 %.3fs\tp99 %.3fs\tmax %.3fs\t(%d requests)\n", verb, l.P50, l.P99, l.Max, l.Count)
	}
	tw.Flush()
	fmt.Fprintln(w, "  errors:", countsText(r.Errors))
	if r.Requests != nil {
		printRequests(w, *r.Requests)
	}
	if r.Limited {
		fmt.Fprintf(w, "  shed (all %d slots busy): create %d, delete %d; request timeout %.1fs\n",
			r.Concurrency, r.Shed[workload.VerbCreate], r.Shed[workload.VerbDelete], r.RequestTimeout)
	}
}
