package workload

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	Gang     bool   `json:"gang,omitempty"`
	Topology string `json:"topology,omitempty"`
	// Admission is how jobs reach the scheduler: AdmissionNone ("" too)
	// sends every job's pods at once; AdmissionQuota holds each job's
	// pods behind AdmissionGate until the fleet's free GPUs cover the
	// whole job, in creation order (see admitter).
	Admission string `json:"admission,omitempty"`
	// AdmitBy is how quota admission holds a job back: AdmitByGate ("" too)
	// or AdmitBySuspend.
	AdmitBy string `json:"admitBy,omitempty"`
	// UngateWorkers are the gate removals quota admission has in flight
	// at once (0: DefaultUngateWorkers; 1: one PATCH at a time).
	UngateWorkers int `json:"ungateWorkers,omitempty"`
	// fleetGPUs are the fake nodes' allocatable GPUs, as Validate found
	// them (which refuses quota admission when a job needs more): what
	// quota admission admits against.
	fleetGPUs int64
	// Hold keeps watching the jobs this long once every one runs, so that
	// what faults cost them meanwhile is measured (TrainResult's breaks).
	Hold time.Duration `json:"hold,omitempty"`
	// Restart is what a job does when it loses a worker during Hold:
	// RestartWorker ("" too) leaves it to the Job controller, which
	// replaces that one worker; RestartJob restarts the whole job, as
	// JobSet's failure policy or an elastic launcher does (see restarter).
	Restart string `json:"restart,omitempty"`
	// RestartDelay, under RestartJob, is how long a restart waits
	// between the old Job gone and creating it again: a launcher's
	// backoff before it restarts.
	RestartDelay time.Duration `json:"restartDelay,omitempty"`
	// TraceAPIServer, when set, takes a Go execution trace of
	// kube-apiserver over the hold's first TraceAPIServer (whole
	// seconds, at most Hold and maxTrace) and records what it
	// shows of the requests' waits to run (TrainResult.APIServerTrace).
	TraceAPIServer time.Duration `json:"traceApiserver,omitempty"`
	// TraceEtcd likewise takes one of etcd over the hold's first
	// TraceEtcd, through Meters.EtcdTrace (TrainResult.EtcdTrace).
	TraceEtcd time.Duration `json:"traceEtcd,omitempty"`
	Report    progress.Func `json:"-"`
	// Meters are where the run reads what each phase cost the control
	// plane (TrainResult's ControllerManager, APIServer, Scheduler and
	// CPU), and how it opens etcd's trace.
	Meters MeterSources `json:"-"`
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
	if o.Admission == AdmissionQuota {
		claim, _ := ParseClaim(o.Claim)
		switch need := int64(o.PodsPerJob * o.GPUsPerPod); {
		case claim.DRA() || c.Devices > 0:
			return nil, fmt.Errorf("--admission quota counts nvidia.com/gpu on the nodes, and this fleet's GPUs are DRA devices (--claim %s): use --admission none", o.Claim)
		case need > c.TotalGPUs:
			return nil, fmt.Errorf("--admission quota: a job of %d pods × %d GPUs needs %d GPUs, more than the fleet's %d, and would never be admitted (nor any job after it)", o.PodsPerJob, o.GPUsPerPod, need, c.TotalGPUs)
		}
	}
	o.fleetGPUs = c.TotalGPUs
	if need := int64(o.Jobs * o.PodsPerJob * o.GPUsPerPod); need > free {
		then := "without gang scheduling the ones that start partly hold GPUs they cannot use"
		switch {
		case o.Admission == AdmissionQuota && o.AdmitBy == AdmitBySuspend:
			then = "the others wait suspended, their pods not yet created, until GPUs free up"
		case o.Admission == AdmissionQuota:
			then = "the others wait behind the admission gate, out of the scheduler's queue, until GPUs free up"
		case o.Gang:
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
	case o.Hold < 0 || o.Hold > 24*time.Hour:
		return fmt.Errorf("hold %s is out of range: allowed are 0 (end when every job runs) to 24h", o.Hold)
	case o.Topology != "" && !o.Gang:
		return fmt.Errorf("topology %s needs gang scheduling: it is a constraint of each job's PodGroup", o.Topology)
	case o.Restart != "" && !slices.Contains(RestartModes, o.Restart):
		return fmt.Errorf("--restart %q: allowed are %s", o.Restart, strings.Join(RestartModes, ", "))
	case o.Restart == RestartJob && o.Hold == 0:
		return fmt.Errorf("--restart job restarts the jobs that lose a worker while the run holds: set --hold too")
	case o.RestartDelay < 0 || o.RestartDelay > maxRestartDelay:
		return fmt.Errorf("restart delay %s is out of range: allowed are 0 (at once) to %s", o.RestartDelay, maxRestartDelay)
	case o.RestartDelay > 0 && o.Restart != RestartJob:
		return fmt.Errorf("restart delay %s is a whole-job restart's: set --restart job too", o.RestartDelay)
	case o.Admission != "" && !slices.Contains(AdmissionModes, o.Admission):
		return fmt.Errorf("--admission %q: allowed are %s", o.Admission, strings.Join(AdmissionModes, ", "))
	case o.Admission == AdmissionQuota && o.Restart == RestartJob:
		return fmt.Errorf("--admission quota with --restart job: a job made again would keep its admission and skip the queue; use one or the other")
	case o.AdmitBy != "" && !slices.Contains(AdmitByModes, o.AdmitBy):
		return fmt.Errorf("--admit-by %q: allowed are %s", o.AdmitBy, strings.Join(AdmitByModes, ", "))
	case o.AdmitBy != "" && o.Admission != AdmissionQuota:
		return fmt.Errorf("--admit-by %s sets how quota admission holds jobs back: set --admission quota too", o.AdmitBy)
	case o.UngateWorkers < 0 || o.UngateWorkers > MaxUngateWorkers:
		return fmt.Errorf("--ungate-workers %d is out of range: allowed are 0 (the default, %d) to %d", o.UngateWorkers, DefaultUngateWorkers, MaxUngateWorkers)
	case o.UngateWorkers > 0 && (o.Admission != AdmissionQuota || o.AdmitBy == AdmitBySuspend):
		return fmt.Errorf("--ungate-workers %d sets how quota admission removes gates: set --admission quota too, by gate (--admit-by suspend removes none)", o.UngateWorkers)
	}
	for _, t := range []struct {
		what string
		d    time.Duration
	}{{"apiserver", o.TraceAPIServer}, {"etcd", o.TraceEtcd}} {
		switch {
		case t.d > 0 && o.Hold == 0:
			return fmt.Errorf("%s trace %s is of the hold's first seconds: set --hold too", t.what, t.d)
		case t.d < 0 || t.d > min(o.Hold, maxTrace):
			return fmt.Errorf("%s trace %s is out of range: allowed are 0 (none) to the hold (%s), at most %s", t.what, t.d, o.Hold, maxTrace)
		case t.d%time.Second != 0:
			return fmt.Errorf("%s trace %s is not whole seconds: allowed are whole seconds up to the hold (%s), at most %s", t.what, t.d, o.Hold, maxTrace)
		}
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
	// JobsStarted had every pod running at some point; of the others,
	// JobsPartial have some running at the end, JobsWaiting none.
	JobsStarted int `json:"jobsStarted"`
	JobsPartial int `json:"jobsPartial"`
	JobsWaiting int `json:"jobsWaiting"`
	// StartLatency is, per started job, from its creation to the first
	// moment all its pods ran.
	StartLatency Percentiles `json:"startLatency"`
	// Breaks: once started, a job is broken while fewer than all its
	// workers run (one failed, was evicted or deleted, or its node went
	// NotReady) until its replacements run. WorkersEnded counts the
	// workers of started jobs that stopped; JobsBroken the jobs that broke
	// at least once, JobsDown those still broken at the end. Recovery is,
	// per break that ended, from the first worker lost to all running
	// again (seconds). BrokenGPUSeconds is GPU time held by the running
	// workers of broken jobs: without the missing worker they cannot take
	// a step.
	// Under RestartJob, WorkersEnded includes the workers a restart
	// stopped, JobRestarts counts the restarts made and RestartErrors
	// those that failed (their job stays down).
	WorkersEnded     int         `json:"workersEnded"`
	Restart          string      `json:"restart,omitempty"`
	JobRestarts      int         `json:"jobRestarts,omitempty"`
	RestartErrors    int         `json:"restartErrors,omitempty"`
	JobsBroken       int         `json:"jobsBroken"`
	JobsDown         int         `json:"jobsDown"`
	Recovery         Percentiles `json:"recovery"`
	BrokenGPUSeconds float64     `json:"brokenGpuSeconds"`
	// Where a break's time goes. BrokenGPUSeconds splits into
	// SurvivorGPUSeconds, held by the job's earlier workers (those that
	// ran before the break, until a restart stopped them, and any that
	// stopped during it), and ReplacementGPUSeconds, by the replacements
	// that ran on to its end, before the job was whole. Teardown is, per
	// break whose earlier workers ran into it and all stopped (a
	// whole-job restart), from the first worker lost to the last one
	// stopped; Assembly, per break that ended, from its first replacement
	// running to all running (seconds).
	SurvivorGPUSeconds    float64     `json:"survivorGpuSeconds"`
	ReplacementGPUSeconds float64     `json:"replacementGpuSeconds"`
	Teardown              Percentiles `json:"teardown"`
	Assembly              Percentiles `json:"assembly"`
	// TeardownStages split the teardowns where the apiserver saw them,
	// when the fleet keeps an audit log of the DELETEs of pods and jobs
	// (MeterSources.AuditLog); nil without a log or a teardown.
	TeardownStages *TeardownStages `json:"teardownStages,omitempty"`
	// AuditedRequests count, by phase, the requests the audit log holds
	// by who asked what ("generic-garbage-collector delete pods"): the
	// controller-manager's verbs by controller, which its /metrics do
	// not tell apart.
	AuditedRequests map[string]map[string]int `json:"auditedRequests,omitempty"`
	// AuditedTimes are the apiserver's times on the same requests, by
	// phase and the same keys.
	AuditedTimes map[string]map[string]AuditedTimes `json:"auditedTimes,omitempty"`
	// AuditedFailures count, by phase, those of the same requests the
	// apiserver answered with an error, by who asked what and the
	// answer's code ("kwok-controller patch pods/status 409"; "panic"
	// for a handler that panicked).
	AuditedFailures map[string]map[string]int `json:"auditedFailures,omitempty"`
	// AuditedWatches count, by phase, the watches the audit log holds by
	// who watched what ("kwok-controller pods"): opened, ended, and
	// ended before their own timeout (see AuditedWatches); nil when the
	// log holds none in the phases (the fleet's audit policy may log no
	// watch). A watch that started is not in AuditedRequests.
	AuditedWatches map[string]map[string]*AuditedWatches `json:"auditedWatches,omitempty"`
	// PodStatusWrites count the fleet's pods by how many status writes
	// (PATCHes and PUTs of pods/status, failed ones too) each client
	// sent for each, received during the phases: by client, namespace,
	// then the count ("kwok-controller": {"gf-exp-stream": {"2": 100}}).
	// kwok writes once as it marks a pod running and once as it marks
	// it exited, so a pod running before the run and exiting in it
	// counts one; a pod with more was marked again, or its write retried
	// (see AuditedFailures).
	PodStatusWrites map[string]map[string]map[string]int `json:"podStatusWrites,omitempty"`
	// StatusRewrites are, by client and namespace, the status writes to
	// pods the client had written to before: how long after the
	// previous one, and how many first writes and how many later ones
	// failed.
	StatusRewrites map[string]map[string]*StatusRewrites `json:"statusRewrites,omitempty"`
	// WritesBeforeFirst are, by client, namespace and "once" or
	// "again", the other clients' writes to each pod the client wrote
	// the status of once, or more, in the phases, from the pod's binding
	// or the client's own write before, to the client's first write in
	// the phases (see WritesBefore): a watch delivers each as a copy of
	// the pod without that write.
	WritesBeforeFirst map[string]map[string]map[string]*WritesBefore `json:"writesBeforeFirst,omitempty"`
	// SchedulerTokens are, by phase, how deep the scheduler's own client
	// drew its token bucket, replayed from the audit log with the
	// fleet's settings (MeterSources.SchedulerClient); nil without both.
	SchedulerTokens map[string]*TokensDrawn `json:"schedulerTokens,omitempty"`
	// StartAfterFit is, for each job that started whole (gang-scheduled
	// or admitted jobs only, on a fleet of nvidia.com/gpu), the time from
	// the last moment before it started that the fleet's free GPUs rose
	// to cover one more job (or its creation, if later) to it running
	// whole: the scheduler's, and any admission's, reaction to capacity.
	// Free GPUs are a fleet-wide sum as the admitter counts them from its
	// own watch of every pod, not a placement: nodes fragmented, or a
	// topology constraint, can leave a job unplaceable while they cover
	// it. Absent when the watch ended early.
	StartAfterFit *Percentiles `json:"startAfterFit,omitempty"`
	// JobsStartedAt is when each job that started first ran whole (all
	// its pods seen running), earliest first: against a moment taken
	// outside the run (capacity freed), how long a waiting job took.
	JobsStartedAt []time.Time `json:"jobsStartedAt,omitempty"`
	// Admission is what quota admission did (TrainOptions.Admission);
	// nil when jobs went to the scheduler at once.
	Admission *AdmissionResult `json:"admission,omitempty"`
	// HoldSeconds is how long the run watched the jobs after every one
	// ran (TrainOptions.Hold, less when interrupted).
	HoldSeconds float64 `json:"holdSeconds,omitempty"`
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
	// ControllerManager is, by phase (train, hold), what
	// kube-controller-manager's clients and work queues waited: where a
	// break's teardown and its recovery spend their time. A phase is
	// absent when its /metrics could not be read at its end (nor at any
	// phase's after it).
	ControllerManager map[string]ControllerManagerWaits `json:"controllerManager,omitempty"`
	// APIServer is, by phase, how long kube-apiserver took on the
	// requests of every client (how busy the control plane was while a
	// break tore down and recovered), Scheduler what kube-scheduler
	// tried, CPU each process's CPU seconds and RunQueue the seconds its
	// threads were ready to run but waited for a core
	// (fleet.ThreadRunQueueWaits; both GhostFleet's own fleet only);
	// each absent as ControllerManager is.
	APIServer map[string]APIServerTimes     `json:"apiserver,omitempty"`
	Scheduler map[string]SchedulerAttempts  `json:"scheduler,omitempty"`
	CPU       map[string]map[string]float64 `json:"cpuSeconds,omitempty"`
	RunQueue  map[string]map[string]float64 `json:"runQueueSeconds,omitempty"`
	// HostCPU is, by phase, the machine's cores' seconds by state, summed
	// over them (fleet.HostCPU: user, system, idle, steal…), on
	// GhostFleet's own fleet, absent as ControllerManager is: how busy
	// the machine was beyond the control plane, and what its hypervisor
	// took.
	HostCPU map[string]map[string]float64 `json:"hostCPUSeconds,omitempty"`
	// HostSpeed is, by phase, how fast the machine ran, sampled every
	// 5 s (SpeedSamples, by work), on GhostFleet's own fleet, absent as
	// ControllerManager is, and a phase with no trial in it (shorter
	// than the interval) too.
	HostSpeed map[string]SpeedSamples `json:"hostSpeed,omitempty"`
	// Etcd is, by phase, how long etcd took on the calls it served (the
	// apiserver's, from etcd's side), absent as ControllerManager is.
	Etcd map[string]EtcdTimes `json:"etcd,omitempty"`
	// APIServerTrace is what a Go execution trace of the apiserver over
	// the hold's first TrainOptions.TraceAPIServer showed.
	APIServerTrace *APIServerTrace `json:"apiserverTrace,omitempty"`
	// EtcdTrace is what one of etcd over the hold's first
	// TrainOptions.TraceEtcd showed.
	EtcdTrace *EtcdTrace `json:"etcdTrace,omitempty"`
}

// Train creates the jobs (Indexed Jobs of whole-node pods that run until
// deleted) and measures how they start. How the run ended (all started,
// stalled, timed out, interrupted, failed: …) is the record's Outcome.
func Train(ctx context.Context, clients Clients, opts TrainOptions) (TrainResult, record.Record, error) {
	rec := record.Record{ID: opts.RunID, Kind: "train", Params: opts, Started: time.Now().UTC()}
	res := TrainResult{Jobs: opts.Jobs, PodsPerJob: opts.PodsPerJob, GPUsPerPod: opts.GPUsPerPod, Gang: opts.Gang, Topology: opts.Topology, Restart: opts.Restart}
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
	// Jobs that start whole or not at all (admitted, or gang-scheduled
	// on a fleet of nvidia.com/gpu, which the watch counts) have the
	// fleet's free GPUs followed, from before the first job, so that
	// none of its pods is missed.
	var adm *admitter
	var times *admissionTimes
	stopAdmission := func() {}
	if gated := opts.Admission == AdmissionQuota; gated || (opts.Gang && opts.fleetGPUs > 0) {
		var stop func() admitterEnd
		adm, stop, err = startAdmitter(ctx, clients.Admin, opts.Namespace, opts.RunID, opts.fleetGPUs, int64(opts.PodsPerJob*opts.GPUsPerPod), gated, cmp.Or(opts.AdmitBy, AdmitByGate), cmp.Or(opts.UngateWorkers, DefaultUngateWorkers), opts.Report)
		if err != nil {
			return res, rec, err
		}
		stopAdmission = func() {
			end := stop()
			times = end.times
			if gated {
				res.Admission = &end.AdmissionResult
			}
		}
	}

	meter := startControlPlaneMeters(ctx, opts.Meters, opts.Report)
	defer meter.stop()
	auditFrom := auditLogSize(opts.Meters.AuditLog)
	start := time.Now()
	createDone := progress.Step(opts.Report, "create", fmt.Sprintf("creating %d jobs × %d pods × %d GPUs", opts.Jobs, opts.PodsPerJob, opts.GPUsPerPod), 0)
	created := map[string]time.Time{}
	job := TrainJob{Namespace: opts.Namespace, RunID: opts.RunID, Pods: opts.PodsPerJob, GPUsPerPod: opts.GPUsPerPod}
	if claim.DRA() {
		job.ClaimTemplate = opts.RunID
	}
	job.Gated = opts.Admission == AdmissionQuota && opts.AdmitBy != AdmitBySuspend
	job.Suspended = opts.Admission == AdmissionQuota && opts.AdmitBy == AdmitBySuspend
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
		} else if job.Gated || job.Suspended {
			adm.add(job.Name)
		}
	}
	if res.JobsNotCreated == opts.Jobs { // not one job got through: nothing to measure
		createDone()
		stopAdmission()
		res.Requests = r.requests.Stats()
		rec.Ended, rec.Outcome, rec.Result = time.Now().UTC(), "failed: every job create failed", res
		return res, rec, fmt.Errorf("every job create failed; first error: %w", firstErr)
	}
	w := waitRunning(ctx, tracker, waitOptions{
		Expect: (opts.Jobs - res.JobsNotCreated) * opts.PodsPerJob, Total: opts.Jobs * opts.PodsPerJob,
		Timeout: opts.Timeout, Stall: opts.Stall, Report: opts.Report, CreateDone: createDone, Deferred: job.Suspended,
	})
	res.DurationSeconds = w.End.Sub(start).Seconds()
	rec.Phases = []record.Phase{{Name: "train", Start: start.UTC(), End: w.End.UTC()}}
	meter.phase(ctx, "train")
	end, pods := w.End, tracker.Pods()
	if opts.Hold > 0 && w.outcome("all started") == "all started" {
		// A worker on a node gone NotReady stops there, though its pod
		// reads Running until it is evicted.
		downs, err := StartNodeDowns(ctx, clients.Admin)
		if err != nil {
			opts.Report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("workers on nodes that go NotReady will count as lost only once evicted: %v", err)})
		}
		// Started before the faults this hold is for, which a script
		// injects once it sees the hold start.
		traced := startTrace(ctx, "apiserver", "the apiserver's", apiserverTrace(clients.Admin), opts.TraceAPIServer)
		var etcdTraced *tracing
		if opts.Meters.EtcdTrace != nil {
			etcdTraced = startTrace(ctx, "etcd", "etcd's", opts.Meters.EtcdTrace, opts.TraceEtcd)
		} else if opts.TraceEtcd > 0 {
			opts.Report(progress.Event{Kind: progress.Warn, Message: "etcd's trace is not taken: " + EtcdTraceUnavailable})
		}
		var restarted func() (int, int)
		if opts.Restart == RestartJob {
			since := allWhole(tracker.Pods(), opts.PodsPerJob, w.End)
			restarted = restartJobs(ctx, newRestarter(r.load, job, gang, tracker.Pods, since, opts.RestartDelay, opts.Report))
		}
		end = hold(ctx, tracker, opts.Hold, w.End, (opts.Jobs-res.JobsNotCreated)*opts.PodsPerJob, opts.Report)
		if restarted != nil {
			res.JobRestarts, res.RestartErrors = restarted()
		}
		res.HoldSeconds = end.Sub(w.End).Seconds()
		w.Interrupted = ctx.Err() != nil
		rec.Phases = append(rec.Phases, record.Phase{Name: "hold", Start: w.End.UTC(), End: end.UTC()})
		meter.phase(ctx, "hold")
		pods = tracker.Pods()
		if downs != nil {
			downs.Stop()
			pods = downs.EndOnDownNodes(pods)
		}
		// Read once the hold's watchers are done: it takes seconds.
		res.APIServerTrace = traceResult(ctx, traced, opts.Report, readAPIServerTrace)
		res.EtcdTrace = traceResult(ctx, etcdTraced, opts.Report, readEtcdTrace)
	} else if opts.TraceAPIServer > 0 || opts.TraceEtcd > 0 {
		opts.Report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("no trace is taken: the run did not hold (%s)", w.outcome("all started"))})
	}
	// Until here a worker the Job controller replaces in an admitted job
	// still has its gate removed.
	stopAdmission()
	res, spans := trainAccounting(res, pods, created, end, times)
	if path := opts.Meters.AuditLog; path != "" {
		// Read as the run ends: a request answered after that is left out.
		skipped, err := recordAudit(&res, path, auditFrom, opts.Namespace, spans, rec.Phases, opts.Meters.SchedulerClient)
		switch {
		case err != nil:
			opts.Report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("the apiserver's audit log is not recorded: %v", err)})
		case skipped > 0:
			opts.Report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("%d lines of the apiserver's audit log %s are not events and were skipped", skipped, path)})
		}
	}
	res.Requests = r.requests.Stats()
	meter.record(&res)
	rec.Ended, rec.Outcome, rec.Result = end.UTC(), w.outcome("all started"), res
	return res, rec, nil
}

