package fleet

//lint:file-ignore SA1019 kwok v0.8.0's own stock stages still use key/operator/values, expressionFrom and next.statusTemplate; GhostFleet writes its stages the same way.

import (
	"testing"
)

func TestStagesAreKwoksWithTrainingPodsKeptRunning(t *testing.T) {
	stages, err := Stages(1200000)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range stages {
		names[s.Name] = true
		switch s.Name {
		case "pod-complete":
			last := s.Spec.Selector.MatchExpressions[len(s.Spec.Selector.MatchExpressions)-1]
			if last.Key != `.metadata.labels["ghostfleet.io/keep-running"]` || last.Operator != "NotIn" || len(last.Values) != 1 || last.Values[0] != "true" {
				t.Errorf("pod-complete's added expression %+v", last)
			}
			if len(s.Spec.Selector.MatchExpressions) < 4 {
				t.Errorf("pod-complete lost kwok's own expressions: %+v", s.Spec.Selector.MatchExpressions)
			}
		case "node-heartbeat-with-lease":
			if d := s.Spec.Delay; d == nil || *d.DurationMilliseconds != 1200000 || *d.JitterDurationMilliseconds != 1320000 {
				t.Errorf("heartbeat delay %+v, want 20m with 22m jitter (raised to the update frequency)", s.Spec.Delay)
			}
		}
	}
	for _, want := range []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"} {
		if !names[want] {
			t.Errorf("stage %s missing (have %v)", want, names)
		}
	}
}
