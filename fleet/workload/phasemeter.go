package workload

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// What a run's phases cost the control plane, read at each phase
// boundary from cumulative sources (histograms' counts and sums, CPU
// time), so exact between the readings (but for a thread's wait for a
// core, lost with the thread when it ends between two); an observation
// counts in the phase it ends in.

// ControllerManagerWaits is where kube-controller-manager's time went
// during one phase of a run, from its own /metrics:
//   - RateLimiter, by verb: its requests' waits on their client's rate
//     limiter before they were sent (rest_client_rate_limiter_duration_seconds;
//     each controller has its own client, held to --kube-api-qps and
//     --kube-api-burst), and how many requests;
//   - Queued, by work queue (a controller has one or more): how long
//     items waited for a worker (workqueue_queue_duration_seconds);
//   - Work, by work queue: how long the workers took on them
//     (workqueue_work_duration_seconds), their requests' client waits
//     included.
//
// Entries with no observation in the phase are left out.
type ControllerManagerWaits struct {
	RateLimiter map[string]metrics.Tally `json:"rateLimiter"`
	Queued      map[string]metrics.Tally `json:"queued"`
	Work        map[string]metrics.Tally `json:"work"`
}

// APIServerTimes is how long kube-apiserver took on the requests that
// ended during one phase of a run, from its own /metrics:
//   - Requests, by "VERB resource [subresource]": how many, and their
//     seconds from the apiserver receiving each to its response
//     (apiserver_request_duration_seconds, every client's; APF's queuing
//     included). Watches and other long-running requests are left out:
//     their duration is a connection's life, not a request's latency;
//   - APFWait, by priority level: how long API Priority and Fairness held
//     requests in its queues (apiserver_flowcontrol_request_wait_duration_seconds;
//     every request's, watches and rejected ones included);
//   - Etcd, by "operation resource" ("update pods"): the apiserver's
//     calls to etcd, how many and their seconds, every request's
//     (etcd_request_duration_seconds). One request can make several: a
//     DELETE of a pod reads it, then updates it, and a write that
//     conflicts is retried with the value its failed transaction
//     returned; EtcdByOperation sums them by operation over resources
//     ("update"), every operation the apiserver times there, zero or
//     not: the apiserver's side of etcd's EtcdTimes;
//   - GoSched: its goroutines' waits from ready to running, by bucket
//     (Go's go_sched_latencies_seconds; the runtime times one wait in
//     eight of each goroutine, so a sample): waiting for one of the
//     process's GOMAXPROCS slots, and for the kernel to run the thread
//     that holds it or is woken for it. A goroutine running on a thread
//     the kernel has set aside waits uncounted here (the process's
//     run-queue wait holds that);
//   - GCPauses: its garbage collector's stop-the-world pauses, how many
//     and at least how long (go_sched_pauses_total_gc_seconds, summed as
//     Waits' seconds are), from deciding to stop the world to starting
//     it again;
//   - TerminatedWatchers, by resource: the watches it closed because
//     their client fell behind taking its events
//     (apiserver_terminated_watchers_total).
//
// Entries with no observation in the phase are left out; GoSched and
// GCPauses are there, zero or not, whenever the apiserver exposes them.
type APIServerTimes struct {
	Requests        map[string]metrics.Tally `json:"requests"`
	APFWait         map[string]metrics.Tally `json:"apfWait"`
	Etcd            map[string]metrics.Tally `json:"etcd,omitempty"`
	EtcdByOperation map[string]metrics.Tally `json:"etcdByOperation,omitempty"`
	GoSched         *Waits                   `json:"goSchedLatency,omitempty"`
	GCPauses        *metrics.Tally           `json:"gcPauses,omitempty"`
	// TerminatedWatchers are the watches the apiserver closed as their
	// clients fell behind, by resource ("pods", "leases
	// coordination.k8s.io": a findings path reaches only the core
	// group's, whose keys have no dot); empty when it closed none.
	TerminatedWatchers map[string]float64 `json:"terminatedWatchers"`
}

