package workload

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// jobNameLabel is set by the Job controller on every pod of a Job.
const jobNameLabel = "batch.kubernetes.io/job-name"

// TrainOptions configures a run of multi-node training jobs.
type TrainOptions struct {
	RunID      string        `json:"runId"`
	Namespace  string        `json:"namespace"`
	Jobs       int           `json:"jobs"`
	PodsPerJob int           `json:"podsPerJob"`
	GPUsPerPod int           `json:"gpusPerPod"`
	Timeout    time.Duration `json:"timeout"`
	// Stall ends the run when no pod was bound or started for this long:
	// the jobs still waiting will not start.
	Stall time.Duration `json:"stall"`
	// Claim is how pods ask for their GPUs, as LoadOptions.Claim: every
	// job's pods share one ResourceClaimTemplate, each pod its own claim.
	Claim string `json:"claim,omitempty"`
	// Gang has each job gang-scheduled by kube-scheduler's gang layer
	// (one PodGroup per job, minCount = PodsPerJob): only on a fleet
	// whose profile enables it. Topology, with Gang, keeps each job's
	// pods within one value of that node label (see Gang.Topology).
	Gang     bool          `json:"gang,omitempty"`
	Topology string        `json:"topology,omitempty"`
	Report   progress.Func `json:"-"`
}

// Validate checks the options.
func (o *TrainOptions) Validate(c Capacity) (warnings []string, err error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	free, maxNode, err := fleetClaim(&o.Claim, o.GPUsPerPod, c, false)
	if err != nil {
		return nil, err
	}
	if int64(o.GPUsPerPod) > maxNode {
		return nil, fmt.Errorf("GPUs per pod %d is out of range: allowed are 1-%d (the largest node)", o.GPUsPerPod, maxNode)
	}
	// A gang starts whole or never: one larger than every fake node
	// together could hold would wait for ever.
	if fit := int64(c.FakeNodes) * (maxNode / int64(o.GPUsPerPod)); o.Gang && int64(o.PodsPerJob) > fit {
		return nil, fmt.Errorf("--pods-per-job %d is out of range under gang scheduling: the %d fake nodes hold at most %d pods of %d GPUs, and a gang starts whole or never (--gang off starts jobs partly)",
			o.PodsPerJob, c.FakeNodes, fit, o.GPUsPerPod)
	}
	if need := int64(o.Jobs * o.PodsPerJob * o.GPUsPerPod); need > free {
		then := "without gang scheduling the ones that start partly hold GPUs they cannot use"
		if o.Gang {
			then = "gang-scheduled, the others wait whole, holding no GPUs"
		}
		warnings = append(warnings, fmt.Sprintf("%d jobs × %d pods × %d GPUs need %d GPUs; %d are free: not every job can start, and %s",
			o.Jobs, o.PodsPerJob, o.GPUsPerPod, need, free, then))
	}
	return warnings, nil
}

