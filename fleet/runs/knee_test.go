package runs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// kneeAt passes every rate up to limit.
func kneeAt(limit float64, tried *[]float64) func(float64) (bool, error) {
	return func(r float64) (bool, error) {
		*tried = append(*tried, r)
		return r <= limit, nil
	}
}

func TestSearchKneeRampsThenBisects(t *testing.T) {
	var tried []float64
	knee, fail, err := searchKnee(context.Background(), 25, 800, 0.1, kneeAt(137, &tried))
	if err != nil {
		t.Fatal(err)
	}
	if knee > 137 || fail <= 137 || fail-knee > 0.1*knee {
		t.Fatalf("knee %g, first failure %g: want knee ≤ 137 < failure, within 10%%", knee, fail)
	}
	want := []float64{25, 50, 100, 200, 150, 125, 138, 132}
	if len(tried) != len(want) {
		t.Fatalf("tried %v, want %v", tried, want)
	}
	for i := range want {
		if tried[i] != want[i] {
			t.Fatalf("tried %v, want %v", tried, want)
		}
	}
}

func TestSearchKneeEnds(t *testing.T) {
	var tried []float64
	knee, fail, _ := searchKnee(context.Background(), 25, 60, 0.1, kneeAt(1000, &tried))
	if knee != 60 || fail != 0 || len(tried) != 3 || tried[2] != 60 {
		t.Fatalf("every step passing: knee %g, failure %g, tried %v; want 60, 0, [25 50 60]", knee, fail, tried)
	}
	tried = nil
	knee, fail, _ = searchKnee(context.Background(), 25, 800, 0.1, kneeAt(10, &tried))
	if knee != 0 || fail != 25 || len(tried) != 1 {
		t.Fatalf("first step failing: knee %g, failure %g, tried %v; want 0, 25, one step", knee, fail, tried)
	}
	boom := errors.New("boom")
	_, _, err := searchKnee(context.Background(), 25, 800, 0.1, func(float64) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("a step's error: got %v", err)
	}
	// Whole rates: 10 and 11 cannot be bisected further.
	tried = nil
	knee, fail, _ = searchKnee(context.Background(), 10, 800, 0.01, kneeAt(10.5, &tried))
	if knee != 10 || fail != 11 {
		t.Fatalf("knee %g, failure %g (tried %v): want 10, 11", knee, fail, tried)
	}
}

func TestJudgeKneeStep(t *testing.T) {
	one, slow := 0.4, 1.7
	for _, c := range []struct {
		step        KneeStep
		createsOnly bool
		pass        bool
		has         string
	}{
		{KneeStep{CreateRatio: 0.99}, false, true, "99.0% of creates"},
		{KneeStep{CreateRatio: 0.90, Errors429: 300}, false, false, "300 × 429"},
		{KneeStep{CreateRatio: 1, MutatingP99: &one, Where: "POST pods"}, false, true, "mutating SLI p99 0.40s (POST pods)"},
		{KneeStep{CreateRatio: 1, MutatingP99: &slow, Where: "PATCH pods/status"}, false, false, "1.70s"},
		// --creates-only: the SLI is reported, and does not fail the step.
		{KneeStep{CreateRatio: 1, MutatingP99: &slow, Where: "PATCH pods/status"}, true, true, "1.70s (PATCH pods/status), not judged"},
		{KneeStep{CreateRatio: 0.90, MutatingP99: &one, Where: "POST pods"}, true, false, "90.0% of creates"},
	} {
		pass, why := judgeKneeStep(c.step, 0.95, c.createsOnly)
		if pass != c.pass || !strings.Contains(why, c.has) {
			t.Errorf("%+v: got %v %q, want %v and %q", c.step, pass, why, c.pass, c.has)
		}
	}
}

func TestKneeOptionsBadInput(t *testing.T) {
	for _, c := range []struct {
		edit func(*KneeOptions)
		want string
	}{
		{func(o *KneeOptions) { o.From = 0 }, "--from 0 is out of range"},
		{func(o *KneeOptions) { o.Max = 10 }, "--max 10 is out of range: it must be at least --from (25)"},
		{func(o *KneeOptions) { o.Resolution = 2 }, "--resolution 2 is out of range"},
		{func(o *KneeOptions) { o.MinRatio = 1.5 }, "--min-ratio 1.5 is out of range"},
		{func(o *KneeOptions) { o.StepDuration = 0 }, "duration 0s is out of range"},
		{func(o *KneeOptions) { o.Max = 6000 }, "rate 6000 is out of range"},
		{func(o *KneeOptions) { o.Cooldown = -time.Second }, "--cooldown -1s is out of range"},
	} {
		o := NewKneeOptions()
		c.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	o := NewKneeOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