// etcdOperations are the operations k8s.io/apiserver's etcd3 store times
// (metrics.RecordEtcdRequest): create, update and delete are etcd Txns,
// the others Ranges.
var etcdOperations = []string{"create", "update", "delete", "get", "list", "listWithCount", "listOnlyKeys"}

// byOperation sums the tallies of "operation resource" keys by operation,
// with every one of etcdOperations there, so that a sum over them never
// lacks a term.
func byOperation(m map[string]metrics.Tally) map[string]metrics.Tally {
	out := map[string]metrics.Tally{}
	for _, op := range etcdOperations {
		out[op] = metrics.Tally{}
	}
	for key, t := range m {
		op, _, _ := strings.Cut(key, " ")
		sum := out[op]
		out[op] = metrics.Tally{Count: sum.Count + t.Count, Sum: sum.Sum + t.Sum}
	}
	return out
}

// Waits are a phase's observations of a histogram of waits: how many,
// their seconds as the histogram sums them, and how many fell in each
// bucket, from the shortest. Go's runtime histograms, as client_golang
// exposes them, sum each wait at its bucket's lower bound, with buckets
// about 11 times apart: Seconds is then a lower bound, and the buckets
// say more.
type Waits struct {
	Count   float64  `json:"count"`
	Seconds float64  `json:"seconds"`
	Buckets []Bucket `json:"buckets"`
}

// Bucket is how many waits of a phase were at least AtLeast seconds and
// shorter than the next bucket's.
type Bucket struct {
	AtLeast float64 `json:"atLeastSeconds"`
	Count   float64 `json:"count"`
}

// EtcdTimes is how long etcd took on what it served during one phase of
// a run, from its own /metrics:
//   - RPCs, by gRPC method (Txn, Range, LeaseGrant…): how many unary
//     calls ended, and their seconds from etcd's gRPC server calling the
//     method's handler to its return (grpc_server_handling_seconds, with
//     etcd's --metrics=extensive): a write's wait for its raft proposal
//     to be committed and applied included, a read's for its
//     linearizable read index; not the call's way to the handler (its
//     request read and decoded), nor its answer's way back (encoded and
//     written). Streams (Watch, LeaseKeepAlive) are left out: their
//     time is a stream's life. The apiserver is the only client of
//     etcd's KV API: its create, update and delete calls are Txns, its
//     get and list calls Ranges;
//   - Apply, by operation: applying committed entries to etcd's store,
//     how many and their seconds (etcd_server_apply_duration_seconds);
//   - WALFsync and BackendCommit: etcd's syncs of its write-ahead log to
//     disk (etcd_disk_wal_fsync_duration_seconds) and its store's
//     commits (etcd_disk_backend_commit_duration_seconds).
//
// Entries with no observation in the phase are left out; RPCs is nil
// (null) where etcd does not time its calls (it runs without
// --metrics=extensive); WALFsync and BackendCommit are there, zero or
// not, whenever etcd exposes them.
type EtcdTimes struct {
	RPCs          map[string]metrics.Tally `json:"rpcs"`
	Apply         map[string]metrics.Tally `json:"apply"`
	WALFsync      *metrics.Tally           `json:"walFsync,omitempty"`
	BackendCommit *metrics.Tally           `json:"backendCommit,omitempty"`
}

