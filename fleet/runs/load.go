package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// LoadOptions ask for N pods of G GPUs (see workload.LoadOptions); the
// run fills in its ID, the fleet's Prometheus, client limits and
// progress.
type LoadOptions struct {
	workload.LoadOptions
	// AllowUnschedulable runs even when G is more than any node has.
	AllowUnschedulable bool `json:"allowUnschedulable,omitempty"`
}

// NewLoadOptions are a load's defaults, the same for the flags and the
// console's form: 8000 × 1-GPU bare pods in gf-load, a burst from 100
// workers, 10 minutes to run.
func NewLoadOptions() LoadOptions {
	return LoadOptions{LoadOptions: workload.LoadOptions{
		Pods: 8000, GPUs: 1, Mode: workload.ModePods, Namespace: "gf-load", Timeout: 10 * time.Minute, Workers: 100,
	}}
}

// LoadResult is a load's figures and its run.
type LoadResult struct {
	Run
	workload.LoadResult
}

// Summary is the load in one line: what ran, how fast, and the verdict.
func (r LoadResult) Summary() string {
	s := fmt.Sprintf("%d/%d running in %.1fs, bound %.0f pods/s", r.Running, r.Pods, r.DurationSeconds, r.ScheduleRate)
	if r.Claim != "" {
		s += ", claim " + r.Claim
	}
	if r.Unschedulable > 0 {
		s += fmt.Sprintf(", %d unschedulable: %s", r.Unschedulable, r.UnschedulableReason)
	}
	if r.Requests.Rejected > 0 {
		s += fmt.Sprintf(", %d × 429", r.Requests.Rejected)
	}
	if r.Verdict.Bottleneck != "" {
		s += "; bottleneck: " + r.Verdict.Bottleneck
	}
	return s
}

// Load creates the pods, times them to Running and records the run. A
// run that times out or is interrupted returns its result and a nil
// error: its Outcome says so, and pods it left are named in Left.
func Load(ctx context.Context, env Env, o LoadOptions) (LoadResult, error) {
	if err := o.Check(); err != nil {
		return LoadResult{}, err // before the cluster: the same answer up or not
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return LoadResult{}, err
	}
	o.RunID = NewID("load")
	o.PrometheusURL = s.prometheusURL
	if s.settings != nil { // an attached cluster's limits are unknown
		o.Limits = workload.LimitsOf(*s.settings)
	}
	o.Report = env.reporter().Report
	warnings, err := o.Validate(capacity, o.AllowUnschedulable)
	if err != nil {
		return LoadResult{}, err
	}
	for _, w := range warnings {
		env.warn("%s", w)
	}
	res, rec, err := workload.Load(ctx, s.clients, o.LoadOptions)
	if err != nil && rec.Outcome == "" {
		return LoadResult{LoadResult: res}, err
	}
	run, werr := s.write(rec)
	out := LoadResult{Run: run, LoadResult: res}
	if werr != nil {
		return out, werr
	}
	if out.Run.Outcome == Interrupted {
		out.Left = fmt.Sprintf("the run's pods are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.Namespace)
	}
	return out, err
}
