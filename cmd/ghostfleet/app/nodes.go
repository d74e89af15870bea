package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

type nodesOptions struct {
	*globals
	gpuProfile string
	workers    int
	noWait     bool
}

func newNodesCommand(g *globals) *cobra.Command {
	o := &nodesOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "nodes N",
		Short: "Scale the fleet to exactly N fake GPU nodes",
		Long: fmt.Sprintf(`Scale the fleet to exactly N fake GPU nodes (0-%d): keep nodes
%s00000..N-1 that exist, create the missing ones, delete the rest. Nodes
are created by parallel requests with no client-side rate limit, carry
GPU feature discovery labels (product, memory, count), topology labels
(zone, block, rack, NVLink domain), kwok's fake-node annotation and a
NoSchedule taint that only GhostFleet's workloads tolerate.

Only nodes that GhostFleet created are ever deleted.`, fleet.MaxNodes, fleet.NodePrefix),
		Example: `  ghostfleet nodes 1000
  ghostfleet nodes 5000 --gpu-profile dgx-b200
  ghostfleet nodes 0            # remove every GhostFleet node`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	// "nodes -5" reaches pflag as a shorthand flag; say what is wrong
	// with the count instead.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if m := negativeArg.FindStringSubmatch(err.Error()); m != nil {
			_, cerr := fleet.ParseNodeCount(m[1])
			return cerr
		}
		return err
	})
	fs := cmd.Flags()
	fs.StringVar(&o.gpuProfile, "gpu-profile", fleet.DefaultGPUProfile, "GPU server new nodes imitate: "+strings.Join(fleet.GPUProfileNames(), ", "))
	fs.IntVar(&o.workers, "workers", 64, "requests in flight at once")
	fs.BoolVar(&o.noWait, "no-wait", false, "return once the nodes exist, without waiting for them to be Ready")
	_ = cmd.RegisterFlagCompletionFunc("gpu-profile", fixed(fleet.GPUProfileNames()...))
	return cmd
}

func (o *nodesOptions) run(ctx context.Context, arg string) error {
	n, err := fleet.ParseNodeCount(arg)
	if err != nil {
		return err
	}
	gpu, err := fleet.LookupGPUProfile(o.gpuProfile)
	if err != nil {
		return err
	}
	if o.workers < 1 || o.workers > 1024 {
		return fmt.Errorf("--workers %d is out of range: allowed are 1-1024", o.workers)
	}
	t := o.target()
	counter := requests.NewCounter()
	cs, err := t.CountedClientset(true, counter)
	if err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := fleet.Scale(ctx, cs, fleet.ScaleOptions{Count: n, Profile: gpu, Workers: o.workers, WaitReady: !o.noWait, Report: p.Report})
	p.Close()
	if err != nil {
		printRequests(o.streams.ErrOut, counter.Stats())
		if t.Attached() && ctx.Err() == nil && res.Created > 0 {
			return fmt.Errorf("%w (is a kwok controller managing fake nodes on %s?)", err, t)
		}
		return err
	}
	out := o.streams.Out
	fmt.Fprintf(out, "%s has %d GhostFleet nodes: %d created, %d deleted, %d kept; requests done in %s",
		t, n, res.Created, res.Deleted, res.Kept, round(res.CreateTime))
	if res.ReadyTime > 0 {
		fmt.Fprintf(out, ", all Ready in %s", round(res.ReadyTime))
	}
	fmt.Fprintln(out)
	printRequests(out, counter.Stats())
	for profile, count := range res.OtherProfiles {
		fmt.Fprintf(out, "  note: %d kept nodes are %s, not %s; `ghostfleet nodes 0` first for a uniform fleet\n", count, profile, gpu.Name)
	}
	return nil
}