// SchedulerAttempts is what kube-scheduler tried during one phase of a
// run, from its own /metrics:
//   - Attempts, by result (scheduled, unschedulable, error): how many
//     scheduling attempts of a pod and their seconds, the scheduling
//     algorithm and binding (scheduler_scheduling_attempt_duration_seconds;
//     a gang's pod from its own placing's start, taken as its submission
//     less its placing's time, to its own bind, its wait at Permit
//     included);
//   - PodGroupAttempts, by result: its cycles of a whole pod group (a
//     gang) and their seconds, from the cycle's start to its pods' binding
//     cycles started, not ended
//     (scheduler_podgroup_scheduling_attempt_duration_seconds);
//     PodGroupAlgorithm, those cycles' snapshot update and placing of the
//     group's pods (scheduler_podgroup_scheduling_algorithm_duration_seconds).
//     Both only with the GenericWorkload gate on;
//   - RateLimiter, by verb: its requests' waits on their clients' rate
//     limiters before they were sent (rest_client_rate_limiter_duration_seconds,
//     the whole process's: the client of its bindings, POSTs, and of its
//     pods' status PATCHes, and its events' client, each held to
//     clientConnection's qps and burst).
//
// Entries with no observation in the phase are left out;
// PodGroupAlgorithm is there, zero or not, whenever the scheduler
// exposes it.
type SchedulerAttempts struct {
	Attempts          map[string]metrics.Tally `json:"attempts"`
	PodGroupAttempts  map[string]metrics.Tally `json:"podGroupAttempts,omitempty"`
	PodGroupAlgorithm *metrics.Tally           `json:"podGroupAlgorithm,omitempty"`
	RateLimiter       map[string]metrics.Tally `json:"rateLimiter,omitempty"`
}

// The warnings of a run that records no ControllerManagerWaits,
// APIServerTimes, SchedulerAttempts, CPU or waits for a core by phase,
// or stops recording them.
const (
	ControllerManagerUnrecorded = "the controller-manager's client and work-queue waits are not recorded"
	APIServerUnrecorded         = "the apiserver's request times are not recorded"
	EtcdUnrecorded              = "etcd's times are not recorded"
	EtcdTraceUnavailable        = "only GhostFleet's own fleets serve etcd's trace (an attached etcd: start it with --enable-pprof and trace it yourself)"
	EtcdCallsUntimed            = "etcd's calls are not timed: it runs without --metrics=extensive (a fleet made before GhostFleet set it: `ghostfleet clean`, then `ghostfleet up`; an attached etcd: start it with the flag)"
	SchedulerUnrecorded         = "the scheduler's attempts are not recorded"
	CPUUnrecorded               = "the control plane's CPU by phase is not recorded"
	HostUnrecorded              = "the machine's CPU time by phase is not recorded"
	SpeedUnrecorded             = "the machine's speed by phase is not recorded"
	RunQueueUnrecorded          = "the control plane's waits for a core are not recorded"
)

// The histograms the meters read: the controller-manager's client waits
// by verb and its work queues' by queue name; the apiserver's requests by
// verb, resource and subresource, APF's queuing by priority level and its
// calls to etcd by operation and resource; the scheduler's attempts by
// result; the apiserver's Go runtime's scheduling latencies and garbage
// collection pauses.
const (
	rateLimiterHistogram    = "rest_client_rate_limiter_duration_seconds"
	queueHistogram          = "workqueue_queue_duration_seconds"
	workHistogram           = "workqueue_work_duration_seconds"
	requestHistogram        = "apiserver_request_duration_seconds"
	apfWaitHistogram        = "apiserver_flowcontrol_request_wait_duration_seconds"
	etcdHistogram           = "etcd_request_duration_seconds"
	attemptHistogram        = "scheduler_scheduling_attempt_duration_seconds"
	groupAttemptHistogram   = "scheduler_podgroup_scheduling_attempt_duration_seconds"
	groupAlgorithmHistogram = "scheduler_podgroup_scheduling_algorithm_duration_seconds"
	goSchedHistogram        = "go_sched_latencies_seconds"
	gcPauseHistogram        = "go_sched_pauses_total_gc_seconds"
	rpcHistogram            = "grpc_server_handling_seconds"
	applyHistogram          = "etcd_server_apply_duration_seconds"
	walFsyncHistogram       = "etcd_disk_wal_fsync_duration_seconds"
	commitHistogram         = "etcd_disk_backend_commit_duration_seconds"
	goSchedBuckets          = goSchedHistogram + bucketsSuffix
	bucketsSuffix           = " buckets" // a histogram's cumulative counts by upper bound, every bound kept
	cpuSource               = "cpu"
	runQueueSource          = "runQueue"
	hostSource              = "host"
	speedSource             = "speed"
)

