package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type faultClearOptions struct {
	faultOptions
	runs.ClearOptions
}

func newFaultClearCommand(g *globals) *cobra.Command {
	o := &faultClearOptions{faultOptions: faultOptions{globals: g}}
	cmd := &cobra.Command{
		Use:   "clear (--all | KIND...)",
		Short: "Recover from faults: conditions healthy, taints removed, pending pod faults cancelled",
		Long: `Remove the faults of the given kinds, or of every kind with --all: the
nodes' fault markers and GhostFleet's nvidia.com/gpu-health taint go, and
kwok's clear stages set the GPU conditions healthy again (and give back
the GPU an Xid took); nodes that were down become Ready. Pod faults that
have not fired are cancelled; pods that already failed stay failed, as in
a real cluster.`,
		Example: `  ghostfleet fault clear --all
  ghostfleet fault clear gpu-xid nvlink`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "clear every kind of fault")
	o.addFlags(cmd)
	return cmd
}

func (o *faultClearOptions) run(ctx context.Context, args []string) error {
	for _, a := range args {
		o.Kinds = append(o.Kinds, fault.Kind(a))
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Clear(ctx, o.env(p, ""), o.ClearOptions)
	p.Close()
	return o.finishFault(res, err, func(w io.Writer) { printClear(w, res) })
}

func printClear(w io.Writer, r runs.ClearResult) {
	if len(r.Nodes) == 0 && r.Pods == 0 {
		fmt.Fprintln(w, "no faults to clear")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(r.Cleared)) {
		if r.Cleared[k] == 0 {
			continue
		}
		scope := "nodes"
		if k == fault.PodExit {
			scope = "pending pods"
		}
		fmt.Fprintf(w, "cleared %s from %d %s\n", k, r.Cleared[k], scope)
	}
}
