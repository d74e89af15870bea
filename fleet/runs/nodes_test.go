package runs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// A scale writes no folder: its JSON has no dir, but the header and the
// request counts all the same.
func TestNodesResultJSON(t *testing.T) {
	res := NodesResult{
		Run:     Run{ID: "nodes-1", Kind: "nodes", Outcome: Completed},
		Cluster: "ghostfleet", Nodes: 1000, GPUProfile: "dgx-h100", Created: 600, Kept: 400,
		CreateSeconds: 12.5, ReadySeconds: 20, SchedulableSeconds: 95, Requests: requests.Stats{Succeeded: 601, Rejected: 3},
	}
	data := topLevel(t, res, map[string]any{
		"id": "nodes-1", "kind": "nodes", "outcome": "completed", "dir": nil,
		"nodes": 1000.0, "created": 600.0, "kept": 400.0, "createSeconds": 12.5,
	})
	if !strings.Contains(string(data), `"requests":{`) || !strings.Contains(string(data), `"rejected429":3`) {
		t.Errorf("no requests in %s", data)
	}
	var back NodesResult
	if err := json.Unmarshal(data, &back); err != nil || back.Run != res.Run || back.Created != 600 || back.Requests.Succeeded != 601 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got, want := res.Summary(), "1000 nodes: 600 created, 0 deleted, 400 kept in 12.5s, Ready in 20.0s, schedulable in 95.0s, 3 × 429"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res.Outcome = Interrupted
	if got, want := res.Summary(), "scaling to 1000 nodes interrupted: 600 created, 0 deleted, 400 kept"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res.Outcome = "failed: listing nodes: boom"
	if got, want := res.Summary(), "scaling to 1000 nodes failed: 600 created, 0 deleted, 400 kept"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestNodesOptionsValidate(t *testing.T) {
	if err := NewNodesOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	tests := []struct {
		name string
		edit func(*NodesOptions)
		want string
	}{
		{"negative", func(o *NodesOptions) { o.Count = -5 }, "node count -5 is out of range: allowed are 0-10000"},
		{"too many", func(o *NodesOptions) { o.Count = 10001 }, "node count 10001 is out of range: allowed are 0-10000"},
		{"unknown profile", func(o *NodesOptions) { o.GPUProfile = "tpu-v5" }, `unknown GPU profile "tpu-v5": allowed are ` + strings.Join(fleet.GPUProfileNames(), ", ")},
		{"no workers", func(o *NodesOptions) { o.Workers = 0 }, "workers 0 is out of range: allowed are 1-1024"},
		{"too many workers", func(o *NodesOptions) { o.Workers = 2000 }, "workers 2000 is out of range: allowed are 1-1024"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewNodesOptions()
			tc.edit(&o)
			if got := errorText(o.Validate()); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}
