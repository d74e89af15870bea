package workload

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// Load modes: how the pods come into being.
const (
	ModePods       = "pods"       // N bare pods, created by GhostFleet in parallel
	ModeDeployment = "deployment" // one Deployment of N replicas: the controller-manager creates them
	ModeJob        = "job"        // one Indexed Job of parallelism N
)

// LoadModes lists the modes.
var LoadModes = []string{ModePods, ModeDeployment, ModeJob}

// LoadOptions configures a load run.
type LoadOptions struct {
	RunID     string        `json:"runId"`
	Namespace string        `json:"namespace"`
	Pods      int           `json:"pods"`
	GPUs      int           `json:"gpusPerPod"`
	Mode      string        `json:"mode"`
	Timeout   time.Duration `json:"timeout"` // for all pods to run
	Workers   int           `json:"workers"` // parallel creates in a pods-mode burst
	// Rate, when more than 0, paces creation at Rate pods/s, open loop
	// (a create is sent when it is due, whatever the ones before met):
	// a steady-state run, the only kind the pod startup SLO judges.
	// 0 sends every pod at once from Workers in parallel: a burst.
	Rate float64 `json:"rate,omitempty"`
	// Limits are the running profile's client QPS settings, for the
	// verdict's wording; zero when unknown (an attached cluster).
	Limits ClientLimits `json:"limits"`
	// Claim is how pods ask for their GPUs (ParseClaim: none, count,
	// product=NAME, match=ATTR, nvlink); empty: as the fleet offers them,
	// nvidia.com/gpu or, on a fleet of DRA nodes, count.
	Claim string `json:"claim,omitempty"`
	// Preflight gives every pod a pre-flight init container (see
	// WithPreflight), for `fault pod-exit --init`.
	Preflight bool `json:"preflight,omitempty"`
	// PrometheusURL, when set, is asked for the scheduler's pending pods
	// and attempt rate for the verdict.
	PrometheusURL string        `json:"prometheusUrl,omitempty"`
	Report        progress.Func `json:"-"`
}

