package app

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/results"
)

// restore finds a state by folder name or by the name given to save, the
// latest of that name; other runs are not states.
func TestFindState(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	write := func(kind, name string, at time.Time, nodes int) string {
		dir, err := results.WriteRecord(root, results.Record{Kind: kind, Cluster: "c", Started: at, Ended: at.Add(time.Second),
			Params: stateParams{Name: name}, Result: stateResult{Counts: fleet.Counts{Nodes: nodes}, Snapshot: stateFile}})
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(dir)
	}
	first := write(stateKind, "base", t0, 10)
	write(stateKind, "base", t0.Add(time.Minute), 20)
	load := write("load", "base", t0.Add(2*time.Minute), 30)

	if rec, res, err := findState(root, "base"); err != nil || res.Nodes != 20 || rec.Kind != stateKind {
		t.Errorf("by name: %+v %+v %v, want the latest state (20 nodes)", rec, res, err)
	}
	if _, res, err := findState(root, first); err != nil || res.Nodes != 10 {
		t.Errorf("by folder: %+v %v", res, err)
	}
	if _, _, err := findState(root, load); err == nil {
		t.Error("a load run was taken for a saved state")
	}
}
