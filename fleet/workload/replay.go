package workload

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// ReplayOptions replay a workload file: each job is created at its
// arrival time, as train creates its jobs.
type ReplayOptions struct {
	RunID     string   `json:"runId"`
	Namespace string   `json:"namespace"`
	Workload  Arrivals `json:"-"`
	// File is where the workload was read from, for the record.
	File string `json:"workload"`
	// Timeout bounds the wait for the jobs after the last one arrived;
	// Stall ends it when no pod was bound or started for this long.
	Timeout time.Duration `json:"timeout"`
	Stall   time.Duration `json:"stall"`
	// Cluster is GhostFleet's own fleet whose processes' CPU is read
	// from /proc ("" on an attached cluster: no CPU figures).
	Cluster string `json:"cluster,omitempty"`
	// Gang creates each job with its PodGroup, as train --gang does, for
	// kube-scheduler's gang layer.
	Gang   Gang          `json:"gang"`
	Report progress.Func `json:"-"`
}

// Validate checks the options against the fleet: every job's claim must
// be one the fleet can serve and every pod must fit on a node.
func (o *ReplayOptions) Validate(c Capacity) (warnings []string, err error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	_, gpus := o.Workload.Pods()
	var free int64
	for i := range o.Workload.Jobs {
		j := &o.Workload.Jobs[i]
		f, maxNode, err := fleetClaim(&j.Claim, j.GPUsPerPod, c, false)
		if err != nil {
			return nil, fmt.Errorf("workload job %s: %w", j.Name, err)
		}
		if int64(j.GPUsPerPod) > maxNode {
			return nil, fmt.Errorf("workload job %s: %d GPUs per pod is more than any node has (%d): it could never start", j.Name, j.GPUsPerPod, maxNode)
		}
		free = f
		if fit := int64(c.FakeNodes) * (maxNode / int64(j.GPUsPerPod)); o.Gang.Enabled && int64(j.Pods) > fit {
			warnings = append(warnings, fmt.Sprintf("workload job %s: %d pods of %d GPUs under gang scheduling never start: the %d fake nodes hold at most %d such pods",
				j.Name, j.Pods, j.GPUsPerPod, c.FakeNodes, fit))
		}
	}
	if int64(gpus) > free {
		warnings = append(warnings, fmt.Sprintf("the workload asks for %d GPUs; %d are free: not every job can start", gpus, free))
	}
	return warnings, nil
}