// allWhole is when the last job of pods first ran whole: the moment the
// train phase's poll sees up to 250 ms later, when the hold begins. A
// worker lost in between is restarted for as one lost in the hold. If a
// job never ran whole (its count reached by a replacement), fallback.
func allWhole(pods []PodTimes, want int, fallback time.Time) time.Time {
	var last time.Time
	for _, jp := range byGroup(pods) {
		started := jobTimeline(jp, want, fallback).started
		if started.IsZero() {
			return fallback
		}
		last = maxTime(last, started)
	}
	if last.IsZero() {
		return fallback
	}
	return last
}

// byGroup groups pods by their Group (their job).
func byGroup(pods []PodTimes) map[string][]PodTimes {
	out := map[string][]PodTimes{}
	for _, p := range pods {
		out[p.Group] = append(out[p.Group], p)
	}
	return out
}

// hold watches the started jobs for d from since (or until ctx ends),
// reporting how many of their workers run, and returns when it stopped.
func hold(ctx context.Context, tracker *Tracker, d time.Duration, since time.Time, workers int, report progress.Func) time.Time {
	done := progress.Step(report, "hold", fmt.Sprintf("watching the running jobs for %s", d), d)
	defer done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(since.Add(d)))
	defer deadline.Stop()
	for {
		c := tracker.Counts()
		report(progress.Event{Kind: progress.Update, Step: "hold", Done: c.Running - c.Ended, Total: workers})
		select {
		case <-ctx.Done():
			return time.Now()
		case <-deadline.C:
			return time.Now()
		case <-tick.C:
		}
	}
}

