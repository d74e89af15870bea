package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

type churnOptions struct {
	*globals
	limited        bool
	gpus           int
	lifetime       time.Duration
	namespace      string
	concurrency    int
	requestTimeout time.Duration
	output         string
}

func newChurnCommand(g *globals, limited bool) *cobra.Command {
	o := &churnOptions{globals: g, limited: limited}
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
	fs.IntVar(&o.gpus, "gpus", 1, "GPUs each pod requests")
	fs.DurationVar(&o.lifetime, "lifetime", 0, "how long each pod lives (default: 10s, or half the duration if shorter)")
	fs.StringVar(&o.namespace, "namespace", "gf-churn", "workload namespace")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	if limited {
		fs.IntVar(&o.concurrency, "concurrency", 50, "requests in flight at most")
		fs.DurationVar(&o.requestTimeout, "request-timeout", 2*time.Second, "give up on a request after this long")
	}
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *churnOptions) run(ctx context.Context, args []string) error {
	rate, err := parseRate(args[0])
	if err != nil {
		return err
	}
	dur, err := parseDuration(args[1])
	if err != nil {
		return err
	}
	kind := "churn"
	if o.limited {
		kind = "churn-limited"
	}
	opts := workload.ChurnOptions{
		RunID: runID(kind), Namespace: o.namespace, Rate: rate, Duration: dur, Lifetime: o.lifetime, GPUs: o.gpus,
		Limited: o.limited, Concurrency: o.concurrency, RequestTimeout: o.requestTimeout,
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	env, capacity, err := o.startWorkload(ctx, o.output, "")
	if err != nil {
		return err
	}
	if int64(o.gpus) > capacity.MaxNodeGPUs {
		return fmt.Errorf("GPUs per pod %d is more than any node has (largest: %d)", o.gpus, capacity.MaxNodeGPUs)
	}
	if need := int64(rate*opts.Lifetime.Seconds()+1) * int64(o.gpus); need > capacity.FreeGPUs {
		fmt.Fprintf(o.streams.ErrOut, "warning: a steady population of %.0f pods × %d GPUs needs %d GPUs; %d are free: the rest stay Pending\n",
			rate*opts.Lifetime.Seconds(), o.gpus, need, capacity.FreeGPUs)
	}
	if err := workload.EnsureNamespace(ctx, env.clients.Admin, o.namespace); err != nil {
		return err
	}
	load, counter, err := env.clients.LoadClientset(o.namespace)
	if err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	opts.Report, opts.Requests = p.Report, counter
	churn, err := workload.NewChurn(workload.NewPodAPI(load, o.namespace), opts)
	if err != nil {
		return err
	}
	if o.streams.Live != nil {
		o.streams.Live(churn)
	}
	started := time.Now().UTC()
	done := progress.Step(p.Report, "churn", fmt.Sprintf("%s at %g pods/s for %s (pods live %s)", kind, rate, dur, opts.Lifetime), 0)
	res, err := churn.Run(ctx)
	done()
	if err != nil {
		return err
	}
	ended := time.Now().UTC()
	cleanDone := progress.Step(p.Report, "cleanup", "removing the run's remaining pods (not measured)", 0)
	cerr := workload.Cleanup(context.WithoutCancel(ctx), env.clients.Admin, o.namespace, opts.RunID)
	cleanDone()
	p.Close()

	outcome := "completed"
	if res.Interrupted {
		outcome = "interrupted"
	}
	rec := record.Record{
		ID: opts.RunID, Kind: kind, Started: started, Ended: ended, Outcome: outcome, Params: opts, Result: res,
		Phases: []record.Phase{{Name: kind, Start: started, End: ended}},
	}
	// Churn removed its pods itself: nothing is left behind.
	if err := env.report(ctx, o.streams, o.output, o.resultsDir, "", rec, res, func(w io.Writer) { printChurn(w, kind, res) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("removing the run's pods: %w (`ghostfleet unload` removes every GhostFleet workload)", cerr)
	}
	return nil
}

func printChurn(w io.Writer, kind string, r workload.ChurnResult) {
	fmt.Fprintf(w, "%s: target %g pods/s for %.0fs (pods live %.0fs)\n", kind, r.TargetRate, r.DurationSeconds, r.LifetimeSeconds)
	fmt.Fprintf(w, "  creates: %d of %d slots succeeded, achieved %.1f pods/s (%.1f%% of target)\n",
		r.Created, r.Attempted[workload.VerbCreate], r.AchievedCreateRate, 100*r.CreateRatio)
	fmt.Fprintf(w, "  deletes: %d of %d, achieved %.1f pods/s\n", r.Deleted, r.Attempted[workload.VerbDelete], r.AchievedDeleteRate)
	for _, verb := range []string{workload.VerbCreate, workload.VerbDelete} {
		l := r.Latency[verb]
		fmt.Fprintf(w, "  %-7s latency p50 %.3fs  p99 %.3fs  max %.3fs  (%d requests)\n", verb, l.P50, l.P99, l.Max, l.Count)
	}
	fmt.Fprintln(w, "  errors:", countsText(r.Errors))
	if r.Requests != nil {
		printRequests(w, *r.Requests)
	}
	if r.Limited {
		fmt.Fprintf(w, "  shed (all %d slots busy): create %d, delete %d; request timeout %.1fs\n",
			r.Concurrency, r.Shed[workload.VerbCreate], r.Shed[workload.VerbDelete], r.RequestTimeout)
	}
}