// Check checks what needs no cluster, each error naming the value and
// what is allowed.
func (o *TrainOptions) Check() error {
	switch {
	case o.Jobs < 1 || o.Jobs > 10000:
		return fmt.Errorf("job count %d is out of range: allowed are 1-10000", o.Jobs)
	case o.PodsPerJob < 1 || o.PodsPerJob > 1000:
		return fmt.Errorf("pods per job %d is out of range: allowed are 1-1000", o.PodsPerJob)
	case o.GPUsPerPod < 1:
		return fmt.Errorf("GPUs per pod %d is out of range: each pod must request at least 1 nvidia.com/gpu", o.GPUsPerPod)
	case o.Timeout <= 0:
		return fmt.Errorf("timeout %s is out of range: it must be more than 0", o.Timeout)
	case o.Stall < 0:
		return fmt.Errorf("stall %s is out of range: it must be 0 (never) or more", o.Stall)
	case o.Topology != "" && !o.Gang:
		return fmt.Errorf("topology %s needs gang scheduling: it is a constraint of each job's PodGroup", o.Topology)
	}
	if _, err := ParseClaim(o.Claim); err != nil {
		return err
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// TrainResult is what a training run measured.
type TrainResult struct {
	Jobs       int `json:"jobs"`
	PodsPerJob int `json:"podsPerJob"`
	GPUsPerPod int `json:"gpusPerPod"`
	// Gang: each job had a PodGroup with a gang policy (minCount =
	// PodsPerJob), Topology the node label its pods had to share.
	Gang     bool   `json:"gang,omitempty"`
	Topology string `json:"topology,omitempty"`
	// JobsStarted have every pod running; JobsPartial some; JobsWaiting none.
	JobsStarted int `json:"jobsStarted"`
	JobsPartial int `json:"jobsPartial"`
	JobsWaiting int `json:"jobsWaiting"`
	// StartLatency is, per started job, from its creation to its last pod
	// running.
	StartLatency Percentiles `json:"startLatency"`
	// PartialGPUSeconds is GPU time held by pods whose job was not fully
	// running: the waste gang scheduling exists to prevent.
	PartialGPUSeconds float64 `json:"partialGpuSeconds"`
	PeakPartialGPUs   int     `json:"peakPartialGpus"`
	// StrandedGPUs are held at the end by jobs that never fully started.
	StrandedGPUs    int     `json:"strandedGpus"`
	DurationSeconds float64 `json:"durationSeconds"`
	// JobsNotCreated are jobs whose create failed (see Requests for why):
	// the run goes on without them.
	JobsNotCreated int            `json:"jobsNotCreated"`
	Requests       requests.Stats `json:"requests"`
}

// Train creates the jobs (Indexed Jobs of whole-node pods that run until
// deleted) and measures how they start. How the run ended (all started,
// stalled, timed out, interrupted, failed: …) is the record's Outcome.
func Train(ctx context.Context, clients Clients, opts TrainOptions) (TrainResult, record.Record, error) {
	rec := record.Record{ID: opts.RunID, Kind: "train", Params: opts, Started: time.Now().UTC()}
	res := TrainResult{Jobs: opts.Jobs, PodsPerJob: opts.PodsPerJob, GPUsPerPod: opts.GPUsPerPod, Gang: opts.Gang, Topology: opts.Topology}
	r, err := startRun(ctx, clients, opts.Namespace, opts.RunID, jobNameLabel)
	if err != nil {
		return res, rec, err
	}
	claim, _ := ParseClaim(opts.Claim)
	if claim.DRA() {
		t := claim.Template(opts.RunID, opts.GPUsPerPod, map[string]string{LabelRun: opts.RunID})
		if err := CreateClaimTemplate(ctx, clients.Admin, opts.Namespace, t); err != nil {
			r.tracker.Stop()
			return res, rec, err
		}
	}
	tracker := r.tracker
	defer tracker.Stop()

	start := time.Now()
	createDone := progress.Step(opts.Report, "create", fmt.Sprintf("creating %d jobs × %d pods × %d GPUs", opts.Jobs, opts.PodsPerJob, opts.GPUsPerPod), 0)
	created := map[string]time.Time{}
	job := TrainJob{Namespace: opts.Namespace, RunID: opts.RunID, Pods: opts.PodsPerJob, GPUsPerPod: opts.GPUsPerPod}
	if claim.DRA() {
		job.ClaimTemplate = opts.RunID
	}
	gang := Gang{Enabled: opts.Gang, Topology: opts.Topology}
	var firstErr error
	for j := 0; j < opts.Jobs; j++ {
		job.Name = fmt.Sprintf("%s-%04d", opts.RunID, j)
		created[job.Name] = time.Now()
		err := CreateTrainJob(ctx, r.load, job, gang)
		if ctx.Err() != nil {
			delete(created, job.Name)
			break
		}
		if err != nil {
			res.JobsNotCreated++
			delete(created, job.Name)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	if res.JobsNotCreated == opts.Jobs { // not one job got through: nothing to measure
		createDone()
		res.Requests = r.requests.Stats()
		rec.Ended, rec.Outcome, rec.Result = time.Now().UTC(), "failed: every job create failed", res
		return res, rec, fmt.Errorf("every job create failed; first error: %w", firstErr)
	}
	w := waitRunning(ctx, tracker, waitOptions{
		Expect: (opts.Jobs - res.JobsNotCreated) * opts.PodsPerJob, Total: opts.Jobs * opts.PodsPerJob,
		Timeout: opts.Timeout, Stall: opts.Stall, Report: opts.Report, CreateDone: createDone,
	})
	res = trainAccounting(res, tracker.Pods(), created, w.End)
	res.Requests = r.requests.Stats()
	res.DurationSeconds = w.End.Sub(start).Seconds()
	rec.Ended, rec.Outcome, rec.Result = w.End.UTC(), w.outcome("all started"), res
	rec.Phases = []record.Phase{{Name: "train", Start: start.UTC(), End: w.End.UTC()}}
	return res, rec, nil
}

// trainAccounting derives the job figures from the pods' times: a job is
// started when all its pods run; until then, every bound pod of it holds
// GPUs that do no work.
func trainAccounting(res TrainResult, pods []PodTimes, created map[string]time.Time, end time.Time) TrainResult {
	byJob := map[string][]PodTimes{}
	for _, p := range pods {
		byJob[p.Group] = append(byJob[p.Group], p)
	}
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	var starts []time.Duration
	for job := range created {
		jp := byJob[job]
		running := 0
		var full time.Time
		for _, p := range jp {
			if !p.Running.IsZero() {
				running++
				if p.Running.After(full) {
					full = p.Running
				}
			}
		}
		switch {
		case running == res.PodsPerJob:
			res.JobsStarted++
			starts = append(starts, full.Sub(created[job]))
		case running > 0:
			res.JobsPartial++
			full = time.Time{}
		default:
			res.JobsWaiting++
			full = time.Time{}
		}
		for _, p := range jp {
			if p.Scheduled.IsZero() {
				continue
			}
			until := full
			if until.IsZero() {
				until = end
				res.StrandedGPUs += res.GPUsPerPod
			}
			if until.After(p.Scheduled) {
				res.PartialGPUSeconds += until.Sub(p.Scheduled).Seconds() * float64(res.GPUsPerPod)
				events = append(events, event{p.Scheduled, res.GPUsPerPod}, event{until, -res.GPUsPerPod})
			}
		}
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].at.Equal(events[j].at) {
			return events[i].delta < events[j].delta
		}
		return events[i].at.Before(events[j].at)
	})
	held := 0
	for _, e := range events {
		held += e.delta
		res.PeakPartialGPUs = max(res.PeakPartialGPUs, held)
	}
	res.StartLatency = Summarise(starts)
	return res
}
