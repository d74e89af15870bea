package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

type binpackOptions struct {
	*globals
	opts   workload.BinpackOptions
	mix    string
	output string
}

func newBinpackCommand(g *globals) *cobra.Command {
	o := &binpackOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "binpack",
		Short: "Fill the fleet with mixed 1-8 GPU pods and watch scheduling as it gets tight",
		Long: `Fill the fleet's GPUs to --fill with pods of mixed sizes (--mix, by count),
created at a steady --rate below the scheduler's throughput so that the
time from creation to binding is the scheduler's own work. Reports that
latency per decile of occupancy (does it climb as feasible nodes become
scarce?), pods left unschedulable by size, and the fragmentation left:
nodes by free GPUs and the free GPUs no whole-node pod can use.`,
		Example: `  ghostfleet binpack --fill 0.95
  ghostfleet binpack --fill 0.9 --mix 1:10,8:90`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.Float64Var(&o.opts.Fill, "fill", 0.95, "share of the fleet's GPUs to fill (0-1]")
	fs.StringVar(&o.mix, "mix", "1:40,2:30,4:20,8:10", "pod sizes and their weights by count, SIZE:WEIGHT,…")
	fs.Float64Var(&o.opts.Rate, "rate", 20, "pods created per second (keep it below the scheduler's throughput, or queueing hides its work)")
	fs.Uint64Var(&o.opts.Seed, "seed", 1, "seed of the size draw (same seed, same pods)")
	fs.StringVar(&o.opts.Namespace, "namespace", "gf-binpack", "workload namespace")
	fs.DurationVar(&o.opts.Timeout, "timeout", 15*time.Minute, "give up after this long")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

func (o *binpackOptions) run(ctx context.Context) error {
	mix, err := workload.ParseMix(o.mix)
	if err != nil {
		return err
	}
	o.opts.Mix = mix
	env, capacity, err := o.startWorkload(ctx, o.output, "")
	if err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	o.opts.RunID, o.opts.Report = runID("binpack"), p.Report
	if err := o.opts.Validate(capacity); err != nil {
		return err
	}
	res, rec, err := workload.Binpack(ctx, env.clients, o.opts, capacity)
	p.Close()
	if err != nil {
		return err
	}
	return env.report(ctx, o.streams, o.output, o.resultsDir, o.opts.Namespace, rec, res, func(w io.Writer) { printBinpack(w, res) })
}

func printBinpack(w io.Writer, r workload.BinpackResult) {
	fmt.Fprintf(w, "binpack: %d pods for %d of %d GPUs (fill %.0f%%) — %s after %.1fs\n", r.Pods, r.TargetGPUs, r.TotalGPUs, 100*r.Fill, r.Outcome, r.DurationSeconds)
	fmt.Fprintf(w, "  occupancy reached %.1f%%; unschedulable pods by size %v\n", 100*r.Occupancy, r.UnschedulableBySize)
	fmt.Fprintln(w, "  occupancy at bind   pods  bound/s   create→scheduled p50     p99")
	for _, d := range r.Deciles {
		fmt.Fprintf(w, "  %-17s %6d %8.1f   %20.3fs %8.3fs\n", d.Occupancy, d.Latency.Count, d.BindRate, d.Latency.P50, d.Latency.P99)
	}
	fmt.Fprintf(w, "  nodes by free GPUs (0..): %v\n", r.FreeGPUsPerNode)
	fmt.Fprintf(w, "  free GPUs on partly used nodes, unusable by a whole-node pod: %d\n", r.StrandedForWholeNode)
	printRequests(w, r.Requests)
}