// appendSeconds appends d to all and returns it in seconds: one part of
// an admitted job goes to the parts' percentiles and to the job's own.
func appendSeconds(all *[]time.Duration, d time.Duration) float64 {
	*all = append(*all, d)
	return d.Seconds()
}

// trainAccounting derives the job figures from the pods' times. A pod
// runs from Running until Ended (or end). A job starts when all its pods
// first run together; until then every bound pod of it holds GPUs that do
// no work. After that, whenever fewer than all run, the job is broken
// until its replacements run. With times (what an admitter saw; nil when
// free GPUs were not followed) it sets StartAfterFit and, for admitted
// jobs, its parts in res.Admission. It returns the teardowns and the
// admitted jobs' binds too, for the audit log to split.
func trainAccounting(res TrainResult, pods []PodTimes, created map[string]time.Time, end time.Time, times *admissionTimes) (TrainResult, auditSpans) {
	byJob := byGroup(pods)
	var partial []gpuEvent
	var starts, afterFit, recoveries, teardowns, assemblies []time.Duration
	var admitAfterFit, ungate, startAfterUngate, podsCreated, podsBound, podsRunning []time.Duration
	var jobs []AdmittedJob
	var fits []time.Time
	if times != nil {
		fits = times.fits
	}
	spans := auditSpans{boundVersions: boundVersions(pods), runningSeen: runningSeen(pods)}
	for job := range created {
		jp := byJob[job]
		t := jobTimeline(jp, res.PodsPerJob, end)
		switch {
		case !t.started.IsZero():
			res.JobsStarted++
			starts = append(starts, t.started.Sub(created[job]))
			res.JobsStartedAt = append(res.JobsStartedAt, t.started.UTC())
			// The fit is the last before the job started or, if admitted,
			// before its admission: a later one is of the next job.
			admitted, ungated := times.admitted(job, t.started)
			from, by := created[job], cmp.Or(admitted, t.started)
			if i, _ := slices.BinarySearchFunc(fits, by, time.Time.Compare); i > 0 && fits[i-1].After(from) {
				from = fits[i-1]
			}
			afterFit = append(afterFit, t.started.Sub(from))
			if !admitted.IsZero() && !ungated.IsZero() {
				seen, bound, names := wholePodsSeen(jp, t.started, ungated)
				jobs = append(jobs, AdmittedJob{Job: job, Order: slices.Index(times.order, job) + 1, StartAfterFit: t.started.Sub(from).Seconds(),
					AdmitAfterFit: appendSeconds(&admitAfterFit, admitted.Sub(from)), Ungate: appendSeconds(&ungate, ungated.Sub(admitted)),
					StartAfterUngate: appendSeconds(&startAfterUngate, t.started.Sub(ungated)), PodsCreated: appendSeconds(&podsCreated, seen.Sub(ungated)),
					PodsBound: appendSeconds(&podsBound, bound.Sub(seen)), PodsRunning: appendSeconds(&podsRunning, t.started.Sub(bound))})
				spans.binds = append(spans.binds, bindSpan{job: job, seen: seen, bound: bound, pods: names})
			}
		case t.runningAtEnd > 0:
			res.JobsPartial++
		default:
			res.JobsWaiting++
		}
		for _, p := range jp {
			if p.Scheduled.IsZero() {
				continue
			}
			until := t.started
			if until.IsZero() {
				until = end
				if p.Ended.IsZero() {
					res.StrandedGPUs += res.GPUsPerPod
				}
			}
			if !p.Ended.IsZero() && p.Ended.Before(until) {
				until = p.Ended
			}
			if until.After(p.Scheduled) {
				res.PartialGPUSeconds += until.Sub(p.Scheduled).Seconds() * float64(res.GPUsPerPod)
				partial = append(partial, gpuEvent{at: p.Scheduled, delta: res.GPUsPerPod}, gpuEvent{at: until, delta: -res.GPUsPerPod})
			}
			if !t.started.IsZero() && !p.Running.IsZero() && !p.Ended.IsZero() && p.Ended.After(t.started) && p.Ended.Before(end) {
				res.WorkersEnded++
			}
		}
		if len(t.breaks) > 0 {
			res.JobsBroken++
		}
		for _, b := range t.breaks {
			res.BrokenGPUSeconds += b.podSeconds * float64(res.GPUsPerPod)
			res.SurvivorGPUSeconds += b.earlierSeconds * float64(res.GPUsPerPod)
			res.ReplacementGPUSeconds += b.newSeconds * float64(res.GPUsPerPod)
			if !b.lastStop.IsZero() {
				teardowns = append(teardowns, b.lastStop.Sub(b.from))
				spans.teardowns = append(spans.teardowns, teardownSpan{job: job, from: b.from, lastStop: b.lastStop, stopped: b.stopped, pods: jp})
			}
			if b.to.IsZero() {
				res.JobsDown++
				continue
			}
			recoveries = append(recoveries, b.to.Sub(b.from))
			if !b.firstNew.IsZero() {
				assemblies = append(assemblies, b.to.Sub(b.firstNew))
			}
		}
	}
	slices.SortFunc(res.JobsStartedAt, time.Time.Compare)
	held := 0
	for _, e := range sortEvents(partial) {
		held += e.delta
		res.PeakPartialGPUs = max(res.PeakPartialGPUs, held)
	}
	res.StartLatency = Summarise(starts)
	if times != nil {
		res.StartAfterFit = new(Summarise(afterFit))
		if a := res.Admission; a != nil {
			a.AdmitAfterFit, a.Ungate, a.StartAfterUngate = new(Summarise(admitAfterFit)), new(Summarise(ungate)), new(Summarise(startAfterUngate))
			a.PodsCreated, a.PodsBound, a.PodsRunning = new(Summarise(podsCreated)), new(Summarise(podsBound)), new(Summarise(podsRunning))
			slices.SortFunc(jobs, func(x, y AdmittedJob) int { return cmp.Compare(x.Order, y.Order) })
			a.Jobs = jobs
		}
	}
	res.Recovery = Summarise(recoveries)
	res.Teardown = Summarise(teardowns)
	res.Assembly = Summarise(assemblies)
	return res, spans
}

