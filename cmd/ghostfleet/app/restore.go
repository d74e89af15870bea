package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type restoreOptions struct {
	*globals
	binaryFlags
	runs.RestoreOptions
	verbose bool
}

func newRestoreCommand(g *globals) *cobra.Command {
	o := &restoreOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "restore RUN",
		Short: "Return the fleet to a state saved by `ghostfleet save`",
		Long: `Put the etcd snapshot of a saved state (RUN: its run folder's name, like
state-20261129-190000, or the NAME given to save) back into the fleet
with kwokctl's snapshot restore: etcd and the apiserver stop, etcd's data
is replaced, and the control plane restarts; the kwok controller then
takes the nodes over with fresh leases, and the command waits until the
fleet holds the saved number of nodes and pods again. Everything done
since the save — nodes added, pods created, faults — is undone.

Only a state of this same fleet can be restored (a fleet created again
under the same name has other certificates). The first restore builds
etcdutl from the pinned modules (about half a minute). Ctrl-C does not
stop a restore once the control plane is down.`,
		Example: `  ghostfleet save before-faults
  ghostfleet fault gpu-xid --nodes 5
  ghostfleet restore before-faults`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	o.binaryFlags.add(cmd.Flags())
	return cmd
}

func (o *restoreOptions) run(ctx context.Context, id string) error {
	if err := o.ownOnly("restore"); err != nil {
		return err
	}
	o.State, o.Binaries = id, o.binaries()
	p := o.streams.printer(o.verbose)
	defer p.Close()
	res, err := runs.Restore(ctx, o.env(p, ""), o.RestoreOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "run record: %s\n", res.Dir)
		return err
	}
	printRestore(o.streams.Out, res)
	fmt.Fprintf(o.streams.ErrOut, "run record: %s\n", res.Dir)
	return nil
}

func printRestore(w io.Writer, r runs.RestoreResult) {
	fmt.Fprintf(w, "restored fleet %q to %s: %d→%d nodes, %d→%d pods (saved: %d nodes, %d pods) in %s\n",
		r.Cluster, r.State, r.Before.Nodes, r.After.Nodes, r.Before.Pods, r.After.Pods,
		r.Saved.Nodes, r.Saved.Pods, time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Second))
}
