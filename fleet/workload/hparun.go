package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// HPASample is the replicas at one moment, taken whenever one of them
// changed (and at each step's start and the run's end).
type HPASample struct {
	// At is seconds since the run started.
	At   float64 `json:"t"`
	Step int     `json:"step"` // 1-based
	// Spec and Status are the Deployment's spec.replicas and
	// status.replicas; Running its pods that run and are not being
	// deleted; Desired the HPA's status.desiredReplicas.
	Spec    int32 `json:"spec"`
	Status  int32 `json:"status"`
	Running int   `json:"running"`
	Desired int32 `json:"desired"`
	// Utilization is the HPA's current average CPU utilisation, % of the
	// request; nil before it has one.
	Utilization *int32 `json:"utilization,omitempty"`
}

// HPAStepResult is how the replicas followed one step.
type HPAStepResult struct {
	HPAStep
	// Start and End are seconds since the run started.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// From is the Running pods at the step's start; To the HPA's desired
	// replicas at its end; Direction up, down or none.
	From      int    `json:"from"`
	To        int32  `json:"to"`
	Direction string `json:"direction"`
	// FirstChange is seconds from the step's start until the Deployment's
	// spec.replicas first moved towards To (the HPA acted on the step: a
	// scale-up still under way from the step before does not count);
	// Reached until To pods
	// were Running (spec and Running both at To). Nil: not within the
	// step.
	FirstChange *float64 `json:"firstChangeSeconds,omitempty"`
	Reached     *float64 `json:"reachedSeconds,omitempty"`
	// Peak is the most pods Running during the step.
	Peak int `json:"peak"`
	// CPU is each control-plane process's CPU seconds during the step.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
}

// HPAEvent is one event the HPA controller recorded on the HPA.
type HPAEvent struct {
	At      float64 `json:"t"` // seconds since the run started
	Type    string  `json:"type"`
	Reason  string  `json:"reason"`
	Message string  `json:"message"`
	Count   int32   `json:"count,omitempty"`
}

// HPACondition is one of the HPA's status conditions.
type HPACondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// HPAResult is what an HPA run measured.
type HPAResult struct {
	Namespace string `json:"namespace"`
	// Deployment and HPA are named after the run.
	Deployment string          `json:"deployment"`
	HPA        string          `json:"hpa"`
	Steps      []HPAStepResult `json:"steps"`
	// ScaleUpSeconds and ScaleDownSeconds are the first step up's and
	// the first step down's Reached: from the step's change of load to
	// the HPA's desired replicas Running. Nil: none reached.
	ScaleUpSeconds   *float64 `json:"scaleUpSeconds,omitempty"`
	ScaleDownSeconds *float64 `json:"scaleDownSeconds,omitempty"`
	// PeakRunning is the most pods Running at once.
	PeakRunning int            `json:"peakRunning"`
	Timeline    []HPASample    `json:"timeline"`
	Events      []HPAEvent     `json:"events"`
	Conditions  []HPACondition `json:"conditions"`
	// CPU is each process's CPU seconds over the run; ControlPlaneCores
	// the control plane's (ControlPlane) average cores over it.
	CPU               map[string]float64 `json:"cpuSeconds,omitempty"`
	ControlPlaneCores float64            `json:"controlPlaneCores"`
	DurationSeconds   float64            `json:"durationSeconds"`
}