// terminatedWatchersCounter counts the watches the apiserver closed
// because their client did not take its events fast enough (its watch
// cache's dispatch found the client's buffer full), by resource: the
// client watches again, from the last event it had.
const terminatedWatchersCounter = "apiserver_terminated_watchers_total"

// longRunningVerbs are the apiserver's verbs whose requests last as long
// as a connection (kube-apiserver's own SLIs leave them out too). Other
// long-running requests (a pod's log followed, a proxy) are GETs and
// stay in; a training run makes none.
var longRunningVerbs = []string{"WATCH", "WATCHLIST", "CONNECT"}

// reading is one read of a source: histogram (or counter, its total a
// tally's count; or cpuSource, runQueueSource, hostSource, speedSource)
// → key → tally; a histogram's
// buckets are the entry named after it with bucketsSuffix, upper bound →
// cumulative count.
type reading map[string]map[string]metrics.Tally

// of is one histogram's tallies, empty (not nil) when it was not exposed.
func (r reading) of(name string) map[string]metrics.Tally {
	if by := r[name]; by != nil {
		return by
	}
	return map[string]metrics.Tally{}
}

// whole is the tally of a histogram read without labels, nil when it was
// not exposed.
func (r reading) whole(name string) *metrics.Tally {
	by, ok := r[name]
	if !ok {
		return nil
	}
	t := by[""]
	return &t
}

// waits is a histogram read without labels, with its buckets (read by
// metrics.Families.HistogramBuckets into bucketsName), nil when it was
// not exposed.
func (r reading) waits(name, bucketsName string) *Waits {
	t := r.whole(name)
	if t == nil {
		return nil
	}
	type bound struct {
		le    float64
		count float64 // at most le, cumulative
	}
	bounds := []bound{}
	for le, c := range r.of(bucketsName) {
		if b, err := strconv.ParseFloat(le, 64); err == nil {
			bounds = append(bounds, bound{b, c.Count})
		}
	}
	slices.SortFunc(bounds, func(a, b bound) int { return cmp.Compare(a.le, b.le) })
	w := &Waits{Count: t.Count, Seconds: t.Sum, Buckets: make([]Bucket, 0, len(bounds)+1)}
	from, below := 0.0, 0.0
	for _, b := range bounds {
		w.Buckets = append(w.Buckets, Bucket{AtLeast: from, Count: b.count - below})
		from, below = b.le, b.count
	}
	w.Buckets = append(w.Buckets, Bucket{AtLeast: from, Count: t.Count - below})
	return w
}

// seconds is a /proc source's seconds by process (or, for hostSource, by
// the machine's CPU state).
func (r reading) seconds(source string) map[string]float64 {
	out := map[string]float64{}
	for c, t := range r[source] {
		out[c] = math.Round(t.Sum*1e6) / 1e6 // the float's noise off
	}
	return out
}

// histogramReader reads the given histograms from e's /metrics.
func histogramReader(e metrics.Endpoint, byLabels map[string][]string) func(context.Context) (reading, error) {
	return func(ctx context.Context) (reading, error) {
		body, err := metrics.Scrape(ctx, e)
		if err != nil {
			return nil, err
		}
		return metrics.HistogramTotals(body, byLabels)
	}
}

// apiserverReader reads the apiserver's request, APF and etcd
// histograms, leaving out the long-running requests, its Go runtime's,
// the scheduling latencies with their buckets, and its count of the
// watches it closed for falling behind.
func apiserverReader(e metrics.Endpoint) func(context.Context) (reading, error) {
	return func(ctx context.Context) (reading, error) {
		body, err := metrics.Scrape(ctx, e)
		if err != nil {
			return nil, err
		}
		f, err := metrics.ParseFamilies(body)
		if err != nil {
			return nil, err
		}
		r, err := f.HistogramTotals(map[string][]string{requestHistogram: {"verb", "resource", "subresource"}, apfWaitHistogram: {"priority_level"}, etcdHistogram: {"operation", "resource"}, goSchedHistogram: nil, gcPauseHistogram: nil})
		if err != nil {
			return nil, err
		}
		if w, err := f.CounterTotals(terminatedWatchersCounter, []string{"resource", "group"}); err != nil {
			return nil, err
		} else if w != nil {
			r[terminatedWatchersCounter] = w
		}
		buckets, err := f.HistogramBuckets(goSchedHistogram)
		if err != nil {
			return nil, err
		}
		if buckets != nil {
			r[goSchedBuckets] = buckets
		}
		for key := range r[requestHistogram] {
			if verb, _, _ := strings.Cut(key, " "); slices.Contains(longRunningVerbs, verb) {
				delete(r[requestHistogram], key)
			}
		}
		return r, nil
	}
}

