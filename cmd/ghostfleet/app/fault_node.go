package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type nodeFaultOptions struct {
	faultOptions
	runs.FaultOptions
}

func newNodeFaultCommand(g *globals, k fault.Info) *cobra.Command {
	o := &nodeFaultOptions{faultOptions: faultOptions{globals: g}, FaultOptions: runs.NewFaultOptions(k.Kind)}
	example := fmt.Sprintf("  ghostfleet fault %s --nodes 5\n  ghostfleet fault %s --nodes 20 --seed 42", k.Kind, k.Kind)
	long := k.Description + `.

Chooses --nodes of GhostFleet's fake GPU nodes that do not have this fault
yet: the first ones by name, or with --seed a random choice that the same
seed repeats. Only GhostFleet's own fake nodes are ever chosen.`
	if k.Kind == fault.GPUXid {
		example = "  ghostfleet fault gpu-xid --nodes 5\n  ghostfleet fault gpu-xid --nodes 2 --xid 48 --seed 7"
		long += "\n\n--xid picks the error (default 79, GPU has fallen off the bus); ECC Xids (48, 63, 64, 92, 94, 95) also raise GpuDbeMsbeProblem."
	}
	if k.Kind != fault.NodeDown {
		long += "\n\n--fail-pods also ends the pods on those nodes (not their DaemonSet pods): their\ncontainers exit with code 1 and the fault's message, as a CUDA or NCCL error\nends a training worker, so their owners (a Job, a ReplicaSet) replace them."
		example += fmt.Sprintf("\n  ghostfleet fault %s --nodes 50 --seed 1 --fail-pods   # while train runs: workers end", k.Kind)
	} else {
		long += "\n\nOnly Ready nodes are chosen. The node lifecycle controller then taints\nthe node node.kubernetes.io/unreachable and, after the pods' toleration\n(300s by default), evicts them."
	}
	cmd := &cobra.Command{
		Use:     string(k.Kind) + " --nodes K",
		Short:   "Fault K GPU nodes: " + strings.SplitN(k.Description, ":", 2)[0],
		Long:    long,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Random = cmd.Flags().Changed("seed")
			return o.run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "how many nodes to fault")
	fs.Int64Var(&o.Seed, "seed", 0, "choose the nodes at random with this seed (default: the first ones by name)")
	if k.Kind == fault.GPUXid {
		fs.IntVar(&o.Xid, "xid", o.Xid, "Xid error number")
	}
	if k.Kind != fault.NodeDown {
		fs.BoolVar(&o.FailPods, "fail-pods", false, "also end the pods running on the faulted nodes (exit code 1)")
	}
	o.addFlags(cmd)
	return cmd
}

func (o *nodeFaultOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Fault(ctx, o.env(p, ""), o.FaultOptions)
	p.Close()
	return o.finishFault(res, err, func(w io.Writer) { printNodeFault(w, res) })
}

func printNodeFault(w io.Writer, r runs.FaultResult) {
	fmt.Fprintf(w, "%s on %d nodes: %s\n", r.Spec.Kind, len(r.Nodes), strings.Join(r.Nodes, ", "))
	if r.Spec.FailPods {
		fmt.Fprintf(w, "  pods ended on them (exit code 1): %d\n", r.Pods)
	}
}