// HPARun creates the Deployment and its HPA, plays the steps and
// measures how the replicas follow. The objects stay (until `ghostfleet
// unload`). How the run ended (completed, interrupted, failed: …) is the
// record's Outcome; an error with an empty Outcome means nothing was
// measured.
func HPARun(ctx context.Context, clients Clients, o HPAOptions) (HPAResult, record.Record, error) {
	rec := record.Record{ID: o.RunID, Kind: "hpa", Params: o, Started: time.Now().UTC()}
	res := HPAResult{Namespace: o.Namespace, Deployment: o.RunID, HPA: o.RunID}
	if err := EnsureNamespace(ctx, clients.Admin, o.Namespace); err != nil {
		return res, rec, err
	}
	cs := clients.Admin
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(l *metav1.ListOptions) { l.LabelSelector = LabelRun + "=" + o.RunID }))
	pods := f.Core().V1().Pods()
	pods.Informer() // registered before Start
	runCtx, stop := context.WithCancel(ctx)
	f.Start(runCtx.Done())
	defer func() { stop(); f.Shutdown() }() // Shutdown waits for the informers: stop them first
	f.WaitForCacheSync(runCtx.Done())

	created := progress.Step(o.Report, "create", fmt.Sprintf("creating Deployment and HPA %s/%s: %d-%d replicas of %d GPU, CPU request %s, target %d%%",
		o.Namespace, o.RunID, o.MinReplicas, o.MaxReplicas, o.GPUsPerPod, o.CPURequest, o.TargetCPU), 0)
	if _, err := cs.AppsV1().Deployments(o.Namespace).Create(ctx, o.Deployment(), metav1.CreateOptions{}); err != nil {
		created()
		return res, rec, fmt.Errorf("creating Deployment %s/%s: %w", o.Namespace, o.RunID, err)
	}
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Create(ctx, o.HPA(), metav1.CreateOptions{}); err != nil {
		created()
		rec.Ended, rec.Outcome, rec.Result = time.Now().UTC(), "failed: creating the HPA: "+err.Error(), res
		return res, rec, fmt.Errorf("creating HPA %s/%s: %w", o.Namespace, o.RunID, err)
	}
	created()

	h := &hpaRun{o: o, cs: cs, lister: func() []*corev1.Pod {
		ps, _ := pods.Lister().List(labels.Everything())
		return ps
	}, patched: map[types.UID]string{}}
	// The steps start once the Deployment's first pods run: the first
	// step's figures then measure the HPA, not the pods' start.
	h.start = time.Now()
	h.step, h.cpu = 1, o.Steps[0].CPU
	ready := progress.Step(o.Report, "start", fmt.Sprintf("waiting for %d pods Running", o.MinReplicas), 0)
	waitCtx, cancelWait := context.WithTimeout(ctx, 2*time.Minute)
	_ = wait.PollUntilContextCancel(waitCtx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		return h.running() >= int(o.MinReplicas), nil
	})
	cancelWait()
	ready()
	start := time.Now()
	h.start = start
	var before map[string]time.Duration
	if o.CPU != nil {
		before, _ = o.CPU()
	}
	sample := o.Sample
	if sample <= 0 {
		sample = time.Second
	}
	tick := time.NewTicker(sample)
	defer tick.Stop()
	var phases []record.Phase
	interrupted := false
	for i, step := range o.Steps {
		h.step, h.cpu = i+1, step.CPU
		stepStart := time.Now()
		stepCPU := before
		if o.CPU != nil && i > 0 {
			stepCPU, _ = o.CPU()
		}
		done := progress.Step(o.Report, "step", fmt.Sprintf("step %d/%d: each pod uses %s CPU for %s", i+1, len(o.Steps), step.CPU, step.For), step.For)
		sr := HPAStepResult{HPAStep: step, Start: stepStart.Sub(start).Seconds()}
		h.reconcile(ctx)
		first := h.read(ctx, true)
		sr.From = first.Running
		end := stepStart.Add(step.For)
		for !interrupted && time.Now().Before(end) {
			select {
			case <-ctx.Done():
				interrupted = true
			case <-tick.C:
				h.reconcile(ctx)
				h.read(ctx, false)
			}
		}
		last := h.read(ctx, true)
		done()
		sr.End = time.Since(start).Seconds()
		sr.To = last.Desired
		if sr.To == 0 { // the HPA has no status yet
			sr.To = last.Spec
		}
		h.judge(&sr, stepStart)
		if o.CPU != nil {
			sr.CPUSeconds = cpuSince(o.CPU, stepCPU)
		}
		res.Steps = append(res.Steps, sr)
		phases = append(phases, record.Phase{Name: fmt.Sprintf("step %d %s", i+1, step.CPU), Start: stepStart.UTC(), End: time.Now().UTC()})
		if interrupted {
			break
		}
	}
	ended := time.Now()
	res.Timeline = h.samples
	for _, s := range res.Timeline {
		res.PeakRunning = max(res.PeakRunning, s.Running)
	}
	for _, s := range res.Steps {
		switch {
		case s.Direction == "up" && res.ScaleUpSeconds == nil:
			res.ScaleUpSeconds = s.Reached
		case s.Direction == "down" && res.ScaleDownSeconds == nil:
			res.ScaleDownSeconds = s.Reached
		}
	}
	after := context.WithoutCancel(ctx)
	res.Events = hpaEvents(after, cs, o.Namespace, o.RunID, start)
	if hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Get(after, o.RunID, metav1.GetOptions{}); err == nil {
		res.Conditions = hpaConditions(hpa)
	}
	res.DurationSeconds = ended.Sub(start).Seconds()
	if o.CPU != nil {
		res.CPU = cpuSince(o.CPU, before)
		for _, c := range ControlPlane {
			res.ControlPlaneCores += res.CPU[c]
		}
		if res.DurationSeconds > 0 {
			res.ControlPlaneCores /= res.DurationSeconds
		}
	}
	rec.Ended, rec.Result, rec.Phases = ended.UTC(), res, phases
	rec.Outcome = "completed"
	if interrupted {
		rec.Outcome = "interrupted"
	}
	return res, rec, nil
}