// wholePodsSeen is when the watch had seen every pod that ran a job
// whole at started (those running then, named in names) created, and
// then bound, each no earlier than from (the job's last gate removal or
// unsuspending): pods that existed before it, as gated ones do, count
// from it. A pod is seen bound no later than running, so from <=
// created <= bound <= started. A pod that ended as the job started is
// not one of them, even where it was counted toward the start (seen
// Running and ended at once: jobTimeline's order of two events at one
// instant is not fixed).
func wholePodsSeen(pods []PodTimes, started, from time.Time) (created, bound time.Time, names []string) {
	created, bound = from, from
	for _, p := range pods {
		if p.Running.IsZero() || p.Running.After(started) || (!p.Ended.IsZero() && !p.Ended.After(started)) {
			continue
		}
		created, bound = maxTime(created, p.Seen), maxTime(bound, p.Scheduled)
		names = append(names, p.Name)
	}
	return created, maxTime(bound, created), names
}

// gpuEvent is a change in GPUs (or pods) held, at a time.
type gpuEvent struct {
	at    time.Time
	delta int
}

// sortEvents orders events by time, releases before takes at the same
// instant (so a handover is not counted twice).
func sortEvents(events []gpuEvent) []gpuEvent {
	sort.Slice(events, func(i, j int) bool {
		if events[i].at.Equal(events[j].at) {
			return events[i].delta < events[j].delta
		}
		return events[i].at.Before(events[j].at)
	})
	return events
}

