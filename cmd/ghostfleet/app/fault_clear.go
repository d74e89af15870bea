package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
)

type faultClearOptions struct {
	faultOptions
	all bool
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
	cmd.Flags().BoolVar(&o.all, "all", false, "clear every kind of fault")
	o.addFlags(cmd)
	return cmd
}

func (o *faultClearOptions) run(ctx context.Context, args []string) error {
	if o.all == (len(args) > 0) {
		return fmt.Errorf("name the faults to clear (%s) or pass --all, not both", strings.Join(fault.KindNames(), ", "))
	}
	var kinds []fault.Kind
	for _, a := range args {
		k, err := fault.LookupKind(a)
		if err != nil {
			return err
		}
		kinds = append(kinds, k.Kind)
	}
	env, c, err := o.clients()
	if err != nil {
		return err
	}
	rec, err := fault.Clear(ctx, c, kinds...)
	return o.finish(ctx, env, rec, err, func(w io.Writer, r fault.Result) {
		if len(r.Nodes) == 0 && r.Pods == 0 {
			fmt.Fprintln(w, "no faults to clear")
			return
		}
		var ks []string
		for k := range r.Cleared {
			ks = append(ks, string(k))
		}
		sort.Strings(ks)
		for _, k := range ks {
			if r.Cleared[fault.Kind(k)] == 0 {
				continue
			}
			scope := "nodes"
			if k == string(fault.PodExit) {
				scope = "pending pods"
			}
			fmt.Fprintf(w, "cleared %s from %d %s\n", k, r.Cleared[fault.Kind(k)], scope)
		}
	})
}
