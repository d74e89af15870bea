package runs

import (
	"encoding/json"
	"testing"
)

func TestUnloadResultJSON(t *testing.T) {
	res := UnloadResult{Run: Run{ID: "unload-1", Kind: "unload", Outcome: Completed}, Namespaces: 3}
	data := topLevel(t, res, map[string]any{"id": "unload-1", "kind": "unload", "outcome": "completed", "dir": nil, "namespaces": 3.0})
	var back UnloadResult
	if err := json.Unmarshal(data, &back); err != nil || back != res {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got, want := res.Summary(), "removed 3 workload namespaces"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res.Outcome = Interrupted
	if got, want := res.Summary(), "unload interrupted: workload namespaces may be left"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res.Outcome = "failed: deleting namespace gf-load: forbidden"
	if got, want := res.Summary(), "unload failed: deleting namespace gf-load: forbidden"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