// jobBreak is one spell of a started job with fewer than all its workers
// running: from the first one lost to all running again (zero: still
// broken at the end), and the running workers' pod-seconds meanwhile,
// split by splitBreak.
type jobBreak struct {
	from, to   time.Time
	podSeconds float64
	// Of podSeconds, earlierSeconds are the workers of the job's earlier
	// run: those that ran before the break, or stopped before it ended (a
	// pod the old Job made while a restart deleted it); newSeconds the
	// replacements that ran on to its end. lastStop is when the last
	// earlier worker stopped, zero unless some ran into the break and all
	// of them stopped; firstNew when the first replacement ran. stopped
	// are the earlier workers that stopped during the break.
	earlierSeconds, newSeconds float64
	lastStop, firstNew         time.Time
	stopped                    []PodTimes
}

type timeline struct {
	started      time.Time
	breaks       []jobBreak
	runningAtEnd int
}

// jobTimeline walks a job's running pods over time up to end.
func jobTimeline(pods []PodTimes, want int, end time.Time) timeline {
	var events []gpuEvent
	for _, p := range pods {
		if p.Running.IsZero() || p.Running.After(end) {
			continue
		}
		events = append(events, gpuEvent{at: p.Running, delta: 1})
		if !p.Ended.IsZero() && !p.Ended.After(end) {
			events = append(events, gpuEvent{at: p.Ended, delta: -1})
		}
	}
	var t timeline
	running := 0
	var last time.Time
	for _, e := range sortEvents(events) {
		if n := len(t.breaks); n > 0 && t.breaks[n-1].to.IsZero() {
			t.breaks[n-1].podSeconds += e.at.Sub(last).Seconds() * float64(running)
		}
		running += e.delta
		last = e.at
		switch {
		case running >= want && t.started.IsZero():
			t.started = e.at
		case t.started.IsZero():
		case running < want && (len(t.breaks) == 0 || !t.breaks[len(t.breaks)-1].to.IsZero()):
			t.breaks = append(t.breaks, jobBreak{from: e.at})
		case running >= want && len(t.breaks) > 0 && t.breaks[len(t.breaks)-1].to.IsZero():
			t.breaks[len(t.breaks)-1].to = e.at
		}
	}
	if n := len(t.breaks); n > 0 && t.breaks[n-1].to.IsZero() {
		t.breaks[n-1].podSeconds += end.Sub(last).Seconds() * float64(running)
	}
	for i := range t.breaks {
		splitBreak(&t.breaks[i], pods, end)
	}
	t.runningAtEnd = running
	return t
}

