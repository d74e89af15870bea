package runs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func TestChurnResultJSON(t *testing.T) {
	res := ChurnResult{
		Run: Run{ID: "churn-limited-1", Kind: "churn-limited", Dir: "results/churn-limited-1", Outcome: Completed},
		ChurnResult: workload.ChurnResult{
			TargetRate: 200, AchievedCreateRate: 150.5, AchievedDeleteRate: 149, CreateRatio: 0.75, Created: 1500,
			Errors: map[string]int{"429": 400, "timeout": 100}, Shed: map[string]int{workload.VerbCreate: 3, workload.VerbDelete: 2},
			Limited: true, Requests: &requests.Stats{Rejected: 400},
		},
	}
	data := topLevel(t, res, map[string]any{
		"id": "churn-limited-1", "kind": "churn-limited", "dir": "results/churn-limited-1", "outcome": "completed",
		"targetRate": 200.0, "created": 1500.0, "limited": true,
	})
	var back ChurnResult
	if err := json.Unmarshal(data, &back); err != nil || back.Run != res.Run || back.Created != 1500 || back.Requests == nil || back.Requests.Rejected != 400 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got, want := res.Summary(), "creates 150.5/s of 200 (75%), deletes 149.0/s, 500 errors (400 × 429), 5 shed"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	clean := ChurnResult{ChurnResult: workload.ChurnResult{TargetRate: 50, AchievedCreateRate: 50, AchievedDeleteRate: 50, CreateRatio: 1}}
	if got, want := clean.Summary(), "creates 50.0/s of 50 (100%), deletes 50.0/s"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	clean.RateChanges = []workload.RateChange{{AtSeconds: 5, Rate: 60}, {AtSeconds: 9, Rate: 70}}
	if got, want := clean.Summary(), "creates 50.0/s of 50→70 (100%), deletes 50.0/s"; got != want {
		t.Errorf("summary after +/- %q, want %q", got, want)
	}
}

func TestChurnOptionsValidate(t *testing.T) {
	for _, limited := range []bool{false, true} {
		o := NewChurnOptions(limited)
		if err := o.Validate(); err != nil {
			t.Errorf("defaults (limited %v): %v", limited, err)
		}
		if o.Lifetime != 10*time.Second {
			t.Errorf("default lifetime %s, want 10s", o.Lifetime)
		}
	}
	if k := NewChurnOptions(true).Kind(); k != "churn-limited" {
		t.Errorf("kind %q", k)
	}
	tests := []struct {
		name string
		edit func(*ChurnOptions)
		want string
	}{
		{"rate 0", func(o *ChurnOptions) { o.Rate = 0 }, "rate 0 is out of range: allowed are more than 0 and at most 5000 pods/s"},
		{"rate too high", func(o *ChurnOptions) { o.Rate = 6000 }, "rate 6000 is out of range: allowed are more than 0 and at most 5000 pods/s"},
		{"duration 0", func(o *ChurnOptions) { o.Duration = 0 }, "duration 0s is out of range: it must be more than 0 (e.g. 60s, 10m)"},
		{"lifetime past the end", func(o *ChurnOptions) { o.Lifetime = time.Minute }, "lifetime 1m0s is out of range: it must be more than 0 and less than the duration 1m0s"},
		{"negative GPUs", func(o *ChurnOptions) { o.GPUs = -1 }, "GPUs per pod -1 is out of range: allowed are 0 or more"},
		{"concurrency 0", func(o *ChurnOptions) { o.Limited, o.Concurrency = true, 0 }, "concurrency 0 is out of range: allowed are 1 or more"},
		{"request timeout 0", func(o *ChurnOptions) { o.Limited, o.Concurrency, o.RequestTimeout = true, 5, 0 }, "request timeout 0s is out of range: it must be more than 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewChurnOptions(false)
			o.Duration = time.Minute
			tc.edit(&o)
			if got := errorText(o.Validate()); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}