// Check checks what needs no cluster.
func (o *ReplayOptions) Check() error {
	switch {
	case len(o.Workload.Jobs) == 0:
		return fmt.Errorf("the workload has no jobs")
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s is out of range: it must be more than 0", o.Timeout)
	case o.Stall < 0:
		return fmt.Errorf("--stall %s is out of range: it must be 0 (never) or more", o.Stall)
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// Job start states in a replay.
const (
	JobFull       = "full"
	JobPartial    = "partial"
	JobNone       = "none"
	JobNotCreated = "not created"
)

// ReplayJob is one job of a replay: how it started.
type ReplayJob struct {
	Name       string  `json:"name"`
	At         float64 `json:"atSeconds"`
	Pods       int     `json:"pods"`
	GPUsPerPod int     `json:"gpusPerPod"`
	// Started is JobFull, JobPartial, JobNone or JobNotCreated; Running
	// its pods running at the end.
	Started string `json:"started"`
	Running int    `json:"running"`
	// StartSeconds is from its creation to its last pod running (full
	// jobs only); GangWaitSeconds from its first pod bound to its last
	// running: how long the GPUs placed first waited for the rest (to
	// the end of the run for a job that never fully started).
	StartSeconds    float64 `json:"startSeconds,omitempty"`
	GangWaitSeconds float64 `json:"gangWaitSeconds"`
}

// OccupancyPoint is the fleet's GPUs at one second of a replay: held by
// any pod (the saved state's too), and free on nodes that are partly
// used (fragmentation).
type OccupancyPoint struct {
	Seconds    float64 `json:"t"`
	UsedGPUs   int64   `json:"used"`
	Fragmented int64   `json:"fragmented"`
}

// ReplayResult is what a replay measured.
type ReplayResult struct {
	Jobs        int `json:"jobs"`
	Pods        int `json:"pods"`
	GPUs        int `json:"gpus"`
	JobsStarted int `json:"jobsStarted"`
	JobsPartial int `json:"jobsPartial"`
	JobsWaiting int `json:"jobsWaiting"`
	// JobsNotCreated are jobs whose create failed (see Requests).
	JobsNotCreated int `json:"jobsNotCreated"`
	// StartLatency is creation → last pod running over fully started
	// jobs; GangWait first pod bound → last pod running over them.
	StartLatency Percentiles `json:"startLatency"`
	GangWait     Percentiles `json:"gangWait"`
	// PartialGPUSeconds is GPU time held by pods whose job was not fully
	// running; StrandedGPUs are held at the end by jobs that never fully
	// started.
	PartialGPUSeconds float64 `json:"partialGpuSeconds"`
	PeakPartialGPUs   int     `json:"peakPartialGpus"`
	StrandedGPUs      int     `json:"strandedGpus"`
	// FleetGPUs are all the fake nodes' GPUs; the occupancy figures are
	// shares of them, sampled every second of the replay.
	FleetGPUs     int64   `json:"fleetGpus"`
	MeanOccupancy float64 `json:"meanOccupancy"`
	EndOccupancy  float64 `json:"endOccupancy"`
	// FragmentedGPUs are free GPUs on partly used nodes: at the end, and
	// the mean over the replay.
	FragmentedGPUs     int64            `json:"fragmentedGpus"`
	MeanFragmentedGPUs float64          `json:"meanFragmentedGpus"`
	Occupancy          []OccupancyPoint `json:"occupancy"`
	// CPU is each process's CPU seconds during the replay (GhostFleet's
	// own fleet only); ControlPlaneCPUPerPod the control plane's and
	// kwok's milliseconds per pod the replay had scheduled.
	CPU                   map[string]float64 `json:"cpuSeconds,omitempty"`
	ControlPlaneCPUPerPod float64            `json:"controlPlaneCpuMsPerPod"`
	DurationSeconds       float64            `json:"durationSeconds"`
	Requests              requests.Stats     `json:"requests"`
	JobResults            []ReplayJob        `json:"jobResults"`
}

// Replay creates each job of the workload at its arrival time through
// CreateTrainJob, exactly as train creates its jobs (gang or not), and measures how each
// started and what the fleet's GPUs did meanwhile. How the run ended is
// the record's Outcome: all started, stalled, timed out or interrupted.
func Replay(ctx context.Context, clients Clients, opts ReplayOptions) (ReplayResult, record.Record, error) {
	w := opts.Workload
	rec := record.Record{ID: opts.RunID, Kind: "replay", Params: opts, Started: time.Now().UTC()}
	res := ReplayResult{Jobs: len(w.Jobs)}
	res.Pods, res.GPUs = w.Pods()
	nodes, err := gpuNodes(ctx, clients.Admin)
	if err != nil {
		return res, rec, err
	}
	r, err := startRun(ctx, clients, opts.Namespace, opts.RunID, jobNameLabel)
	if err != nil {
		return res, rec, err
	}
	defer r.tracker.Stop()
	templates := map[string]string{} // claim/GPUs → template name
	for _, j := range w.Jobs {
		claim, _ := ParseClaim(j.Claim)
		key := fmt.Sprintf("%s/%d", claim, j.GPUsPerPod)
		if !claim.DRA() || templates[key] != "" {
			continue
		}
		name := fmt.Sprintf("%s-c%d", opts.RunID, len(templates))
		if err := CreateClaimTemplate(ctx, clients.Admin, opts.Namespace, claim.Template(name, j.GPUsPerPod, map[string]string{LabelRun: opts.RunID})); err != nil {
			return res, rec, err
		}
		templates[key] = name
	}
	var cpuBefore map[string]time.Duration
	if opts.Cluster != "" {
		if cpuBefore, err = fleet.ComponentCPU(opts.Cluster); err != nil {
			return res, rec, err
		}
	}

	start := time.Now()
	created := map[string]time.Time{}
	done := progress.Step(opts.Report, "arrivals", fmt.Sprintf("%d jobs (%d pods, %d GPUs) arriving over %s", len(w.Jobs), res.Pods, res.GPUs, w.Span()), w.Span())
	var firstErr error
	for i, j := range w.Jobs {
		if d := time.Until(start.Add(j.At)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		claim, _ := ParseClaim(j.Claim)
		name := opts.RunID + "-" + j.Name
		created[name] = time.Now()
		job := TrainJob{Namespace: opts.Namespace, Name: name, RunID: opts.RunID, Pods: j.Pods, GPUsPerPod: j.GPUsPerPod,
			ClaimTemplate: templates[fmt.Sprintf("%s/%d", claim, j.GPUsPerPod)]}
		if err := CreateTrainJob(ctx, r.load, job, opts.Gang); err != nil {
			delete(created, name)
			if ctx.Err() != nil {
				break
			}
			res.JobsNotCreated++
			firstErr = cmp.Or(firstErr, err)
		}
		opts.Report(progress.Event{Kind: progress.Update, Step: "arrivals", Done: i + 1, Total: len(w.Jobs)})
	}
	done()
	if len(created) == 0 && ctx.Err() == nil {
		res.Requests = r.requests.Stats()
		rec.Ended, rec.Outcome, rec.Result = time.Now().UTC(), "failed: every job create failed", res
		return res, rec, fmt.Errorf("every job create failed; first error: %w", firstErr)
	}
	expect := 0
	for _, j := range w.Jobs {
		if _, ok := created[opts.RunID+"-"+j.Name]; ok {
			expect += j.Pods
		}
	}
	wo := waitOutcome{End: time.Now(), Interrupted: ctx.Err() != nil}
	if !wo.Interrupted {
		wo = waitRunning(ctx, r.tracker, waitOptions{Expect: expect, Total: res.Pods, Timeout: opts.Timeout, Stall: opts.Stall,
			Report: opts.Report, CreateDone: func() {}})
	}
	if cpuBefore != nil {
		if res.CPU, err = fleet.CPUSince(opts.Cluster, cpuBefore); err != nil {
			return res, rec, err
		}
	}
	res = replayAccounting(res, w, opts.RunID, r.tracker.Pods(), created, nodes, start, wo.End)
	res.Requests = r.requests.Stats()
	res.DurationSeconds = wo.End.Sub(start).Seconds()
	rec.Ended, rec.Outcome, rec.Result = wo.End.UTC(), wo.outcome("all started"), res
	rec.Phases = []record.Phase{{Name: "replay", Start: start.UTC(), End: wo.End.UTC()}}
	return res, rec, nil
}

// nodeGPUs is a fake node's GPUs: how many, and how many the pods that
// were there before the replay hold.
type nodeGPUs struct{ total, used int64 }

// gpuNodes reads every fake node's GPUs, extended resource and DRA
// devices alike, and what is already allocated on them.
func gpuNodes(ctx context.Context, cs kubernetes.Interface) (map[string]nodeGPUs, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelType + "=kwok"})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := map[string]nodeGPUs{}
	for _, n := range list.Items {
		q := n.Status.Allocatable[fleet.ResourceGPU]
		out[n.Name] = nodeGPUs{total: q.Value()}
	}
	used, err := fleet.AllocatedGPUs(ctx, cs)
	if err != nil {
		return nil, err
	}
	dra, err := fleet.ListDRA(ctx, cs)
	if err != nil {
		return nil, err
	}
	for name, g := range out {
		g.total += dra.Published[name]
		g.used = used[name] + dra.Allocated[name]
		out[name] = g
	}
	return out, nil
}

// replayAccounting derives every figure from the pods' times: per job,
// how and when it started; over the run, the GPUs held, partly started
// jobs' waste and the free GPUs left on partly used nodes.
func replayAccounting(res ReplayResult, w Arrivals, runID string, pods []PodTimes, created map[string]time.Time,
	nodes map[string]nodeGPUs, start, end time.Time) ReplayResult {
	byJob := byGroup(pods)
	type event struct {
		at    time.Time
		delta int
	}
	var partial []event
	var starts, waits []time.Duration
	for _, j := range w.Jobs {
		name := runID + "-" + j.Name
		out := ReplayJob{Name: j.Name, At: j.At.Seconds(), Pods: j.Pods, GPUsPerPod: j.GPUsPerPod}
		createdAt, ok := created[name]
		if !ok {
			out.Started = JobNotCreated
			res.JobResults = append(res.JobResults, out)
			continue
		}
		var full, firstBound time.Time
		for _, p := range byJob[name] {
			if !p.Scheduled.IsZero() && (firstBound.IsZero() || p.Scheduled.Before(firstBound)) {
				firstBound = p.Scheduled
			}
			if !p.Running.IsZero() {
				out.Running++
				if p.Running.After(full) {
					full = p.Running
				}
			}
		}
		switch {
		case out.Running >= j.Pods:
			out.Started = JobFull
			res.JobsStarted++
			out.StartSeconds = full.Sub(createdAt).Seconds()
			starts = append(starts, full.Sub(createdAt))
			if !firstBound.IsZero() {
				waits = append(waits, full.Sub(firstBound))
				out.GangWaitSeconds = full.Sub(firstBound).Seconds()
			}
		case out.Running > 0:
			out.Started = JobPartial
			res.JobsPartial++
			full = time.Time{}
		default:
			out.Started = JobNone
			res.JobsWaiting++
			full = time.Time{}
		}
		if full.IsZero() && !firstBound.IsZero() {
			out.GangWaitSeconds = end.Sub(firstBound).Seconds()
		}
		for _, p := range byJob[name] {
			if p.Scheduled.IsZero() {
				continue
			}
			until := full
			if until.IsZero() {
				until = end
				res.StrandedGPUs += j.GPUsPerPod
			}
			if until.After(p.Scheduled) {
				res.PartialGPUSeconds += until.Sub(p.Scheduled).Seconds() * float64(j.GPUsPerPod)
				partial = append(partial, event{p.Scheduled, j.GPUsPerPod}, event{until, -j.GPUsPerPod})
			}
		}
		res.JobResults = append(res.JobResults, out)
	}
	sort.Slice(partial, func(i, j int) bool {
		if partial[i].at.Equal(partial[j].at) {
			return partial[i].delta < partial[j].delta
		}
		return partial[i].at.Before(partial[j].at)
	})
	held := 0
	for _, e := range partial {
		held += e.delta
		res.PeakPartialGPUs = max(res.PeakPartialGPUs, held)
	}
	res.StartLatency, res.GangWait = Summarise(starts), Summarise(waits)
	res = occupancy(res, w, runID, pods, nodes, start, end)
	return res
}

// occupancy samples, every second from start to end, the GPUs held on
// the fleet and the free ones on partly used nodes. A pod holds its GPUs
// from when it was bound: replayed pods run until deleted.
func occupancy(res ReplayResult, w Arrivals, runID string, pods []PodTimes, nodes map[string]nodeGPUs, start, end time.Time) ReplayResult {
	gpusOf := map[string]int64{}
	for _, j := range w.Jobs {
		gpusOf[runID+"-"+j.Name] = int64(j.GPUsPerPod)
	}
	bound := slices.DeleteFunc(slices.Clone(pods), func(p PodTimes) bool { return p.Scheduled.IsZero() || p.Node == "" })
	sort.Slice(bound, func(i, j int) bool { return bound[i].Scheduled.Before(bound[j].Scheduled) })
	used := map[string]int64{}
	for name, n := range nodes {
		used[name] = n.used
		res.FleetGPUs += n.total
	}
	sample := func(at time.Time) OccupancyPoint {
		pt := OccupancyPoint{Seconds: at.Sub(start).Seconds()}
		for name, n := range nodes {
			u := min(used[name], n.total)
			pt.UsedGPUs += u
			if u > 0 && u < n.total {
				pt.Fragmented += n.total - u
			}
		}
		return pt
	}
	next := 0
	for at := start; ; at = at.Add(time.Second) {
		if at.After(end) {
			at = end
		}
		for ; next < len(bound) && !bound[next].Scheduled.After(at); next++ {
			used[bound[next].Node] += gpusOf[bound[next].Group]
		}
		res.Occupancy = append(res.Occupancy, sample(at))
		if !at.Before(end) {
			break
		}
	}
	var occ, frag float64
	for _, p := range res.Occupancy {
		occ += float64(p.UsedGPUs)
		frag += float64(p.Fragmented)
	}
	n := float64(len(res.Occupancy))
	last := res.Occupancy[len(res.Occupancy)-1]
	res.FragmentedGPUs, res.MeanFragmentedGPUs = last.Fragmented, frag/n
	if res.FleetGPUs > 0 {
		res.MeanOccupancy, res.EndOccupancy = occ/n/float64(res.FleetGPUs), float64(last.UsedGPUs)/float64(res.FleetGPUs)
	}
	if res.CPU != nil {
		scheduled := len(bound)
		_, res.ControlPlaneCPUPerPod = perPod(res.CPU, scheduled)
	}
	return res
}
