package runs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// The JSON form is the result itself: the run's header and the load's
// figures side by side at the top level, as -o json prints them.
func TestLoadResultJSON(t *testing.T) {
	res := LoadResult{
		Run:        Run{ID: "load-1", Kind: "load", Dir: "results/load-1", Outcome: Completed},
		LoadResult: workload.LoadResult{Pods: 10, Running: 10, ScheduleRate: 40, Verdict: workload.Verdict{Bottleneck: "scheduler"}},
	}
	data := topLevel(t, res, map[string]any{"id": "load-1", "kind": "load", "dir": "results/load-1", "outcome": "completed", "pods": 10.0, "running": 10.0})
	var back LoadResult
	if err := json.Unmarshal(data, &back); err != nil || back.Run != res.Run || back.Pods != 10 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); !strings.Contains(s, "10/10 running") || !strings.Contains(s, "bottleneck: scheduler") {
		t.Errorf("summary %q", s)
	}
}

func TestParsersNameTheValue(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{second(Int("pod count", "x")), `pod count "x" is not a whole number`},
		{second(Float("rate", "fast")), `rate "fast" is not a number`},
		{second(Duration("duration", "soon")), `duration "soon" is not a duration`},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
	if d, err := Duration("duration", "600"); err != nil || d.Seconds() != 600 {
		t.Errorf("600 → %s, %v", d, err)
	}
}

func second[T any](_ T, err error) error { return err }