// etcdReader reads etcd's unary gRPC calls by method, its applies by
// operation, and its disk's syncs and commits.
func etcdReader(e metrics.Endpoint) func(context.Context) (reading, error) {
	read := histogramReader(e, map[string][]string{rpcHistogram: {"grpc_type", "grpc_method"}, applyHistogram: {"op"}, walFsyncHistogram: nil, commitHistogram: nil})
	return func(ctx context.Context) (reading, error) {
		r, err := read(ctx)
		if err != nil {
			return nil, err
		}
		if by, ok := r[rpcHistogram]; ok {
			unary := map[string]metrics.Tally{}
			for key, t := range by {
				if method, ok := strings.CutPrefix(key, "unary "); ok {
					unary[method] = t
				}
			}
			r[rpcHistogram] = unary
		}
		return r, nil
	}
}

// procReader reads times from /proc with read (each process's of the
// cluster and GhostFleet's own: fleet.ComponentCPU, runQueueTotals; the
// machine's by CPU state: fleet.HostCPUTotals), as source's tallies'
// sums.
func procReader(source string, read func() (map[string]time.Duration, error)) func(context.Context) (reading, error) {
	return func(context.Context) (reading, error) {
		times, err := read()
		if err != nil {
			return nil, err
		}
		by := map[string]metrics.Tally{}
		for c, t := range times {
			by[c] = metrics.Tally{Sum: t.Seconds()}
		}
		return reading{source: by}, nil
	}
}

// runQueueTotals reads each process's wait for a core by thread with
// read (fleet.ThreadRunQueueWaits) as a total that never goes down: per
// thread, what it added since the last reading, all of it for a thread
// not seen before. A thread that ends between two readings loses only
// what it added after the first. A process that stopped or restarted
// since the last reading is an error, as it is for the CPU.
func runQueueTotals(read func(string) (map[string]fleet.ProcessWaits, error)) func(string) (map[string]time.Duration, error) {
	var last map[string]fleet.ProcessWaits
	totals := map[string]time.Duration{}
	return func(cluster string) (map[string]time.Duration, error) {
		now, err := read(cluster)
		if err != nil {
			return nil, err
		}
		for c, before := range last {
			if p, ok := now[c]; !ok || p.PID != before.PID {
				return nil, fmt.Errorf("%s (pid %d) stopped or restarted since the last reading", c, before.PID)
			}
		}
		for c, p := range now {
			for tid, wait := range p.Threads {
				if before, ok := last[c].Threads[tid]; ok && wait >= before {
					wait -= before
				}
				totals[c] += wait
			}
		}
		last = now
		return maps.Clone(totals), nil
	}
}

// between is what a source added from one reading to a later one. A
// total that went down, or is gone, says the two readings are not of one
// process (it restarted or was down, or another replica answered): an
// error, not a difference. What did not move is left out, but for a
// histogram's buckets, whose bounds are all kept.
func between(before, after reading) (reading, error) {
	var reset error
	for name, by := range before {
		for key := range by {
			if _, ok := after[name][key]; !ok {
				reset = fmt.Errorf("%s{%s} is gone from the later reading: the process restarted or stopped, or another replica answered", name, key)
			}
		}
	}
	out := reading{}
	for name, by := range after {
		out[name] = map[string]metrics.Tally{}
		for key, t := range by {
			d := t.Minus(before[name][key])
			if d.Count < 0 || d.Sum < 0 {
				reset = fmt.Errorf("%s{%s} went down between two readings: the process restarted or another replica answered", name, key)
			}
			if d != (metrics.Tally{}) || strings.HasSuffix(name, bucketsSuffix) {
				out[name][key] = d
			}
		}
	}
	return out, reset
}

