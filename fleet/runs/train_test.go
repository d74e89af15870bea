package runs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// The run's outcome is the one "outcome" at the top level: the figures
// carry none of their own to clash with it.
func TestTrainResultJSON(t *testing.T) {
	res := TrainResult{
		Run:         Run{ID: "train-1", Kind: "train", Dir: "results/train-1", Outcome: Stalled},
		TrainResult: workload.TrainResult{Jobs: 15, PodsPerJob: 8, GPUsPerPod: 8, JobsStarted: 12, JobsPartial: 1, JobsWaiting: 2, StrandedGPUs: 32},
	}
	data := topLevel(t, res, map[string]any{
		"id": "train-1", "kind": "train", "dir": "results/train-1", "outcome": "stalled",
		"jobs": 15.0, "jobsStarted": 12.0, "strandedGpus": 32.0,
	})
	var back TrainResult
	if err := json.Unmarshal(data, &back); err != nil || back.Run != res.Run || back.JobsStarted != 12 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// What the e2e test and older readers decode: the figures alone.
	var figures workload.TrainResult
	if err := json.Unmarshal(data, &figures); err != nil || !reflect.DeepEqual(figures, res.TrainResult) {
		t.Errorf("figures alone: %+v, %v", figures, err)
	}
	if got, want := res.Summary(), "stalled: 12/15 jobs running, 1 partly, 2 not at all; 32 GPUs stranded"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestTrainOptionsValidate(t *testing.T) {
	dgx := workload.Capacity{FakeNodes: 100, TotalGPUs: 800, FreeGPUs: 800, MaxNodeGPUs: 8}
	o := NewTrainOptions()
	warnings, err := o.Validate(dgx)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "100 jobs × 8 pods × 8 GPUs need 6400 GPUs; 800 are free") {
		t.Errorf("defaults on 100 DGX nodes: %v, %v", warnings, err)
	}
	tests := []struct {
		name string
		edit func(*TrainOptions)
		want string
	}{
		{"no jobs", func(o *TrainOptions) { o.Jobs = 0 }, "job count 0 is out of range: allowed are 1-10000"},
		{"too many pods", func(o *TrainOptions) { o.PodsPerJob = 1001 }, "pods per job 1001 is out of range: allowed are 1-1000"},
		{"GPUs past the node", func(o *TrainOptions) { o.GPUsPerPod = 9 }, "GPUs per pod 9 is out of range: allowed are 1-8 (the largest node)"},
		{"timeout 0", func(o *TrainOptions) { o.Timeout = 0 }, "timeout 0s is out of range: it must be more than 0"},
		{"negative stall", func(o *TrainOptions) { o.Stall = -time.Second }, "stall -1s is out of range: it must be 0 (never) or more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewTrainOptions()
			tc.edit(&o)
			_, err := o.Validate(dgx)
			if got := errorText(err); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}
