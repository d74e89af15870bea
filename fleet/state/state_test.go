package state

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// restore finds a state by folder name or by the name given to save, the
// latest of that name; other runs are not states.
func TestFind(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	write := func(kind, name string, at time.Time, nodes int) string {
		dir, err := record.WriteRecord(root, record.Record{Kind: kind, Cluster: "c", Started: at, Ended: at.Add(time.Second),
			Params: Params{Name: name}, Result: Result{Counts: fleet.Counts{Nodes: nodes}, Snapshot: File}})
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(dir)
	}
	first := write(Kind, "base", t0, 10)
	write(Kind, "base", t0.Add(time.Minute), 20)
	load := write("load", "base", t0.Add(2*time.Minute), 30)

	if rec, res, err := Find(root, "base"); err != nil || res.Nodes != 20 || rec.Kind != Kind {
		t.Errorf("by name: %+v %+v %v, want the latest state (20 nodes)", rec, res, err)
	}
	if _, res, err := Find(root, first); err != nil || res.Nodes != 10 {
		t.Errorf("by folder: %+v %v", res, err)
	}
	if _, _, err := Find(root, load); err == nil {
		t.Error("a load run was taken for a saved state")
	}
}
