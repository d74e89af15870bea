package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type saveOptions struct {
	*globals
	binaryFlags
	runs.SaveOptions
	verbose bool
}

func newSaveCommand(g *globals) *cobra.Command {
	o := &saveOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "save [NAME]",
		Short: "Save the cluster's whole state (an etcd snapshot) into a new results/ run",
		Long: `Save the fleet's state — every node, pod, namespace, stage and every other
object, as etcd holds them — with kwokctl's etcd snapshot, into a new run
folder results/state-<time>/ (etcd.db and run.json with the node and pod
counts). ` + "`ghostfleet restore`" + ` returns the fleet to it, so an experiment can
be repeated from the same starting point. NAME, when given, is another
name restore accepts for it.

The snapshot is taken from the running etcd; the fleet keeps running.`,
		Example: `  ghostfleet save
  ghostfleet save before-faults
  ghostfleet restore before-faults`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	o.binaryFlags.add(cmd.Flags())
	return cmd
}

func (o *saveOptions) run(ctx context.Context, args []string) error {
	if err := o.ownOnly("save"); err != nil {
		return err
	}
	if len(args) == 1 {
		o.Name = args[0]
	}
	o.Binaries = o.binaries()
	p := o.streams.printer(o.verbose)
	defer p.Close()
	res, err := runs.Save(ctx, o.env(p, ""), o.SaveOptions)
	p.Close()
	if err != nil {
		return err
	}
	printSave(o.streams.Out, res)
	return nil
}

func printSave(w io.Writer, r runs.SaveResult) {
	fmt.Fprintf(w, "saved fleet %q: %d nodes, %d pods, %d namespaces (%d KiB etcd snapshot) in %s\n  restore with: ghostfleet restore %s\n",
		r.Cluster, r.Nodes, r.Pods, r.Namespaces, r.Bytes/1024, r.Dir, r.ID)
}
