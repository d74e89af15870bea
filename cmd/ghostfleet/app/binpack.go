package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

type binpackOptions struct {
	*globals
	runs.BinpackOptions
	mix    string
	output string
}

func newBinpackCommand(g *globals) *cobra.Command {
	o := &binpackOptions{globals: g, BinpackOptions: runs.NewBinpackOptions()}
	cmd := &cobra.Command{
		Use:   "binpack",
		Short: "Fill the fleet with mixed 1-8 GPU pods and watch scheduling as it gets tight",
		Long: `Fill the fleet's GPUs to --fill with pods of mixed sizes (--mix, by count),
created at a steady --rate below the scheduler's throughput so that the
time from creation to binding is the scheduler's own work. Reports that
latency per decile of occupancy (does it climb as feasible nodes become
scarce?), pods left unschedulable by size, and the fragmentation left:
nodes by free GPUs and the free GPUs no whole-node pod can use.

On a fleet up with --gpu-model dra the pods ask for their GPUs through
ResourceClaimTemplates, one per pod size (--claim count, the default
there): the scheduler's DRA allocator places them, and the fill and the
fragmentation count devices allocated to claims. If the fleet's
DeviceClass serves nvidia.com/gpu (up or nodes --dra-extended-resource),
--claim none asks for nvidia.com/gpu instead and the scheduler makes each
pod's claim: MostAllocated on nvidia.com/gpu then scores the devices.`,
		Example: `  ghostfleet binpack --fill 0.95
  ghostfleet binpack --fill 0.9 --mix 1:10,8:90
  ghostfleet binpack --fill 0.95 --claim count   # on a fleet up with --gpu-model dra
  ghostfleet binpack --fill 0.95 --claim none    # ... and --dra-extended-resource`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.Float64Var(&o.Fill, "fill", o.Fill, "share of the fleet's GPUs to fill (0-1]")
	fs.StringVar(&o.mix, "mix", runs.DefaultMix, "pod sizes and their weights by count, SIZE:WEIGHT,…")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "pods created per second (keep it below the scheduler's throughput, or queueing hides its work)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the size draw (same seed, same pods)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up after this long")
	fs.StringVar(&o.Claim, "claim", "", "how pods ask for GPUs: "+strings.Join(workload.BinpackClaims, " or ")+" (default: as the fleet offers them)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("claim", fixed(workload.BinpackClaims...))
	return cmd
}

func (o *binpackOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var err error
	if o.Mix, err = workload.ParseMix(o.mix); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Binpack(ctx, o.env(p, ""), o.BinpackOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printBinpack(w, res) }); ferr != nil {
		return ferr
	}
	return err
}

func printBinpack(w io.Writer, r runs.BinpackResult) {
	claim := claimWords(r.Claim)
	if r.Claim == workload.ClaimNone { // recorded only on a DRA fleet
		claim = ", " + fleet.ResourceGPU + " served by DRA devices"
	}
	fmt.Fprintf(w, "binpack: %d pods for %d of %d GPUs (fill %.0f%%%s) — %s after %.1fs\n", r.Pods, r.TargetGPUs, r.TotalGPUs, 100*r.Fill, claim, r.Outcome, r.DurationSeconds)
	fmt.Fprintf(w, "  occupancy reached %.1f%%; unschedulable pods by size %v\n", 100*r.Occupancy, r.UnschedulableBySize)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  occupancy at bind\tpods\tbound/s\tcreate→scheduled p50\tp99")
	for _, d := range r.Deciles {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f\t%.3fs\t%.3fs\n", d.Occupancy, d.Latency.Count, d.BindRate, d.Latency.P50, d.Latency.P99)
	}
	tw.Flush()
	fmt.Fprintf(w, "  nodes by free GPUs (0..): %v\n", r.FreeGPUsPerNode)
	fmt.Fprintf(w, "  free GPUs on partly used nodes, unusable by a whole-node pod: %d\n", r.StrandedForWholeNode)
	printRequests(w, r.Requests)
}
