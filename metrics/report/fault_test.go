package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// A node fault is an instant (started = ended); snapshots must still
// gather it and reports mark it, and its record is named after its folder.
func TestFaultRecordsAreInSnapshotsAndMarkedInReports(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	at := t0.Add(2 * time.Minute)
	for i := 0; i < 2; i++ {
		dir, err := record.WriteRecord(root, record.Record{Kind: "fault", Started: at, Ended: at, Outcome: "completed",
			Params: map[string]any{"kind": "gpu-xid", "nodes": 5}, Phases: []record.Phase{{Name: "gpu-xid", Start: at, End: at}}})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := record.FindRun(root, filepath.Base(dir)); err != nil || r.ID != filepath.Base(dir) {
			t.Errorf("record in %s has id %q (%v)", dir, r.ID, err)
		}
	}
	dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	run, _, _, err := LoadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Runs) != 2 || run.Runs[0].Kind != "fault" || run.Runs[0].ID == run.Runs[1].ID {
		t.Fatalf("snapshot runs %+v", run.Runs)
	}
	out, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(out)
	if !strings.Contains(string(html), `"fault":true`) {
		t.Error("the report does not mark the fault")
	}
}
