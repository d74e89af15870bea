package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/results"
)

// stateKind is the run kind of a saved cluster state; stateFile is the
// etcd snapshot in its folder.
const (
	stateKind = "state"
	stateFile = "etcd.db"
)

// stateParams and stateResult are a saved state's record.
type stateParams struct {
	Name string `json:"name,omitempty"`
}

type stateResult struct {
	fleet.Counts
	Snapshot string `json:"snapshot"`
	Bytes    int64  `json:"bytes"`
	// ClusterCreated tells a snapshot of this fleet from one of an earlier
	// fleet of the same name, whose certificates differ.
	ClusterCreated time.Time `json:"clusterCreated"`
}

var stateName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

type saveOptions struct {
	*globals
	binaryFlags
	resultsDir string
	verbose    bool
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
	cmd.Flags().StringVar(&o.resultsDir, "results-dir", results.DefaultRoot, "where the state's run folder is written")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	o.binaryFlags.add(cmd.Flags())
	return cmd
}

// snapshotTools resolves etcdctl and, when restoring, etcdutl (built on
// first use) for the fleet's versions.
func (b *binaryFlags) snapshotTools(ctx context.Context, st fleet.State, restore bool, p *printer) (fleet.SnapshotTools, error) {
	r, err := b.resolver(p.Report)
	if err != nil {
		return fleet.SnapshotTools{}, err
	}
	r.Versions = st.Versions
	var tools fleet.SnapshotTools
	ctl, _ := binaries.Lookup(binaries.Etcdctl)
	if tools.Etcdctl, err = r.ResolveOne(ctx, ctl); err != nil {
		return tools, err
	}
	if restore {
		if tools.Etcdutl, err = r.ResolveOne(ctx, binaries.OnDemand[0]); err != nil {
			return tools, err
		}
	}
	return tools, nil
}

func (o *saveOptions) run(ctx context.Context, args []string) error {
	if err := o.ownOnly("save"); err != nil {
		return err
	}
	params := stateParams{}
	if len(args) == 1 {
		if !stateName.MatchString(args[0]) {
			return fmt.Errorf("state name %q is not allowed: lower-case letters, digits and '-', at most 63, like before-faults", args[0])
		}
		params.Name = args[0]
	}
	st, err := fleet.LoadState(o.name)
	if err != nil {
		return fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", o.name)
	}
	cs, err := o.target().Clientset(true)
	if err != nil {
		return err
	}
	p := newPrinter(o.streams.ErrOut, o.verbose)
	defer p.Close()
	tools, err := o.snapshotTools(ctx, st, false, p)
	if err != nil {
		return err
	}
	started := time.Now().UTC()
	counts, err := fleet.CountObjects(ctx, cs)
	if err != nil {
		return err
	}
	dir, err := results.NewRunDir(o.resultsDir, stateKind, started)
	if err != nil {
		return err
	}
	path, _ := filepath.Abs(filepath.Join(dir, stateFile))
	if err := fleet.SaveSnapshot(ctx, o.name, path, tools, p.Report); err != nil {
		_ = removeRunDir(dir)
		return err
	}
	// Counted again: had anything changed while etcd was saved, the
	// counts would not say what the snapshot holds.
	after, err := fleet.CountObjects(ctx, cs)
	if err != nil || after != counts {
		_ = removeRunDir(dir)
		if err == nil {
			err = fmt.Errorf("the fleet changed while it was saved (%d→%d nodes, %d→%d pods): save again when it is quiet", counts.Nodes, after.Nodes, counts.Pods, after.Pods)
		}
		return err
	}
	size, _ := fileSize(path)
	rec := results.Record{ID: filepath.Base(dir), Kind: stateKind, Cluster: o.name, Profile: st.Profile, Started: started, Ended: time.Now().UTC(),
		Outcome: "completed", Params: params,
		Result: stateResult{Counts: counts, Snapshot: stateFile, Bytes: size, ClusterCreated: st.Created}}
	if err := results.WriteJSON(dir, "run.json", rec); err != nil {
		return err
	}
	p.Close()
	fmt.Fprintf(o.streams.Out, "saved fleet %q: %d nodes, %d pods, %d namespaces (%d KiB etcd snapshot) in %s\n  restore with: ghostfleet restore %s\n",
		o.name, counts.Nodes, counts.Pods, counts.Namespaces, size/1024, dir, rec.ID)
	return nil
}

func removeRunDir(dir string) error { return os.RemoveAll(dir) }

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