// Check checks what needs no cluster, each error naming the value and
// what is allowed; it fills in defaults (workers, progress).
func (o *LoadOptions) Check() error {
	if o.Pods < 1 || o.Pods > 100000 {
		return fmt.Errorf("pod count %d is out of range: allowed are 1-100000", o.Pods)
	}
	if o.GPUs < 1 {
		return fmt.Errorf("GPUs per pod %d is out of range: each pod must request at least 1 nvidia.com/gpu", o.GPUs)
	}
	if !slices.Contains(LoadModes, o.Mode) {
		return fmt.Errorf("mode %q is not supported: allowed are %s", o.Mode, strings.Join(LoadModes, ", "))
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("timeout %s is out of range: it must be more than 0", o.Timeout)
	}
	if o.Workers <= 0 {
		o.Workers = 100
	}
	if o.Rate < 0 || o.Rate > 5000 {
		return fmt.Errorf("rate %g is out of range: allowed are 0 (a burst) or more than 0 and at most 5000 pods/s", o.Rate)
	}
	if _, err := ParseClaim(o.Claim); err != nil {
		return err
	}
	if o.Rate > 0 && o.Mode != ModePods {
		return fmt.Errorf("--rate %g needs --mode pods: in %s mode the controller-manager creates the pods at its own pace", o.Rate, o.Mode)
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// Validate checks the options (Check) and then against the fleet's
// capacity; warnings are returned for the caller to show.
func (o *LoadOptions) Validate(c Capacity, allowUnschedulable bool) (warnings []string, err error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	free, maxNode, err := fleetClaim(&o.Claim, o.GPUs, c, allowUnschedulable)
	if err != nil {
		return nil, err
	}
	if int64(o.GPUs) > maxNode && !allowUnschedulable {
		return nil, fmt.Errorf("GPUs per pod %d is more than any node has (largest: %d): no pod could ever be scheduled; pass --allow-unschedulable to measure that anyway", o.GPUs, maxNode)
	}
	if need := int64(o.Pods) * int64(o.GPUs); need > free {
		warnings = append(warnings, fmt.Sprintf("%d pods × %d GPUs need %d GPUs but the fleet has %d free on %d nodes: about %d pods will stay unschedulable",
			o.Pods, o.GPUs, need, free, c.FakeNodes, (need-max(free, 0)+int64(o.GPUs)-1)/int64(o.GPUs)))
	}
	return warnings, nil
}

// ClientLimits are the client QPS settings of the components that feed
// and drain a load: the scheduler's (binds) and the controller-manager's
// (pods of Deployments and Jobs). Zero means unknown.
type ClientLimits struct {
	Profile              string `json:"profile,omitempty"`
	SchedulerQPS         int    `json:"schedulerQps,omitempty"`
	ControllerManagerQPS int    `json:"controllerManagerQps,omitempty"`
}

// Load patterns: a steady run is paced below capacity and is what the
// pod startup SLO is defined on; a burst asks how fast the fleet fills; a
// run paced faster than the scheduler binds queues like a burst and is
// judged like one.
const (
	PatternSteady        = "steady"
	PatternBurst         = "burst"
	PatternAboveCapacity = "paced above capacity"
)

// LoadResult is what a load run measured. Durations are seconds from the
// first create request.
type LoadResult struct {
	Pods       int    `json:"pods"`
	GPUsPerPod int    `json:"gpusPerPod"`
	Mode       string `json:"mode"`
	// Claim is how the pods asked for GPUs (none: nvidia.com/gpu).
	Claim string `json:"claim,omitempty"`
	// Pattern is steady (paced at TargetRate), paced above capacity (the
	// pods queued for the scheduler) or burst.
	Pattern         string  `json:"pattern"`
	TargetRate      float64 `json:"targetRate,omitempty"`
	CreateSeconds   float64 `json:"createSeconds"`   // until every pod existed
	ScheduleSeconds float64 `json:"scheduleSeconds"` // until every pod was bound
	DurationSeconds float64 `json:"durationSeconds"` // until every pod ran
	PodsPerSecond   float64 `json:"podsPerSecond"`   // pods running / durationSeconds
	CreateRate      float64 `json:"createRate"`      // pods/s while creating
	ScheduleRate    float64 `json:"scheduleRate"`    // pods/s bound, first create to last bind
	Scheduled       int     `json:"scheduled"`
	Running         int     `json:"running"`
	Unschedulable   int     `json:"unschedulable"`
	Failed          int     `json:"failed"`
	CreateErrors    int     `json:"createErrors"`
	// UnschedulableReason is the scheduler's message on an unschedulable
	// pod (the most common one), e.g. "0/20 nodes are available: 20
	// cannot allocate all claims".
	UnschedulableReason string `json:"unschedulableReason,omitempty"`
	// Requests counts every request the load identity sent, by method and
	// error kind; none was retried.
	Requests       requests.Stats `json:"requests"`
	TimedOut       bool           `json:"timedOut,omitempty"`
	Interrupted    bool           `json:"interrupted,omitempty"`
	StartupLatency Startup        `json:"startupLatency"`
	Verdict        Verdict        `json:"verdict"`
}

// Verdict answers the seed's question: is the scheduler slow, or underfed?
type Verdict struct {
	// Bottleneck is "scheduler" (pods queued for it) or "upstream" (it
	// placed pods as fast as they arrived: underfed).
	Bottleneck string `json:"bottleneck"`
	// MaxPending is the most pods created but not yet bound at once.
	MaxPending float64 `json:"maxPending"`
	// SchedulerQueueMax is the scheduler_pending_pods{queue="active"} peak.
	SchedulerQueueMax float64 `json:"schedulerQueueMax,omitempty"`
	// AttemptRate is scheduling attempts per second over the run, from
	// the scheduler's counter in Prometheus; where that counter was not
	// read (no Prometheus, or its query failed), the pods the watch saw
	// bound per second (LoadResult.ScheduleRate), which leaves out
	// failed attempts.
	AttemptRate float64 `json:"attemptRate"`
	// PodGroupAttempts and PodGroupAttemptSeconds estimate the scheduler's
	// pod group (gang) scheduling cycles over the run and their summed
	// time: increase() of scheduler_podgroup_schedule_attempts_total and
	// of scheduler_podgroup_scheduling_attempt_duration_seconds_sum (it
	// exports them with the GenericWorkload gate on), which extrapolates,
	// so a count need not be whole. While a cycle runs no other pod is
	// scheduled. 0 when the scheduler has no such series (it never tried
	// a pod group); absent when not read (no Prometheus, or fewer than two
	// scrapes in the window).
	PodGroupAttempts       *float64 `json:"podGroupAttempts,omitempty"`
	PodGroupAttemptSeconds *float64 `json:"podGroupAttemptSeconds,omitempty"`
	// SchedulerCPUSeconds is kube-scheduler's CPU over the run
	// (process_cpu_seconds_total of Prometheus's kube-scheduler job, as
	// GhostFleet's fleets name it); absent when not read.
	SchedulerCPUSeconds float64 `json:"schedulerCPUSeconds,omitempty"`
	// ActiveQueueIncoming estimates the pods that entered the scheduler's
	// active queue over the run, by why (increase() of
	// scheduler_queue_incoming_pods_total{queue="active"} by event; an
	// event with no series, or under two scrapes, in the window is left
	// out): UnschedulablePodAdd a new pod not yet bound, or one released
	// from the unschedulable pods by another's arrival (a gang's members
	// when its last one is made); BackoffComplete a pod whose back-off
	// ended; PopFromBackoffQ one taken from the back-off queue because
	// nothing else waited, whether or not its back-off had ended (it
	// counts one pod of a pod group, whose other members then count as
	// ForceActivate, pulled in with it); other events where they occur.
	// Absent when not read.
	ActiveQueueIncoming map[string]float64 `json:"activeQueueIncoming,omitempty"`
	Source              string             `json:"source"` // "watch" or "watch+prometheus"
	Explanation         string             `json:"explanation"`
}

// Load creates the pods, waits until they all run (or the timeout), and
// returns the measurements and a run record.
func Load(ctx context.Context, clients Clients, opts LoadOptions) (LoadResult, record.Record, error) {
	rec := record.Record{ID: opts.RunID, Kind: "load", Params: opts, Started: time.Now().UTC()}
	res := LoadResult{Pods: opts.Pods, GPUsPerPod: opts.GPUs, Mode: opts.Mode, Pattern: PatternBurst}
	claim, err := ParseClaim(opts.Claim)
	if err != nil {
		return res, rec, err
	}
	if claim.DRA() {
		res.Claim = claim.String()
	}
	if opts.Rate > 0 {
		res.Pattern, res.TargetRate = PatternSteady, opts.Rate
	}
	report := opts.Report
	r, err := startRun(ctx, clients, opts.Namespace, opts.RunID, "")
	if err != nil {
		return res, rec, err
	}
	if claim.DRA() {
		t := claim.Template(opts.RunID, opts.GPUs, map[string]string{LabelRun: opts.RunID})
		if err := CreateClaimTemplate(ctx, clients.Admin, opts.Namespace, t); err != nil {
			r.tracker.Stop()
			return res, rec, err
		}
	}
	tracker := r.tracker
	defer tracker.Stop()

	start := time.Now()
	how := fmt.Sprintf("%s mode", opts.Mode)
	if opts.Rate > 0 {
		how = fmt.Sprintf("paced at %g pods/s", opts.Rate)
	}
	createDone := progress.Step(report, "create", fmt.Sprintf("creating %d pods × %d GPU (%s)", opts.Pods, opts.GPUs, how), 0)
	var failed createFailures
	var firstErr error
	switch {
	case opts.Rate > 0:
		createPaced(ctx, r.load, tracker, opts, &failed)
		res.CreateErrors, firstErr = failed.count()
	case opts.Mode == ModePods:
		createPods(ctx, r.load, tracker, opts, &failed)
		res.CreateErrors, firstErr = failed.count()
	case opts.Mode == ModeDeployment:
		firstErr = createDeployment(ctx, r.load, opts)
	case opts.Mode == ModeJob:
		firstErr = createJob(ctx, r.load, opts)
	}
	if opts.Mode != ModePods && firstErr != nil {
		createDone()
		res.Requests = r.requests.Stats()
		rec.Ended, rec.Outcome, rec.Result = time.Now().UTC(), "failed: creating the "+opts.Mode+": "+requests.Classify(firstErr), res
		return res, rec, fmt.Errorf("creating the %s: %w", opts.Mode, firstErr)
	}

	w := waitRunning(ctx, tracker, waitOptions{
		Expect: opts.Pods - res.CreateErrors, Total: opts.Pods, Timeout: opts.Timeout,
		Report: report, CreateDone: createDone, Unschedulable: unschedulableStall,
	})
	createdAt, end := w.CreatedAt, w.End
	res.TimedOut, res.Interrupted = w.TimedOut, w.Interrupted
	maxBacklog := w.MaxBacklog

	c := tracker.Counts()
	res.Scheduled, res.Running, res.Unschedulable, res.Failed = c.Scheduled, c.Running, c.Unschedulable, c.Failed
	if res.Unschedulable > 0 {
		res.UnschedulableReason = tracker.UnschedulableReason()
	}
	res.StartupLatency = tracker.Startup()
	firstSeen, lastScheduled, lastRunning := tracker.Window()
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return t.Sub(start).Seconds()
	}
	if !createdAt.IsZero() {
		res.CreateSeconds = since(createdAt)
	}
	res.ScheduleSeconds = since(lastScheduled)
	res.DurationSeconds = since(lastRunning)
	if res.DurationSeconds > 0 {
		res.PodsPerSecond = float64(res.Running) / res.DurationSeconds
	}
	if res.CreateSeconds > 0 {
		res.CreateRate = float64(c.Seen) / res.CreateSeconds
	}
	if !firstSeen.IsZero() && lastScheduled.After(firstSeen) {
		res.ScheduleRate = float64(res.Scheduled) / lastScheduled.Sub(firstSeen).Seconds()
	}
	res.Verdict = verdict(ctx, opts, res, maxBacklog, start, end)
	if res.Pattern == PatternSteady && res.Verdict.Bottleneck == "scheduler" {
		res.Pattern = PatternAboveCapacity
	}
	res.Requests = r.requests.Stats()

	rec.Ended = end.UTC()
	rec.Result = res
	rec.Phases = []record.Phase{{Name: "create", Start: start.UTC(), End: orEnd(createdAt, end).UTC()}}
	if !createdAt.IsZero() {
		rec.Phases = append(rec.Phases, record.Phase{Name: "schedule+run", Start: createdAt.UTC(), End: end.UTC()})
	}
	rec.Outcome = w.outcome("completed")
	if firstErr != nil && res.CreateErrors == opts.Pods {
		return res, rec, fmt.Errorf("every create failed; first error: %w", firstErr)
	}
	return res, rec, nil
}

func orEnd(t, end time.Time) time.Time {
	if t.IsZero() {
		return end
	}
	return t
}

// createPods sends every pod at once from opts.Workers goroutines: a
// burst. Each create is timed on its own and never retried; a failed one
// is counted and the rest go on.
func createPods(ctx context.Context, cs kubernetes.Interface, tracker *Tracker, opts LoadOptions, failed *createFailures) {
	workqueue.ParallelizeUntil(ctx, opts.Workers, opts.Pods, func(i int) {
		failed.record(ctx, createPod(ctx, cs, tracker, opts, i))
	})
}

// createPaced sends pod i when the pacer says it is due, each in its own
// goroutine: open loop, so a slow server meets the rate it was asked to
// take, not a rate that backs off with it.
func createPaced(ctx context.Context, cs kubernetes.Interface, tracker *Tracker, opts LoadOptions, failed *createFailures) {
	pacer := NewPacer(clock.RealClock{}, opts.Rate)
	var wg sync.WaitGroup
	for i := 0; i < opts.Pods; i++ {
		if _, err := pacer.Next(ctx); err != nil {
			break
		}
		wg.Go(func() { failed.record(ctx, createPod(ctx, cs, tracker, opts, i)) })
		if i%max(1, int(opts.Rate)) == 0 { // about once a second
			opts.Report(progress.Event{Kind: progress.Update, Step: "create", Done: i, Total: opts.Pods})
		}
	}
	wg.Wait()
}

func createPod(ctx context.Context, cs kubernetes.Interface, tracker *Tracker, opts LoadOptions, i int) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%05d", opts.RunID, i),
			Labels: map[string]string{LabelRun: opts.RunID, LabelKind: "load"},
		},
		Spec: opts.podSpec(),
	}
	tracker.Sending(pod.Name)
	_, err := cs.CoreV1().Pods(opts.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// createFailures counts the creates that failed and keeps the first error.
type createFailures struct {
	mu    sync.Mutex
	n     int
	first error
}

func (f *createFailures) record(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil { // an interrupted create is not the server's error
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.first == nil {
		f.first = err
	}
}

func (f *createFailures) count() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.first
}

func podTemplate(opts LoadOptions) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelRun: opts.RunID, LabelKind: "load"}},
		Spec:       opts.podSpec(),
	}
}