// splitBreak divides b's pod-seconds between the job's earlier workers
// and its replacements, and finds when the last earlier one stopped and
// the first replacement ran.
func splitBreak(b *jobBreak, pods []PodTimes, end time.Time) {
	until := b.to
	if until.IsZero() {
		until = end
	}
	earlierRanOn := false
	for _, p := range pods {
		if p.Running.IsZero() || p.Running.After(until) { // the last replacement runs at until
			continue
		}
		stop := until
		if !p.Ended.IsZero() && p.Ended.Before(until) {
			stop = p.Ended
		}
		if !stop.After(b.from) { // stopped before the break, or is the lost worker
			continue
		}
		seconds := stop.Sub(maxTime(p.Running, b.from)).Seconds()
		switch {
		case stop.Before(until): // stopped during the break
			b.earlierSeconds += seconds
			b.lastStop = maxTime(b.lastStop, stop)
			b.stopped = append(b.stopped, p)
		case p.Running.Before(b.from): // ran through it
			b.earlierSeconds += seconds
			earlierRanOn = true
		default:
			b.newSeconds += seconds
			if b.firstNew.IsZero() || p.Running.Before(b.firstNew) {
				b.firstNew = p.Running
			}
		}
	}
	if earlierRanOn {
		b.lastStop = time.Time{}
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