// phaseMeter reads one source at each phase boundary of a run. A reading
// that fails, or one not of the same process as the last, is reported
// once and ends the metering: the phases read before it keep their
// figures, the rest get none rather than a share.
type phaseMeter struct {
	unrecorded string // the warning when it stops
	read       func(context.Context) (reading, error)
	report     progress.Func
	last       reading
	phases     map[string]reading
}

// startPhaseMeter takes the first reading; with no source (read nil) it
// meters nothing.
func startPhaseMeter(ctx context.Context, unrecorded string, read func(context.Context) (reading, error), report progress.Func) *phaseMeter {
	m := &phaseMeter{unrecorded: unrecorded, read: read, report: report}
	if read != nil {
		m.last = m.take(ctx)
	}
	return m
}

// readTimeout bounds one reading: an interrupted run's last phase is
// still read, but not waited on for ever.
const readTimeout = 10 * time.Second

// take reads the source once.
func (m *phaseMeter) take(ctx context.Context) reading {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	r, err := m.read(ctx)
	if err != nil {
		m.stop(err)
		return nil
	}
	return r
}

// stop ends the metering, saying why.
func (m *phaseMeter) stop(err error) {
	m.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("%s from here on: %v", m.unrecorded, err)})
	m.read = nil
}

// phase records what the source added during the phase that just ended.
func (m *phaseMeter) phase(ctx context.Context, name string) {
	if m.read == nil {
		return
	}
	r := m.take(ctx)
	if r == nil {
		return
	}
	d, err := between(m.last, r)
	if err != nil {
		m.stop(err)
		return
	}
	if m.phases == nil {
		m.phases = map[string]reading{}
	}
	m.phases[name] = d
	m.last = r
}

// byPhase turns each phase's reading into f's figures; nil when no phase
// was read.
func byPhase[T any](m *phaseMeter, f func(reading) T) map[string]T {
	if m.phases == nil {
		return nil
	}
	out := map[string]T{}
	for name, r := range m.phases {
		out[name] = f(r)
	}
	return out
}

// controlPlaneMeters meter a run's phases: the controller-manager's waits,
// the apiserver's request times, etcd's, the scheduler's attempts, each
// process's CPU and its wait for a core, the machine's CPU time and its
// speed (sampled all along by sampler), each as far as its source can be
// read.
type controlPlaneMeters struct {
	controllerManager, apiserver, etcd, scheduler, cpu, runQueue, host, speed *phaseMeter
	sampler                                                                   *fleet.SpeedSampler
}

// speedInterval is how often the meters' sampler times the speed
// probe's works: about 1–1.5 % of a core.
const speedInterval = 5 * time.Second

// SpeedSamples are how fast the machine ran during one phase of a run,
// from fleet.SpeedSampler's trials in it, by work ("cache", "memory",
// "dram": the speed probe's, record.Probe). The same machine gives each
// work the same time; a higher one is a slower core (every work) or less
// of the cache the cores share (the memory work more) or of memory (the
// DRAM work more).
type SpeedSamples map[string]WorkSamples

// WorkSamples are one work's trials in a phase and their mean CPU
// milliseconds; and of them, those whose thread kept its core throughout
// (one that left it may come back to caches another thread filled, as a
// busy fleet's threads do) and their mean, absent when there was none.
type WorkSamples struct {
	Trials      int     `json:"trials"`
	CPUMs       float64 `json:"cpuMs"`
	OnCore      int     `json:"onCore"`
	OnCoreCPUMs float64 `json:"onCoreCPUMs,omitempty"`
}

// onCoreSuffix marks a work's trials that kept their core in a speed
// reading.
const onCoreSuffix = " on core"

