package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type nodesOptions struct {
	*globals
	runs.NodesOptions
	output string
}

func newNodesCommand(g *globals) *cobra.Command {
	o := &nodesOptions{globals: g, NodesOptions: runs.NewNodesOptions()}
	cmd := &cobra.Command{
		Use:   "nodes N",
		Short: "Scale the fleet to exactly N fake GPU nodes",
		Long: fmt.Sprintf(`Scale the fleet to exactly N fake GPU nodes (0-%d): keep nodes
%s00000..N-1 that exist, create the missing ones, delete the rest. Nodes
are created by parallel requests with no client-side rate limit, carry
GPU feature discovery labels (product, memory, count), topology labels
(zone, block, rack, NVLink domain), kwok's fake-node annotation and a
NoSchedule taint that only GhostFleet's workloads tolerate.

--gpu-model says how nodes offer their GPUs to the scheduler: extended
(the extended resource nvidia.com/gpu, as NVIDIA's device plugin) or dra
(Dynamic Resource Allocation: per node a ResourceSlice of driver
gpu.nvidia.com with one device per GPU, and the DeviceClass gpu.nvidia.com;
no nvidia.com/gpu). A fleet has one model: without the flag new nodes get
the model of the fleet's nodes. --dra-extended-resource makes a DRA
fleet's DeviceClass also serve pods that ask for nvidia.com/gpu (its
extendedResourceName, Kubernetes 1.36's DRAExtendedResource): the
scheduler makes each such pod a claim for that many devices, and scores
nvidia.com/gpu from the devices. A fleet keeps it once set. A node's slice is owned by it, so the
controller-manager's garbage collector removes it with the node.

Only nodes that GhostFleet created are ever deleted.`, fleet.MaxNodes, fleet.NodePrefix),
		Example: `  ghostfleet nodes 1000
  ghostfleet nodes 5000 --gpu-profile dgx-b200
  ghostfleet nodes 0 && ghostfleet nodes 50 --gpu-model dra
  ghostfleet nodes 50 --dra-extended-resource   # then: binpack --claim none
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
	fs.StringVar(&o.GPUProfile, "gpu-profile", o.GPUProfile, "GPU server new nodes imitate: "+strings.Join(fleet.GPUProfileNames(), ", "))
	fs.StringVar(&o.GPUModel, "gpu-model", "", "how new nodes offer their GPUs: "+strings.Join(fleet.GPUModels, " or ")+" (default: the fleet's)")
	fs.BoolVar(&o.DRAExtendedResource, "dra-extended-resource", false, "a DRA fleet's DeviceClass also serves pods asking for nvidia.com/gpu (extendedResourceName); see above")
	fs.IntVar(&o.Workers, "workers", o.Workers, "requests in flight at once")
	fs.BoolVar(&o.NoWait, "no-wait", false, "return once the nodes exist, without waiting for them to be Ready and schedulable")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("gpu-profile", fixed(fleet.GPUProfileNames()...))
	_ = cmd.RegisterFlagCompletionFunc("gpu-model", fixed(fleet.GPUModels...))
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *nodesOptions) run(ctx context.Context, arg string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var err error
	if o.Count, err = fleet.ParseNodeCount(arg); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Nodes(ctx, o.env(p, ""), o.NodesOptions)
	p.Close()
	if err != nil {
		if res.Outcome != "" { // it sent requests: say what they met
			printRequests(o.streams.ErrOut, res.Requests)
		}
		return err
	}
	return o.finish(res, o.output, func(w io.Writer) { printNodes(w, res) })
}

func printNodes(w io.Writer, r runs.NodesResult) {
	if r.Outcome == runs.Interrupted {
		fmt.Fprintf(w, "%s: scaling to %d GhostFleet nodes interrupted: %d created, %d deleted, %d kept\n", r.Cluster, r.Nodes, r.Created, r.Deleted, r.Kept)
	} else {
		fmt.Fprintf(w, "%s has %d GhostFleet nodes: %d created, %d deleted, %d kept; requests done in %s",
			r.Cluster, r.Nodes, r.Created, r.Deleted, r.Kept, round(fromSeconds(r.CreateSeconds)))
		if r.ReadySeconds > 0 {
			fmt.Fprintf(w, ", all Ready in %s", round(fromSeconds(r.ReadySeconds)))
		}
		if r.SchedulableSeconds > 0 {
			fmt.Fprintf(w, ", schedulable in %s", round(fromSeconds(r.SchedulableSeconds)))
		}
		fmt.Fprintln(w)
	}
	if r.GPUModel == fleet.GPUModelDRA && r.Slices > 0 {
		fmt.Fprintf(w, "  GPUs as DRA devices (driver %s, DeviceClass %s): %d ResourceSlices published\n", fleet.DRADriver, fleet.DeviceClassGPU, r.Slices)
	}
	printRequests(w, r.Requests)
	for _, profile := range slices.Sorted(maps.Keys(r.OtherProfiles)) {
		fmt.Fprintf(w, "  note: %d kept nodes are %s, not %s; `ghostfleet nodes 0` first for a uniform fleet\n", r.OtherProfiles[profile], profile, r.GPUProfile)
	}
}

func fromSeconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
