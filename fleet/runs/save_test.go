package runs

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/state"
)

func TestSaveResultJSON(t *testing.T) {
	res := SaveResult{
		Run:     Run{ID: "state-20261129-190000", Kind: state.Kind, Dir: "results/state-20261129-190000", Outcome: Completed},
		Cluster: "ghostfleet", Name: "before-faults",
		Result: state.Result{Counts: fleet.Counts{Nodes: 50, Pods: 3, Namespaces: 6}, Snapshot: state.File, Bytes: 4 << 20,
			ClusterCreated: time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)},
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "state-20261129-190000", "kind": "state", "dir": "results/state-20261129-190000", "outcome": "completed",
		"cluster": "ghostfleet", "name": "before-faults", "nodes": 50.0, "pods": 3.0, "namespaces": 6.0, "snapshot": "etcd.db",
		"bytes": float64(4 << 20), "clusterCreated": "2026-11-29T18:00:00Z",
	})
	var back SaveResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "saved before-faults: 50 nodes, 3 pods, 6 namespaces (4096 KiB)" {
		t.Errorf("summary %q", s)
	}
	res.Name = ""
	if s := res.Summary(); !strings.HasPrefix(s, "saved state-20261129-190000: ") {
		t.Errorf("summary without a name %q", s)
	}
}

func TestSaveValidate(t *testing.T) {
	if err := (SaveOptions{Name: "Before_Faults"}).Validate(); err == nil ||
		err.Error() != `state name "Before_Faults" is not allowed: lower-case letters, digits and '-', at most 63, like before-faults` {
		t.Errorf("error %v", err)
	}
	for _, name := range []string{"", "before-faults"} {
		if err := (SaveOptions{Name: name}).Validate(); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	attached := Env{Target: fleet.Attach("/tmp/kubeconfig", "")}
	if _, err := Save(context.Background(), attached, SaveOptions{}); err == nil || !strings.HasPrefix(err.Error(), "save manages GhostFleet's own cluster, not an attached one") {
		t.Errorf("attached: %v", err)
	}
}

func TestRestoreResultJSON(t *testing.T) {
	res := RestoreResult{
		Run:     Run{ID: "restore-20261129-191000", Kind: state.RestoreKind, Dir: "results/restore-20261129-191000", Outcome: Completed},
		Cluster: "ghostfleet", State: "state-20261129-190000",
		RestoreResult: state.RestoreResult{
			Before: fleet.Counts{Nodes: 60, Pods: 10, Namespaces: 7},
			Saved:  fleet.Counts{Nodes: 50, Pods: 0, Namespaces: 6},
			After:  fleet.Counts{Nodes: 50, Pods: 0, Namespaces: 6},
		},
		DurationSeconds: 44.6,
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "restore-20261129-191000", "kind": "restore", "outcome": "completed", "cluster": "ghostfleet",
		"state": "state-20261129-190000", "durationSeconds": 44.6,
		"before": map[string]any{"nodes": 60.0, "pods": 10.0, "namespaces": 7.0},
		"after":  map[string]any{"nodes": 50.0, "pods": 0.0, "namespaces": 6.0},
	})
	var back RestoreResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "restored state-20261129-190000: 60→50 nodes, 10→0 pods in 45s" {
		t.Errorf("summary %q", s)
	}
}

func TestRestoreValidate(t *testing.T) {
	if err := (RestoreOptions{}).Validate(); err == nil || err.Error() != "no saved state named: give its folder's name (state-<time>) or the name given to save" {
		t.Errorf("error %v", err)
	}
	env := Env{Target: fleet.Own("gf-test-none"), ResultsDir: t.TempDir()}
	if _, err := Restore(context.Background(), env, RestoreOptions{State: "never-saved"}); err == nil || !strings.HasPrefix(err.Error(), `no saved state "never-saved" under `) {
		t.Errorf("unknown state: %v", err)
	}
}
