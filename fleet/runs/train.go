package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// TrainOptions ask for multi-node training jobs (see
// workload.TrainOptions, whose Validate checks them against the fleet).
type TrainOptions struct {
	workload.TrainOptions
}

// NewTrainOptions are a training run's defaults, the same for the flags
// and the console's form: 100 jobs of 8 whole-DGX pods (8 GPUs) in
// gf-train, ending after 30s without progress or at 10 minutes.
func NewTrainOptions() TrainOptions {
	return TrainOptions{workload.TrainOptions{
		Jobs: 100, PodsPerJob: 8, GPUsPerPod: 8, Namespace: "gf-train", Timeout: 10 * time.Minute, Stall: 30 * time.Second,
	}}
}

// Training runs' outcomes besides Interrupted and TimedOut: every job
// started, or none progressed for the stall time.
const (
	AllStarted = "all started"
	Stalled    = "stalled"
)

// TrainResult is a training run's figures and its run; how it ended
// (AllStarted, Stalled, TimedOut, Interrupted or "failed: …") is the
// run's Outcome.
type TrainResult struct {
	Run
	workload.TrainResult
}

// Summary is the training run in one line: how many jobs started, and
// the GPUs partly started jobs hold.
func (r TrainResult) Summary() string {
	s := fmt.Sprintf("%s: %d/%d jobs running, %d partly, %d not at all", r.Outcome, r.JobsStarted, r.Jobs, r.JobsPartial, r.JobsWaiting)
	if r.StrandedGPUs > 0 {
		s += fmt.Sprintf("; %d GPUs stranded", r.StrandedGPUs)
	}
	return s
}

// Train creates the jobs, measures how they start and records the run.
// The jobs stay until `ghostfleet unload`. A run that stalls, times out
// or is interrupted returns its result and a nil error; one whose every
// job create failed is recorded, and returns its result and an error.
func Train(ctx context.Context, env Env, o TrainOptions) (TrainResult, error) {
	if err := o.Check(); err != nil {
		return TrainResult{}, err // before the cluster: the same answer up or not
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return TrainResult{}, err
	}
	o.RunID, o.Report = NewID("train"), env.reporter().Report
	warnings, err := o.Validate(capacity)
	if err != nil {
		return TrainResult{}, err
	}
	for _, w := range warnings {
		env.warn("%s", w)
	}
	res, rec, err := workload.Train(ctx, s.clients, o.TrainOptions)
	if err != nil && rec.Outcome == "" {
		return TrainResult{TrainResult: res}, err
	}
	run, werr := s.write(rec)
	out := TrainResult{Run: run, TrainResult: res}
	if werr != nil {
		return out, werr
	}
	if out.Outcome == Interrupted {
		out.Left = fmt.Sprintf("the run's jobs are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.Namespace)
	}
	return out, err
}
