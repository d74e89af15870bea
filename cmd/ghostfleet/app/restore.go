package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/results"
)

type restoreOptions struct {
	*globals
	binaryFlags
	resultsDir string
	verbose    bool
}

func newRestoreCommand(g *globals) *cobra.Command {
	o := &restoreOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "restore RUN",
		Short: "Return the fleet to a state saved by `ghostfleet save`",
		Long: `Put the etcd snapshot of a saved state (RUN: its run folder's name, like
state-20261129-190000, or the NAME given to save) back into the fleet
with kwokctl's snapshot restore: etcd and the apiserver stop, etcd's data
is replaced, and the control plane restarts; the command then waits until
the fleet holds the saved number of nodes and pods again. Everything done
since the save — nodes added, pods created, faults — is undone.

Only a state of this same fleet can be restored (a fleet created again
under the same name has other certificates). The first restore builds
etcdutl from the pinned modules (about half a minute).`,
		Example: `  ghostfleet save before-faults
  ghostfleet fault gpu-xid --nodes 5
  ghostfleet restore before-faults`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&o.resultsDir, "results-dir", results.DefaultRoot, "where saved states are found and the restore's record goes")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	o.binaryFlags.add(cmd.Flags())
	return cmd
}

// findState returns the saved state called id (folder name) or name, the
// latest when several carry the name.
func findState(root, id string) (results.Record, stateResult, error) {
	runs, err := results.RunsIn(root, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return results.Record{}, stateResult{}, err
	}
	var found *results.Record
	for i := range runs {
		r := &runs[i]
		if r.Kind != stateKind {
			continue
		}
		var p stateParams
		data, _ := json.Marshal(r.Params)
		_ = json.Unmarshal(data, &p)
		if r.ID == id || p.Name == id {
			found = r // oldest first: the last match is the latest
		}
	}
	if found == nil {
		return results.Record{}, stateResult{}, fmt.Errorf("no saved state %q under %s: `ghostfleet save` makes one; saved states are the %s-* folders", id, root, stateKind)
	}
	var res stateResult
	data, _ := json.Marshal(found.Result)
	if err := json.Unmarshal(data, &res); err != nil {
		return *found, res, fmt.Errorf("saved state %s: %w", found.ID, err)
	}
	return *found, res, nil
}

func (o *restoreOptions) run(ctx context.Context, id string) error {
	if err := o.ownOnly("restore"); err != nil {
		return err
	}
	saved, res, err := findState(o.resultsDir, id)
	if err != nil {
		return err
	}
	st, err := fleet.LoadState(o.name)
	if err != nil {
		return fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", o.name)
	}
	if saved.Cluster != o.name || !res.ClusterCreated.Equal(st.Created) {
		return fmt.Errorf("saved state %s is of fleet %q created %s, not of this fleet %q created %s: only a fleet's own states can be restored",
			saved.ID, saved.Cluster, res.ClusterCreated.Format(time.RFC3339), o.name, st.Created.Format(time.RFC3339))
	}
	dir := filepath.Join(o.resultsDir, saved.ID)
	path, _ := filepath.Abs(filepath.Join(dir, res.Snapshot))
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("saved state %s has no snapshot: %w", saved.ID, err)
	}
	p := newPrinter(o.streams.ErrOut, o.verbose)
	defer p.Close()
	tools, err := o.snapshotTools(ctx, st, true, p)
	if err != nil {
		return err
	}
	cs, err := o.target().Clientset(true)
	if err != nil {
		return err
	}
	before, err := fleet.CountObjects(ctx, cs)
	if err != nil {
		return err
	}
	started := time.Now().UTC()
	// Past this point the control plane restarts: an interrupt must not
	// leave etcd stopped, so the restore runs to its end.
	after, rerr := fleet.RestoreSnapshot(context.WithoutCancel(ctx), o.name, path, res.Counts, tools, p.Report)
	p.Close()
	rec := results.Record{Kind: "restore", Cluster: o.name, Profile: st.Profile, Started: started, Ended: time.Now().UTC(),
		Outcome: "completed", Params: map[string]string{"state": saved.ID},
		Result: map[string]fleet.Counts{"before": before, "saved": res.Counts, "after": after},
		Phases: []results.Phase{{Name: "restore " + saved.ID, Start: started, End: time.Now().UTC()}}}
	if rerr != nil {
		rec.Outcome = "failed: " + rerr.Error()
	}
	recDir, err := results.WriteRecord(o.resultsDir, rec)
	if err != nil && rerr == nil {
		return fmt.Errorf("writing the run record: %w", err)
	}
	if rerr != nil {
		return rerr
	}
	fmt.Fprintf(o.streams.Out, "restored fleet %q to %s: %d→%d nodes, %d→%d pods (saved: %d nodes, %d pods) in %s\n",
		o.name, saved.ID, before.Nodes, after.Nodes, before.Pods, after.Pods, res.Nodes, res.Pods, time.Since(started).Round(time.Second))
	fmt.Fprintf(o.streams.ErrOut, "run record: %s\n", recDir)
	return nil
}
