package runs

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
)

func TestUsageResultJSON(t *testing.T) {
	res := UsageResult{
		Run:      Run{ID: "usage-1", Kind: UsageKind, Dir: "results/usage-1", Outcome: Completed},
		Change:   fleet.UsageChange{Selector: "app=infer", CPU: "800m"},
		UsageSet: fleet.UsageSet{Pods: 2, Matched: 2, PodNames: []string{"a/p-1", "a/p-2"}},
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "usage-1", "kind": "usage", "outcome": "completed", "pods": 2.0, "matched": 2.0,
		"change": map[string]any{"selector": "app=infer", "cpu": "800m"},
	})
	var back UsageResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "usage cpu 800m on 2 pods: a/p-1, a/p-2" {
		t.Errorf("summary %q", s)
	}
}

// Bad input is refused before any cluster is asked and before anything is
// recorded: one line naming the value.
func TestSetUsageRefusesBadInputFirst(t *testing.T) {
	env := Env{Target: fleet.Own("no-such-fleet"), ResultsDir: filepath.Join(t.TempDir(), "results")}
	for _, o := range []UsageOptions{
		{fleet.UsageChange{Selector: "app=x", CPU: "fast"}},
		{fleet.UsageChange{Selector: "a b", Memory: "1Gi"}},
	} {
		res, err := SetUsage(context.Background(), env, o)
		if err == nil || strings.Contains(err.Error(), "no-such-fleet") || res.Dir != "" {
			t.Errorf("%+v: %v, %+v; want the input's own error and no run", o, err, res)
		}
	}
}
