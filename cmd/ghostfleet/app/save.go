package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/state"
)

type saveOptions struct {
	*globals
	binaryFlags
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

// snapshotTools resolves the etcd tools for the fleet's versions.
func (b *binaryFlags) snapshotTools(ctx context.Context, name string, restore bool, p *printer) (fleet.SnapshotTools, error) {
	st, err := fleet.LoadState(name)
	if err != nil {
		return fleet.SnapshotTools{}, fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", name)
	}
	r, err := b.resolver(p.Report)
	if err != nil {
		return fleet.SnapshotTools{}, err
	}
	return state.Tools(ctx, r, st, restore)
}

func (o *saveOptions) run(ctx context.Context, args []string) error {
	if err := o.ownOnly("save"); err != nil {
		return err
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	if err := state.ValidateName(name); err != nil {
		return err
	}
	p := o.streams.printer(o.verbose)
	defer p.Close()
	tools, err := o.snapshotTools(ctx, o.name, false, p)
	if err != nil {
		return err
	}
	rec, dir, err := state.Save(ctx, o.name, o.resultsDir, name, tools, p.Report)
	if err != nil {
		return err
	}
	p.Close()
	res := rec.Result.(state.Result)
	fmt.Fprintf(o.streams.Out, "saved fleet %q: %d nodes, %d pods, %d namespaces (%d KiB etcd snapshot) in %s\n  restore with: ghostfleet restore %s\n",
		o.name, res.Nodes, res.Pods, res.Namespaces, res.Bytes/1024, dir, rec.ID)
	return nil
}