// speedReader reads the sampler's totals as trials (a tally's count) and
// CPU milliseconds (its sum), by work, all and those that kept their
// core.
func speedReader(sampler *fleet.SpeedSampler) func(context.Context) (reading, error) {
	return func(context.Context) (reading, error) {
		totals, err := sampler.Totals()
		if err != nil {
			return nil, err
		}
		by := map[string]metrics.Tally{}
		for work, t := range totals {
			by[work] = metrics.Tally{Count: float64(t.Trials), Sum: t.CPU.Seconds() * 1000}
			by[work+onCoreSuffix] = metrics.Tally{Count: float64(t.OnCore), Sum: t.OnCoreCPU.Seconds() * 1000}
		}
		return reading{speedSource: by}, nil
	}
}

// speedSamples are a phase's trials by work, leaving out a work with
// none in it.
func speedSamples(r reading) SpeedSamples {
	by := r.of(speedSource)
	out := SpeedSamples{}
	for _, work := range fleet.WorkNames {
		all, kept := by[work], by[work+onCoreSuffix]
		if all.Count == 0 {
			continue
		}
		w := WorkSamples{Trials: int(all.Count), CPUMs: meanMs(all), OnCore: int(kept.Count)}
		if kept.Count > 0 {
			w.OnCoreCPUMs = meanMs(kept)
		}
		out[work] = w
	}
	return out
}

// meanMs is a tally's mean, to the microsecond.
func meanMs(t metrics.Tally) float64 { return math.Round(t.Sum/t.Count*1000) / 1000 }

// MeterSources are where a run reads its phases' costs; a source left
// unset is not metered.
type MeterSources struct {
	// ControllerManager, APIServer, Etcd and Scheduler are those
	// components' /metrics.
	ControllerManager *metrics.Endpoint
	APIServer         *metrics.Endpoint
	Etcd              *metrics.Endpoint
	Scheduler         *metrics.Endpoint
	// Cluster is GhostFleet's own fleet, whose processes' CPU and waits
	// for a core are read from /proc ("" on an attached cluster).
	Cluster string
	// EtcdTrace, when set, opens a Go execution trace of etcd over d
	// (its /debug/pprof/trace: GhostFleet's own fleets serve it).
	EtcdTrace func(ctx context.Context, d time.Duration) (io.ReadCloser, error)
	// AuditLog is kube-apiserver's audit log, read for when the
	// apiserver received and answered requests ("" when the fleet keeps
	// none).
	AuditLog string
	// SchedulerClient is the limit of kube-scheduler's client, as the
	// fleet's profile sets it, to replay from the audit log (zero when
	// unknown).
	SchedulerClient TokenBucket
}

func startControlPlaneMeters(ctx context.Context, s MeterSources, report progress.Func) controlPlaneMeters {
	var cm, api, etcd, sched, cpu, runQueue, host, speed func(context.Context) (reading, error)
	var sampler *fleet.SpeedSampler
	if s.ControllerManager != nil {
		cm = histogramReader(*s.ControllerManager, map[string][]string{rateLimiterHistogram: {"verb"}, queueHistogram: {"name"}, workHistogram: {"name"}})
	}
	if s.APIServer != nil {
		api = apiserverReader(*s.APIServer)
	}
	if s.Etcd != nil {
		etcd = etcdReader(*s.Etcd)
	}
	if s.Scheduler != nil {
		sched = histogramReader(*s.Scheduler, map[string][]string{attemptHistogram: {"result"}, groupAttemptHistogram: {"result"}, groupAlgorithmHistogram: nil, rateLimiterHistogram: {"verb"}})
	}
	if s.Cluster != "" {
		waits := runQueueTotals(fleet.ThreadRunQueueWaits)
		cpu = procReader(cpuSource, func() (map[string]time.Duration, error) { return fleet.ComponentCPU(s.Cluster) })
		runQueue = procReader(runQueueSource, func() (map[string]time.Duration, error) { return waits(s.Cluster) })
		host = procReader(hostSource, fleet.HostCPUTotals())
		sampler = fleet.StartSpeedSampler(speedInterval)
		speed = speedReader(sampler)
	}
	return controlPlaneMeters{
		controllerManager: startPhaseMeter(ctx, ControllerManagerUnrecorded, cm, report),
		apiserver:         startPhaseMeter(ctx, APIServerUnrecorded, api, report),
		etcd:              startEtcdMeter(ctx, etcd, report),
		scheduler:         startPhaseMeter(ctx, SchedulerUnrecorded, sched, report),
		cpu:               startPhaseMeter(ctx, CPUUnrecorded, cpu, report),
		runQueue:          startPhaseMeter(ctx, RunQueueUnrecorded, runQueue, report),
		host:              startPhaseMeter(ctx, HostUnrecorded, host, report),
		speed:             startPhaseMeter(ctx, SpeedUnrecorded, speed, report),
		sampler:           sampler,
	}
}