func (o LoadOptions) podSpec() corev1.PodSpec {
	spec := PodSpec(o.GPUs)
	if o.Preflight {
		spec = WithPreflight(spec)
	}
	if c, _ := ParseClaim(o.Claim); c.DRA() {
		spec = WithClaim(spec, o.RunID) // the run's template is named after it
	}
	return spec
}

func createDeployment(ctx context.Context, cs kubernetes.Interface, opts LoadOptions) error {
	replicas := int32(opts.Pods)
	_, err := cs.AppsV1().Deployments(opts.Namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: opts.RunID, Labels: map[string]string{LabelRun: opts.RunID}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: opts.RunID}},
			Template: podTemplate(opts),
		},
	}, metav1.CreateOptions{})
	return err
}

func createJob(ctx context.Context, cs kubernetes.Interface, opts LoadOptions) error {
	n := int32(opts.Pods)
	indexed := batchv1.IndexedCompletion
	tmpl := podTemplate(opts)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err := cs.BatchV1().Jobs(opts.Namespace).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: opts.RunID, Labels: map[string]string{LabelRun: opts.RunID}},
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, CompletionMode: &indexed,
			Template: tmpl,
		},
	}, metav1.CreateOptions{})
	return err
}

// verdict decides whether pods waited for the scheduler or the scheduler
// waited for pods. The watch's backlog of created-but-unbound pods is the
// direct evidence (it includes pods the scheduler has picked but not yet
// bound, which its client QPS throttles); the scheduler's own pending-pods
// gauge and attempt counter from Prometheus are reported beside it.
func verdict(ctx context.Context, opts LoadOptions, res LoadResult, watchBacklog int, start, end time.Time) (v Verdict) {
	v = Verdict{MaxPending: float64(watchBacklog), AttemptRate: res.ScheduleRate, Source: "watch"}
	promNote := ""
	if opts.PrometheusURL != "" {
		// Prometheus scrapes every 15s: let the last scrape of the run
		// land, unless the user has interrupted the run and is waiting.
		window := int(math.Ceil(end.Sub(start).Seconds())) + 15
		at := end.Add(15 * time.Second)
		select {
		case <-ctx.Done():
			at = time.Now()
		case <-time.After(time.Until(at)):
		}
		ctx := context.WithoutCancel(ctx)
		if prom, err := metrics.NewPrometheus(opts.PrometheusURL); err == nil {
			// A counter born during a short run may have a single sample,
			// which increase() cannot use: then the attempt rate stays the
			// watch's schedule rate.
			pending, perr := prom.Scalar(ctx, fmt.Sprintf(`max_over_time(sum(scheduler_pending_pods{queue="active"})[%ds:1s])`, window), at)
			if perr == nil {
				v.Source = "watch+prometheus"
				v.SchedulerQueueMax = pending
				promNote = fmt.Sprintf(" (scheduler's active queue peaked at %.0f", pending)
				attempts, aerr := prom.Scalar(ctx, fmt.Sprintf(`sum(increase(scheduler_schedule_attempts_total[%ds]))`, window), at)
				if d := end.Sub(start).Seconds(); aerr == nil && d > 0 {
					v.AttemptRate = attempts / d
					promNote += fmt.Sprintf(", %.0f attempts/s", v.AttemptRate)
				}
				// A counter the scheduler has not made (no pod group
				// tried) reads 0; one with under two scrapes in the
				// window, nothing.
				increase := func(counter string) (*float64, error) {
					x, err := prom.Scalar(ctx, fmt.Sprintf(`sum(increase(%s[%ds])) or absent(%s) * 0`, counter, window, counter), at)
					return &x, err
				}
				groups, gerr := increase("scheduler_podgroup_schedule_attempts_total")
				groupSeconds, serr := increase("scheduler_podgroup_scheduling_attempt_duration_seconds_sum")
				if gerr == nil && serr == nil {
					v.PodGroupAttempts, v.PodGroupAttemptSeconds = groups, groupSeconds
					if *groups > 0 {
						promNote += fmt.Sprintf(", about %.0f pod-group cycles taking %.1fs", *groups, *groupSeconds)
					}
				}
				if in, ierr := prom.ByLabel(ctx, fmt.Sprintf(`sum by (event) (increase(scheduler_queue_incoming_pods_total{queue="active"}[%ds]))`, window), "event", at); ierr == nil && len(in) > 0 {
					v.ActiveQueueIncoming = in
					if in["BackoffComplete"] >= 1 || in["PopFromBackoffQ"] >= 1 {
						promNote += fmt.Sprintf(", pods into its queue: %.0f at their back-off's end, %.0f taken from back-off while it was idle, %.0f pulled in with their group (estimates)",
							in["BackoffComplete"], in["PopFromBackoffQ"], in["ForceActivate"])
					}
				}
				if cpu, cerr := prom.Scalar(ctx, fmt.Sprintf(`sum(increase(process_cpu_seconds_total{job="kube-scheduler"}[%ds]))`, window), at); cerr == nil {
					v.SchedulerCPUSeconds = cpu
					promNote += fmt.Sprintf(", scheduler CPU %.1fs", cpu)
				}
				promNote += ")"
			}
		}
	}
	defer func() {
		if res.Unschedulable > 0 {
			v.Explanation = fmt.Sprintf("%d pods unschedulable (%s); the rest: %s", res.Unschedulable, res.UnschedulableReason, v.Explanation)
		}
	}()
	threshold := max(50, 0.1*float64(res.Pods))
	if v.MaxPending >= threshold {
		v.Bottleneck = "scheduler"
		v.Explanation = fmt.Sprintf("slow: up to %.0f created pods waited to be bound while the scheduler bound %.0f pods/s%s; "+
			"it is bound by its own throughput (%s, or its CPU)", v.MaxPending, res.ScheduleRate, promNote,
			opts.Limits.describe("its client QPS", opts.Limits.SchedulerQPS))
	} else {
		v.Bottleneck = "upstream"
		upstream := "pod creation"
		if opts.Rate > 0 {
			upstream = fmt.Sprintf("the pace asked for (--rate %g pods/s)", opts.Rate)
		}
		if opts.Mode != ModePods {
			upstream = "the controller-manager creating the pods (" + opts.Limits.describe("its client QPS", opts.Limits.ControllerManagerQPS) + ")"
		}
		if c, _ := ParseClaim(opts.Claim); c.DRA() {
			// The scheduler does not see a pod until its claim exists.
			upstream += " and the controller-manager creating each pod's ResourceClaim from its template (" +
				opts.Limits.describe("its client QPS", opts.Limits.ControllerManagerQPS) + ")"
		}
		v.Explanation = fmt.Sprintf("underfed: never more than %.0f created pods waited to be bound; the scheduler placed them as fast as they arrived "+
			"(%.0f pods/s created, %.0f pods/s scheduled)%s; the limit is %s", v.MaxPending, res.CreateRate, res.ScheduleRate, promNote, upstream)
	}
	return v
}

