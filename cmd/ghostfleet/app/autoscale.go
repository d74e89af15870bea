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

type autoscaleOptions struct {
	*globals
	runs.AutoscaleOptions
	keep   bool
	output string
}

func newAutoscaleCommand(g *globals) *cobra.Command {
	o := &autoscaleOptions{globals: g, AutoscaleOptions: runs.NewAutoscaleOptions()}
	cmd := &cobra.Command{
		Use:   "autoscale [PODS [GPUS]]",
		Short: "Measure node autoscaling: GPU pods beyond the fleet, Karpenter adds the nodes, then removes them",
		Long: `On a fleet brought up with --autoscaler karpenter, create PODS pods of GPUS
GPUs each (default 10 × 8), more than the fleet has free: Karpenter adds
nodes of the NodePools' profiles for those that do not fit, GhostFleet's
kwok controller makes them Ready and the scheduler binds the pods there.
Then the pods are deleted and Karpenter removes the nodes it added
(consolidation, --consolidate-after of up); --keep leaves pods and nodes.
Karpenter's default disruption budget removes at most 10 % of a NodePool's
nodes at a time, so the scale-down is the slow half: about 12 minutes for
90 nodes on this machine, within the default --timeout of 20 minutes.

Records node-provisioning latency per pod that ran on a new node (pod
created → its NodeClaim created → its node Ready → the pod Running,
p50/p99), nodes added and removed, and each process's CPU during the
scale-up (Karpenter's included); the run record goes to
results/autoscale-<time>/run.json.`,
		Example: "  ghostfleet autoscale                 # 10 pods of 8 GPUs\n  ghostfleet autoscale 100 8 -o json   # 100 DGX nodes' worth",
		Args:    cobra.MaximumNArgs(2),
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up on the scale-up (and on the scale-down) after this long")
	fs.BoolVar(&o.keep, "keep", false, "leave the pods (and so Karpenter's nodes) when they all run")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *autoscaleOptions) run(ctx context.Context, args []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var err error
	if len(args) > 0 {
		if o.Pods, err = runs.Int("pod count", args[0]); err != nil {
			return err
		}
	}
	if len(args) > 1 {
		if o.GPUs, err = runs.Int("GPUs per pod", args[1]); err != nil {
			return err
		}
	}
	o.ScaleDown = !o.keep
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Autoscale(ctx, o.env(p, ""), o.AutoscaleOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printAutoscale(w, res) }); ferr != nil {
		return ferr
	}
	return err
}

func printAutoscale(w io.Writer, r runs.AutoscaleResult) {
	fmt.Fprintf(w, "autoscale: %d/%d pods running (%d on %d nodes Karpenter added, %d NodeClaims; %d GPUs were free) in %.1fs\n",
		r.Running, r.Pods, r.OnNewNodes, r.NodesAdded, r.NodeClaims, r.FreeGPUsBefore, r.ScaleUpSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  stage\tp50\tp99\tmax\tpods")
	row := func(name string, p workload.Percentiles) {
		fmt.Fprintf(tw, "  %s\t%.2fs\t%.2fs\t%.2fs\t%d\n", name, p.P50, p.P99, p.Max, p.Count)
	}
	row("pod created → NodeClaim", r.PodToNodeClaim)
	row("NodeClaim → node Ready", r.NodeClaimToReady)
	row("node Ready → pod Running", r.ReadyToRunning)
	row("pod created → Running (new nodes)", r.NewNodePods)
	row("pod created → Running (all)", r.PodToRunning)
	_ = tw.Flush()
	fmt.Fprintf(w, "  control plane during the scale-up: %.2f cores; %s\n", r.ScaleUpCores, secondsByProcess(r.ScaleUpCPU))
	if r.ScaleDownSeconds > 0 {
		fmt.Fprintf(w, "  scale-down: %d of %d added nodes removed %.1fs after the pods were deleted\n", r.NodesRemoved, r.NodesAdded, r.ScaleDownSeconds)
	}
}
