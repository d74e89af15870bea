package state

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Run kinds: a saved state, and a restore of one.
const (
	Kind        = "state"
	RestoreKind = "restore"
	// File is the etcd snapshot in a state's folder.
	File = "etcd.db"
)

// Params are a saved state's parameters.
type Params struct {
	Name string `json:"name,omitempty"`
}

// Result is what a saved state holds.
type Result struct {
	fleet.Counts
	Snapshot string `json:"snapshot"`
	Bytes    int64  `json:"bytes"`
	// ClusterCreated tells a snapshot of this fleet from one of an earlier
	// fleet of the same name, whose certificates differ.
	ClusterCreated time.Time `json:"clusterCreated"`
	// Versions are the fleet's Kubernetes, etcd and kwok versions: a
	// copy (RestoreCopy) goes only into a fleet of the same ones. States
	// saved before GhostFleet recorded them have none.
	Versions binaries.Versions `json:"versions,omitzero"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidateName checks a state's optional name.
func ValidateName(name string) error {
	if name != "" && !namePattern.MatchString(name) {
		return fmt.Errorf("state name %q is not allowed: lower-case letters, digits and '-', at most 63, like before-faults", name)
	}
	return nil
}

// Tools resolves etcdctl and, to restore, etcdutl (built from the pinned
// modules on first use) for the fleet's versions.
func Tools(ctx context.Context, r *binaries.Resolver, st fleet.State, restore bool) (fleet.SnapshotTools, error) {
	r.Versions = st.Versions
	var tools fleet.SnapshotTools
	ctl, err := binaries.Lookup(binaries.Etcdctl)
	if err != nil {
		return tools, err
	}
	if tools.Etcdctl, err = r.ResolveOne(ctx, ctl); err != nil {
		return tools, err
	}
	if restore {
		utl, err := binaries.Lookup(binaries.Etcdutl)
		if err != nil {
			return tools, err
		}
		if tools.Etcdutl, err = r.ResolveOne(ctx, utl); err != nil {
			return tools, err
		}
	}
	return tools, nil
}

// Save writes the fleet's etcd into a new run folder <root>/state-<time>/
// with its record (kind "state", the node and pod counts), which complete
// (when not nil) fills in further before it is written, and returns the
// record and the folder. Nothing is left behind when it fails.
func Save(ctx context.Context, name, root, stateName string, tools fleet.SnapshotTools, complete func(*record.Record), report progress.Func) (record.Record, string, error) {
	if err := ValidateName(stateName); err != nil {
		return record.Record{}, "", err
	}
	st, err := fleet.UpState(name)
	if err != nil {
		return record.Record{}, "", err
	}
	cs, err := fleet.Own(name).Clientset(true)
	if err != nil {
		return record.Record{}, "", err
	}
	started := time.Now().UTC()
	counts, err := fleet.CountObjects(ctx, cs)
	if err != nil {
		return record.Record{}, "", err
	}
	dir, err := record.NewRunDir(root, Kind, started)
	if err != nil {
		return record.Record{}, "", err
	}
	// etcd is saved under a temporary name and renamed once whole, so a
	// state folder never holds half an etcd.db.
	path, err := filepath.Abs(filepath.Join(dir, File))
	tmp := filepath.Join(dir, "."+File+".tmp")
	if err == nil {
		err = fleet.SaveSnapshot(ctx, name, tmp, tools, report)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return record.Record{}, "", err
	}
	// Counted again: had anything changed while etcd was saved, the
	// counts would not say what the snapshot holds.
	after, err := fleet.CountObjects(ctx, cs)
	if err == nil && after != counts {
		err = fmt.Errorf("the fleet changed while it was saved (%d→%d nodes, %d→%d pods): save again when it is quiet", counts.Nodes, after.Nodes, counts.Pods, after.Pods)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return record.Record{}, "", err
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	rec := record.Record{ID: filepath.Base(dir), Kind: Kind, Cluster: name, Profile: st.Profile, Started: started, Ended: time.Now().UTC(),
		Outcome: "completed", Params: Params{Name: stateName},
		Result: Result{Counts: counts, Snapshot: File, Bytes: size, ClusterCreated: st.Created, Versions: st.Versions}}
	if complete != nil {
		complete(&rec)
	}
	if err := record.WriteJSON(dir, "run.json", rec); err != nil {
		_ = os.RemoveAll(dir)
		return record.Record{}, "", err
	}
	return rec, dir, nil
}

// Find returns the saved state called id (its folder name) or carrying
// that name, the latest when several do.
func Find(root, id string) (record.Record, Result, error) {
	runs, err := record.RunsIn(root, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return record.Record{}, Result{}, err
	}
	var found *record.Record
	for i := range runs {
		r := &runs[i]
		if r.Kind != Kind {
			continue
		}
		var p Params
		data, _ := json.Marshal(r.Params)
		_ = json.Unmarshal(data, &p)
		if r.ID == id || p.Name == id {
			found = r // oldest first: the last match is the latest
		}
	}
	if found == nil {
		return record.Record{}, Result{}, fmt.Errorf("no saved state %q under %s: `ghostfleet save` makes one; saved states are the %s-* folders", id, root, Kind)
	}
	var res Result
	data, _ := json.Marshal(found.Result)
	if err := json.Unmarshal(data, &res); err != nil {
		return *found, res, fmt.Errorf("saved state %s: %w", found.ID, err)
	}
	return *found, res, nil
}

// RestoreResult is a restore's record result.
type RestoreResult struct {
	Before fleet.Counts `json:"before"`
	Saved  fleet.Counts `json:"saved"`
	After  fleet.Counts `json:"after"`
}

// Restore returns the fleet to the saved state id (see Find). Only a
// fleet's own states are accepted. Once the control plane is stopped the
// restore runs to its end even when ctx is cancelled, so an interrupt
// never leaves etcd down. The returned record (kind "restore") is not
// written; it is the zero Record when Restore refused and changed nothing.
func Restore(ctx context.Context, name, root, id string, tools fleet.SnapshotTools, report progress.Func) (record.Record, error) {
	return restore(ctx, name, root, id, tools, report, false)
}

// RestoreCopy is Restore into another fleet than the one saved: a
// throwaway fleet that runs the saved cluster under other control-plane
// settings (ghostfleet ab). The objects come back as saved; what etcd
// does not hold (certificates, the components' flags) is the fleet's
// own. The fleet must run the versions the state was saved with.
func RestoreCopy(ctx context.Context, name, root, id string, tools fleet.SnapshotTools, report progress.Func) (record.Record, error) {
	return restore(ctx, name, root, id, tools, report, true)
}

// CheckCopy says whether the saved state id can be copied into a fleet
// running versions, before any fleet is made for it.
func CheckCopy(root, id string, versions binaries.Versions) (record.Record, Result, error) {
	saved, res, err := Find(root, id)
	if err != nil {
		return saved, res, err
	}
	switch {
	case res.Versions == (binaries.Versions{}):
		return saved, res, fmt.Errorf("saved state %s does not say which Kubernetes and etcd versions saved it (saved by an older GhostFleet): save it again with this one to copy it into another fleet", saved.ID)
	case res.Versions.SetName() != versions.SetName():
		return saved, res, fmt.Errorf("saved state %s was saved by a fleet of %s; this GhostFleet runs %s: a state goes only into a fleet of the versions that saved it (save it again with this GhostFleet's fleet)",
			saved.ID, res.Versions.SetName(), versions.SetName())
	}
	return saved, res, nil
}

func restore(ctx context.Context, name, root, id string, tools fleet.SnapshotTools, report progress.Func, copy bool) (record.Record, error) {
	saved, res, err := Find(root, id)
	if err != nil {
		return record.Record{}, err
	}
	st, err := fleet.UpState(name)
	if err != nil {
		return record.Record{}, err
	}
	if copy {
		if _, _, err := CheckCopy(root, id, st.Versions); err != nil {
			return record.Record{}, err
		}
	} else if saved.Cluster != name || !res.ClusterCreated.Equal(st.Created) {
		return record.Record{}, fmt.Errorf("saved state %s is of fleet %q created %s, not of this fleet %q created %s: only a fleet's own states can be restored",
			saved.ID, saved.Cluster, res.ClusterCreated.Format(time.RFC3339), name, st.Created.Format(time.RFC3339))
	}
	path, err := filepath.Abs(filepath.Join(root, saved.ID, res.Snapshot))
	if err != nil {
		return record.Record{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return record.Record{}, fmt.Errorf("saved state %s has no snapshot: %w", saved.ID, err)
	}
	// Checked before the control plane stops: a damaged file must leave
	// the fleet as it was.
	if res.Bytes > 0 && fi.Size() != res.Bytes {
		return record.Record{}, fmt.Errorf("saved state %s: %s is %d bytes, not the %d saved: it was changed or cut short; nothing was restored", saved.ID, path, fi.Size(), res.Bytes)
	}
	if err := fleet.CheckSnapshot(ctx, tools, path); err != nil {
		return record.Record{}, fmt.Errorf("saved state %s: %w; nothing was restored", saved.ID, err)
	}
	cs, err := fleet.Own(name).Clientset(true)
	if err != nil {
		return record.Record{}, err
	}
	before, err := fleet.CountObjects(ctx, cs)
	if err != nil {
		return record.Record{}, err
	}
	started := time.Now().UTC()
	after, rerr := fleet.RestoreSnapshot(context.WithoutCancel(ctx), name, path, res.Counts, tools, report)
	rec := record.Record{Kind: RestoreKind, Cluster: name, Profile: st.Profile, Started: started, Ended: time.Now().UTC(),
		Outcome: "completed", Params: map[string]string{"state": saved.ID},
		Result: RestoreResult{Before: before, Saved: res.Counts, After: after},
		Phases: []record.Phase{{Name: "restore " + saved.ID, Start: started, End: time.Now().UTC()}}}
	if rerr != nil {
		rec.Outcome = "failed: " + rerr.Error()
	}
	return rec, rerr
}