// unschedulableStall is how long a load waits once every pod it has not
// seen running is unschedulable and nothing moves: twice the scheduler's
// longest back-off (podMaxBackoffSeconds, 10 s by default), so a pod it
// is about to retry is not given up on.
const unschedulableStall = 20 * time.Second

// LimitsOf are the client limits profile runs with.
func LimitsOf(p fleet.ComponentProfile) ClientLimits {
	return ClientLimits{Profile: p.Name, SchedulerQPS: p.Scheduler.QPS, ControllerManagerQPS: p.ControllerManager.QPS}
}

// describe names a QPS limit with the profile it comes from.
func (l ClientLimits) describe(what string, qps int) string {
	if qps == 0 {
		return what + ", not known for this cluster"
	}
	return fmt.Sprintf("%s, %d under profile %s", what, qps, l.Profile)
}

type waitOptions struct {
	Expect, Total int
	Timeout       time.Duration
	// Stall ends the wait when no pod was bound or started for this long
	// (0: never): a fleet too full for the rest will not get emptier.
	Stall time.Duration
	// Unschedulable ends the wait when every pod exists, each is running
	// or unschedulable, at least one is unschedulable, and nothing moved
	// for this long (0: never): the scheduler has said no to the rest, and
	// waiting for the timeout would only hide that.
	Unschedulable time.Duration
	Report        progress.Func
	CreateDone    func() // closes the creation step once every pod exists
	// Deferred says pods appear only as their jobs are admitted
	// (suspended Jobs): the creation step closes as the wait starts, so
	// that a stall counts from then, without a count of pods (it created
	// Jobs, and their pods are not yet made).
	Deferred bool
}