// startEtcdMeter meters etcd, and says so once if etcd does not time its
// calls, whose absence would otherwise look like none.
func startEtcdMeter(ctx context.Context, read func(context.Context) (reading, error), report progress.Func) *phaseMeter {
	m := startPhaseMeter(ctx, EtcdUnrecorded, read, report)
	if m.last != nil && m.last[rpcHistogram] == nil {
		report(progress.Event{Kind: progress.Warn, Message: EtcdCallsUntimed})
	}
	return m
}

// phase reads every source at the end of the phase name.
func (m controlPlaneMeters) phase(ctx context.Context, name string) {
	m.controllerManager.phase(ctx, name)
	m.apiserver.phase(ctx, name)
	m.etcd.phase(ctx, name)
	m.scheduler.phase(ctx, name)
	m.cpu.phase(ctx, name)
	m.runQueue.phase(ctx, name)
	m.host.phase(ctx, name)
	m.speed.phase(ctx, name)
}

// stop ends the speed sampling, once the last phase is read.
func (m controlPlaneMeters) stop() {
	if m.sampler != nil {
		m.sampler.Stop()
	}
}

// record puts the phases' figures into res.
func (m controlPlaneMeters) record(res *TrainResult) {
	res.ControllerManager = byPhase(m.controllerManager, func(r reading) ControllerManagerWaits {
		return ControllerManagerWaits{RateLimiter: r.of(rateLimiterHistogram), Queued: r.of(queueHistogram), Work: r.of(workHistogram)}
	})
	res.APIServer = byPhase(m.apiserver, func(r reading) APIServerTimes {
		etcd := r.of(etcdHistogram)
		watchers := map[string]float64{}
		for resource, t := range r.of(terminatedWatchersCounter) {
			watchers[resource] = t.Count
		}
		return APIServerTimes{Requests: r.of(requestHistogram), APFWait: r.of(apfWaitHistogram), Etcd: etcd, EtcdByOperation: byOperation(etcd), GoSched: r.waits(goSchedHistogram, goSchedBuckets), GCPauses: r.whole(gcPauseHistogram), TerminatedWatchers: watchers}
	})
	res.Etcd = byPhase(m.etcd, func(r reading) EtcdTimes {
		return EtcdTimes{RPCs: r[rpcHistogram], Apply: r.of(applyHistogram), WALFsync: r.whole(walFsyncHistogram), BackendCommit: r.whole(commitHistogram)}
	})
	res.Scheduler = byPhase(m.scheduler, func(r reading) SchedulerAttempts {
		return SchedulerAttempts{Attempts: r.of(attemptHistogram), PodGroupAttempts: r.of(groupAttemptHistogram), PodGroupAlgorithm: r.whole(groupAlgorithmHistogram), RateLimiter: r.of(rateLimiterHistogram)}
	})
	res.CPU = byPhase(m.cpu, func(r reading) map[string]float64 { return r.seconds(cpuSource) })
	res.RunQueue = byPhase(m.runQueue, func(r reading) map[string]float64 { return r.seconds(runQueueSource) })
	res.HostCPU = byPhase(m.host, func(r reading) map[string]float64 { return r.seconds(hostSource) })
	res.HostSpeed = byPhase(m.speed, speedSamples)
	maps.DeleteFunc(res.HostSpeed, func(_ string, s SpeedSamples) bool { return len(s) == 0 }) // a phase shorter than the interval: no figure, not 0 ms
}
