package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
)

type faultListOptions struct {
	faultOptions
}

func newFaultListCommand(g *globals) *cobra.Command {
	o := &faultListOptions{faultOptions: faultOptions{globals: g}}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the faults that hold now: nodes per kind, pending and failed pods",
		Long: `List the faults that hold in the fleet now, read from the fault markers
on nodes and pods (so faults injected by any GhostFleet process show):
the nodes of each node fault, and the pods of pod-exit that have not
failed yet and those that did.`,
		Example: `  ghostfleet fault list
  ghostfleet fault list -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	o.addFlags(cmd)
	return cmd
}

func (o *faultListOptions) run(ctx context.Context) error {
	c, err := o.clients()
	if err != nil {
		return err
	}
	cur, err := fault.Active(ctx, c)
	if err != nil {
		return err
	}
	if o.output == "json" {
		if cur == nil {
			cur = []fault.Current{}
		}
		return writeJSON(o.streams.Out, cur)
	}
	if len(cur) == 0 {
		fmt.Fprintln(o.streams.Out, "no faults")
		return nil
	}
	for _, f := range cur {
		if f.Nodes != nil {
			fmt.Fprintf(o.streams.Out, "%-10s %d nodes: %s\n", f.Kind, len(f.Nodes), strings.Join(f.Nodes, ", "))
		} else {
			fmt.Fprintf(o.streams.Out, "%-10s %d pods pending, %d failed\n", f.Kind, f.Pending, f.Failed)
		}
	}
	return nil
}