type waitOutcome struct {
	CreatedAt, End                 time.Time
	TimedOut, Interrupted, Stalled bool
	// Refused is set when the wait ended on pods the scheduler found
	// unschedulable (waitOptions.Unschedulable).
	Refused    bool
	MaxBacklog int
}

// outcome names how the wait ended; done is the word for success.
func (w waitOutcome) outcome(done string) string {
	switch {
	case w.Interrupted:
		return "interrupted"
	case w.TimedOut:
		return "timed out"
	case w.Stalled:
		return "stalled"
	case w.Refused:
		return "unschedulable"
	default:
		return done
	}
}

// waitRunning waits until Expect tracked pods run, the timeout, a stall,
// or cancellation, reporting progress on the "create" then "run" steps.
func waitRunning(ctx context.Context, tracker *Tracker, o waitOptions) waitOutcome {
	var w waitOutcome
	lastProgress, lastCount := time.Now(), -1
	deadline, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(deadline, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		c := tracker.Counts()
		w.MaxBacklog = max(w.MaxBacklog, c.Seen-c.Scheduled)
		if n := c.Scheduled + c.Running; n != lastCount {
			lastProgress, lastCount = time.Now(), n
		}
		if w.CreatedAt.IsZero() && (c.Seen >= o.Expect || o.Deferred) {
			w.CreatedAt = time.Now()
			if !o.Deferred {
				o.Report(progress.Event{Kind: progress.Update, Step: "create", Done: c.Seen, Total: o.Total})
			}
			o.CreateDone()
			o.Report(progress.Event{Kind: progress.Start, Step: "run", Message: fmt.Sprintf("waiting for %d pods to be scheduled and running", o.Expect)})
		}
		if w.CreatedAt.IsZero() {
			o.Report(progress.Event{Kind: progress.Update, Step: "create", Done: c.Seen, Total: o.Total})
		} else {
			o.Report(progress.Event{Kind: progress.Update, Step: "run", Done: c.Running, Total: o.Expect})
		}
		if c.Running >= o.Expect {
			return true, nil
		}
		if o.Stall > 0 && !w.CreatedAt.IsZero() && time.Since(lastProgress) >= o.Stall {
			w.Stalled = true
			return true, nil
		}
		if o.Unschedulable > 0 && !w.CreatedAt.IsZero() && c.Unschedulable > 0 && c.Running+c.Unschedulable >= o.Expect &&
			time.Since(lastProgress) >= o.Unschedulable {
			w.Refused = true
			return true, nil
		}
		return false, nil
	})
	if err != nil { // the condition never fails: the wait was cut short
		w.Interrupted = ctx.Err() != nil
		w.TimedOut = !w.Interrupted
	}
	if w.CreatedAt.IsZero() {
		o.CreateDone()
	} else {
		o.Report(progress.Event{Kind: progress.Finish, Step: "run", Message: "pods scheduled and running", Elapsed: time.Since(w.CreatedAt)})
	}
	w.End = time.Now()
	return w
}