// hpaRun is a run's state between ticks.
type hpaRun struct {
	o       HPAOptions
	cs      kubernetes.Interface
	lister  func() []*corev1.Pod
	start   time.Time
	step    int
	cpu     string               // the step's CPU, what every pod should use
	patched map[types.UID]string // the CPU last written per pod, until the cache shows it
	samples []HPASample
}

// reconcile gives every live pod of the Deployment the step's CPU use:
// the ones there at the step's change and the ones the HPA adds.
func (h *hpaRun) reconcile(ctx context.Context) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{fleet.AnnotationUsageCPU: h.cpu}}})
	for _, p := range h.lister() {
		if p.DeletionTimestamp != nil || p.Annotations[fleet.AnnotationUsageCPU] == h.cpu || h.patched[p.UID] == h.cpu {
			continue
		}
		_, err := h.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			h.patched[p.UID] = h.cpu
		}
	}
}

// read takes a sample, kept when something changed (or always when
// force).
func (h *hpaRun) read(ctx context.Context, force bool) HPASample {
	s := HPASample{At: time.Since(h.start).Seconds(), Step: h.step}
	if d, err := h.cs.AppsV1().Deployments(h.o.Namespace).Get(ctx, h.o.RunID, metav1.GetOptions{}); err == nil {
		if d.Spec.Replicas != nil {
			s.Spec = *d.Spec.Replicas
		}
		s.Status = d.Status.Replicas
	}
	if a, err := h.cs.AutoscalingV2().HorizontalPodAutoscalers(h.o.Namespace).Get(ctx, h.o.RunID, metav1.GetOptions{}); err == nil {
		s.Desired = a.Status.DesiredReplicas
		for _, m := range a.Status.CurrentMetrics {
			if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
				s.Utilization = m.Resource.Current.AverageUtilization
			}
		}
	}
	s.Running = h.running()
	if n := len(h.samples); force || n == 0 || changed(h.samples[n-1], s) {
		h.samples = append(h.samples, s)
	}
	return s
}

// running counts the pods that run and are not being deleted.
func (h *hpaRun) running() int {
	n := 0
	for _, p := range h.lister() {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

func changed(a, b HPASample) bool {
	ua, ub := int32(-1), int32(-1)
	if a.Utilization != nil {
		ua = *a.Utilization
	}
	if b.Utilization != nil {
		ub = *b.Utilization
	}
	return a.Step != b.Step || a.Spec != b.Spec || a.Status != b.Status || a.Running != b.Running || a.Desired != b.Desired || ua != ub
}

// judge fills a step's direction, first change, time to reach its
// replicas and peak from the samples taken during it.
func (h *hpaRun) judge(sr *HPAStepResult, stepStart time.Time) {
	switch {
	case int(sr.To) > sr.From:
		sr.Direction = "up"
	case int(sr.To) < sr.From:
		sr.Direction = "down"
	default:
		sr.Direction = "none"
	}
	var specAtStart int32 = -1
	for _, s := range h.samples {
		if s.At < sr.Start || s.At > sr.End {
			continue
		}
		since := s.At - sr.Start
		switch {
		case specAtStart < 0:
			specAtStart = s.Spec
		case sr.FirstChange != nil:
		case sr.Direction == "up" && s.Spec > specAtStart, sr.Direction == "down" && s.Spec < specAtStart,
			sr.Direction == "none" && s.Spec != specAtStart:
			sr.FirstChange = &since
		}
		if sr.Direction != "none" && sr.Reached == nil && s.Spec == sr.To && s.Running == int(sr.To) {
			sr.Reached = &since
		}
		sr.Peak = max(sr.Peak, s.Running)
	}
}

// cpuSince is each process's CPU seconds since before.
func cpuSince(read func() (map[string]time.Duration, error), before map[string]time.Duration) map[string]float64 {
	after, err := read()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for c, t := range after {
		out[c] = (t - before[c]).Seconds()
	}
	return out
}

// hpaEvents lists the events recorded on the HPA, oldest first.
func hpaEvents(ctx context.Context, cs kubernetes.Interface, ns, name string, start time.Time) []HPAEvent {
	sel := fields.Set{"involvedObject.kind": "HorizontalPodAutoscaler", "involvedObject.name": name}.AsSelector().String()
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil
	}
	out := []HPAEvent{}
	for _, e := range list.Items {
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		out = append(out, HPAEvent{At: at.Sub(start).Seconds(), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func hpaConditions(h *autoscalingv2.HorizontalPodAutoscaler) []HPACondition {
	out := []HPACondition{}
	for _, c := range h.Status.Conditions {
		out = append(out, HPACondition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}
