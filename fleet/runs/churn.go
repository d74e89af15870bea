package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// ChurnOptions ask for an open-loop create/delete churn (see
// workload.ChurnOptions; Limited makes it churn-limited). Validate is the
// workload's: it checks every value and fills the lifetime's default.
type ChurnOptions struct {
	workload.ChurnOptions
}

// NewChurnOptions are a churn's defaults, the same for the flags and the
// console's form: 50 pods/s for 60s of 1-GPU pods in gf-churn, each
// living 10s (the lifetime is filled in by Validate); churn-limited runs
// at 100 pods/s and keeps 50 requests in flight, each given 2s. On the
// command line the rate and duration are arguments, always given.
func NewChurnOptions(limited bool) ChurnOptions {
	o := ChurnOptions{workload.ChurnOptions{Namespace: "gf-churn", Rate: 50, Duration: time.Minute, GPUs: 1, Limited: limited}}
	if limited {
		o.Rate, o.Concurrency, o.RequestTimeout = 100, 50, 2*time.Second
	}
	return o
}

// Kind is churn or churn-limited.
func (o ChurnOptions) Kind() string {
	if o.Limited {
		return "churn-limited"
	}
	return "churn"
}

// ChurnResult is a churn's figures and its run.
type ChurnResult struct {
	Run
	workload.ChurnResult
}

// Summary is the churn in one line: the rates it reached and what it lost.
func (r ChurnResult) Summary() string {
	target := fmt.Sprintf("%g", r.TargetRate)
	if n := len(r.RateChanges); n > 0 {
		target += fmt.Sprintf("→%g", r.RateChanges[n-1].Rate) // changed live: the ratio counts every slot
	}
	s := fmt.Sprintf("creates %.1f/s of %s (%.0f%%), deletes %.1f/s", r.AchievedCreateRate, target, 100*r.CreateRatio, r.AchievedDeleteRate)
	errs := 0
	for _, n := range r.Errors {
		errs += n
	}
	if errs > 0 {
		s += fmt.Sprintf(", %d errors", errs)
		if n := r.Errors["429"]; n > 0 {
			s += fmt.Sprintf(" (%d × 429)", n)
		}
	}
	if shed := r.Shed[workload.VerbCreate] + r.Shed[workload.VerbDelete]; shed > 0 {
		s += fmt.Sprintf(", %d shed", shed)
	}
	return s
}

// Churn creates pods at the rate and deletes each one its lifetime later,
// for the duration, then removes the pods left and records the run. The
// churn's rate control goes to env's Reporter (Live) while it runs. An
// interrupted run returns its result and a nil error; a run whose pods
// could not be removed returns its result, an error, and Left.
func Churn(ctx context.Context, env Env, o ChurnOptions) (ChurnResult, error) {
	kind := o.Kind()
	if err := o.Validate(); err != nil {
		return ChurnResult{}, err
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return ChurnResult{}, err
	}
	if int64(o.GPUs) > capacity.MaxNodeGPUs {
		return ChurnResult{}, fmt.Errorf("GPUs per pod %d is more than any node has (largest: %d)", o.GPUs, capacity.MaxNodeGPUs)
	}
	if need := int64(o.Rate*o.Lifetime.Seconds()+1) * int64(o.GPUs); need > capacity.FreeGPUs {
		env.warn("a steady population of %.0f pods × %d GPUs needs %d GPUs; %d are free: the rest stay Pending",
			o.Rate*o.Lifetime.Seconds(), o.GPUs, need, capacity.FreeGPUs)
	}
	if err := workload.EnsureNamespace(ctx, s.clients.Admin, o.Namespace); err != nil {
		return ChurnResult{}, err
	}
	load, counter, err := s.clients.LoadClientset(o.Namespace)
	if err != nil {
		return ChurnResult{}, err
	}
	o.RunID = NewID(kind)
	o.Report, o.Requests = env.reporter().Report, counter
	churn, err := workload.NewChurn(workload.NewPodAPI(load, o.Namespace), o.ChurnOptions)
	if err != nil {
		return ChurnResult{}, err
	}
	env.reporter().Live(churn)
	started := time.Now().UTC()
	done := progress.Step(o.Report, "churn", fmt.Sprintf("%s at %g pods/s for %s (pods live %s)", kind, o.Rate, o.Duration, o.Lifetime), 0)
	res, err := churn.Run(ctx)
	done()
	if err != nil {
		return ChurnResult{ChurnResult: res}, err
	}
	ended := time.Now().UTC()
	cleanDone := progress.Step(o.Report, "cleanup", "removing the run's remaining pods (not measured)", 0)
	cerr := workload.Cleanup(context.WithoutCancel(ctx), s.clients.Admin, o.Namespace, o.RunID)
	cleanDone()

	outcome := Completed
	if res.Interrupted {
		outcome = Interrupted
	}
	run, werr := s.write(record.Record{
		ID: o.RunID, Kind: kind, Started: started, Ended: ended, Outcome: outcome, Params: o.ChurnOptions, Result: res,
		Phases: []record.Phase{{Name: kind, Start: started, End: ended}},
	})
	out := ChurnResult{Run: run, ChurnResult: res}
	if werr != nil {
		return out, werr
	}
	// Churn removes its pods itself: only a failed removal leaves any.
	if cerr != nil {
		out.Left = fmt.Sprintf("the run's remaining pods are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.Namespace)
		return out, fmt.Errorf("removing the run's pods: %w (`ghostfleet unload` removes every GhostFleet workload)", cerr)
	}
	return out, nil
}
