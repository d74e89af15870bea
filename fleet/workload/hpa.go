package workload

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// The HPA scenario: a GPU inference Deployment with a
// HorizontalPodAutoscaler on CPU utilisation, whose pods' emulated CPU
// (fleet.AnnotationUsageCPU, served through metrics-server) is raised and
// lowered in steps.

// HPAStep is one step of the emulated load: every pod of the Deployment
// uses CPU (a quantity, per container) for For.
type HPAStep struct {
	CPU string        `json:"cpu"`
	For time.Duration `json:"for"`
}

// maxHPASteps bounds a step list.
const maxHPASteps = 100

// maxHPAReplicas bounds --max-replicas: an HPA run measures how the
// autoscaler follows load, not how many pods the fleet holds (load does).
const maxHPAReplicas = 1000

// maxStabilization is the API's bound on a behavior's stabilization
// window (autoscaling/v2 validation: at most 3600 s).
const maxStabilization = time.Hour

// ParseHPASteps reads a step list such as "100m:60s,900m:120s,100m:2m":
// comma-separated CPU:DURATION pairs, the CPU a Kubernetes quantity above
// zero, the duration Go form (90s, 2m) or whole seconds. The error names
// the step and what is allowed.
func ParseHPASteps(s string) ([]HPAStep, error) {
	const form = "allowed: comma-separated CPU:DURATION steps, e.g. 100m:60s,900m:120s,100m:120s"
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--steps is empty: %s", form)
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxHPASteps {
		return nil, fmt.Errorf("--steps has %d steps: allowed are 1-%d", len(parts), maxHPASteps)
	}
	steps := make([]HPAStep, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		cpu, dur, ok := strings.Cut(p, ":")
		cpu, dur = strings.TrimSpace(cpu), strings.TrimSpace(dur)
		if !ok || cpu == "" || dur == "" {
			return nil, fmt.Errorf("--steps step %d %q is not CPU:DURATION: %s", i+1, p, form)
		}
		if _, err := fleet.ParseUsage("CPU", cpu); err != nil {
			return nil, fmt.Errorf("--steps step %d %q: %v", i+1, p, err)
		}
		d, err := time.ParseDuration(dur)
		if err != nil {
			n, nerr := strconv.Atoi(dur)
			if nerr != nil {
				return nil, fmt.Errorf("--steps step %d %q: duration %q is not a duration: use seconds (60) or Go form (90s, 2m)", i+1, p, dur)
			}
			d = time.Duration(n) * time.Second
		}
		if d < time.Second {
			return nil, fmt.Errorf("--steps step %d %q: duration %s is out of range: allowed is 1s or more", i+1, p, d)
		}
		steps = append(steps, HPAStep{CPU: cpu, For: d})
	}
	return steps, nil
}

// FormatHPASteps writes steps back in ParseHPASteps's form.
func FormatHPASteps(steps []HPAStep) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.CPU + ":" + s.For.String()
	}
	return strings.Join(parts, ",")
}

// HPAOptions configure an HPA run.
type HPAOptions struct {
	RunID     string `json:"runId"`
	Namespace string `json:"namespace"`
	// GPUsPerPod each inference pod requests (nvidia.com/gpu).
	GPUsPerPod int `json:"gpusPerPod"`
	// CPURequest and MemoryRequest are each pod's requests: the HPA's
	// utilisation is the pods' CPU use over CPURequest.
	CPURequest    string `json:"cpuRequest"`
	MemoryRequest string `json:"memoryRequest"`
	// TargetCPU is the HPA's target average utilisation, % of the request.
	TargetCPU   int32 `json:"targetCpu"`
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
	// Steps are the emulated load, in order.
	Steps []HPAStep `json:"steps"`
	// ScaleUpWindow and ScaleDownWindow are the HPA's
	// spec.behavior stabilization windows (Kubernetes' defaults: 0 and 5
	// minutes).
	ScaleUpWindow   time.Duration `json:"scaleUpWindow"`
	ScaleDownWindow time.Duration `json:"scaleDownWindow"`
	// Sample is how often replicas are read (1 s when 0).
	Sample time.Duration `json:"-"`
	// CPU reads the control plane's processes' CPU time so far
	// (fleet.ComponentCPU); nil: not measured (an attached cluster).
	CPU    func() (map[string]time.Duration, error) `json:"-"`
	Report progress.Func                            `json:"-"`
}

// Check checks what needs no cluster, each error naming the value and
// what is allowed. The ranges are the autoscaling/v2 API's (minReplicas
// ≥ 1 without the HPAScaleToZero gate, maxReplicas ≥ minReplicas, a
// utilisation target above 0 % with no upper bound, windows 0-3600 s)
// with a cap on replicas.
func (o *HPAOptions) Check() error {
	if err := CheckNamespace(o.Namespace); err != nil {
		return err
	}
	switch {
	case o.TargetCPU < 1:
		return fmt.Errorf("--target-cpu %d is out of range: allowed is a whole percentage of the pods' CPU request, 1 or more (the autoscaling/v2 API wants more than 0; above 100 is allowed: pods may use more than they request)", o.TargetCPU)
	case o.MinReplicas < 1 || o.MinReplicas > maxHPAReplicas:
		return fmt.Errorf("--min-replicas %d is out of range: allowed are 1-%d (the API allows 0 only with the HPAScaleToZero feature gate and an Object or External metric)", o.MinReplicas, maxHPAReplicas)
	case o.MaxReplicas < o.MinReplicas || o.MaxReplicas > maxHPAReplicas:
		return fmt.Errorf("--max-replicas %d is out of range: allowed are --min-replicas (%d) to %d", o.MaxReplicas, o.MinReplicas, maxHPAReplicas)
	case o.GPUsPerPod < 1:
		return fmt.Errorf("--gpus %d is out of range: each inference pod requests at least 1 nvidia.com/gpu", o.GPUsPerPod)
	case o.ScaleUpWindow < 0 || o.ScaleUpWindow > maxStabilization || o.ScaleUpWindow%time.Second != 0:
		return fmt.Errorf("--scale-up-window %s is out of range: allowed are whole seconds from 0 to 1h (the API's bound)", o.ScaleUpWindow)
	case o.ScaleDownWindow < 0 || o.ScaleDownWindow > maxStabilization || o.ScaleDownWindow%time.Second != 0:
		return fmt.Errorf("--scale-down-window %s is out of range: allowed are whole seconds from 0 to 1h (the API's bound)", o.ScaleDownWindow)
	case len(o.Steps) == 0:
		return fmt.Errorf("--steps is empty: allowed: comma-separated CPU:DURATION steps, e.g. 100m:60s,900m:120s,100m:120s")
	}
	for _, r := range []struct{ flag, value, example string }{{"--cpu-request", o.CPURequest, "500m, 1, 2"}, {"--memory-request", o.MemoryRequest, "512Mi, 4Gi"}} {
		q, err := resource.ParseQuantity(r.value)
		if err != nil {
			return fmt.Errorf("%s %q is not a quantity: allowed are Kubernetes quantities such as %s", r.flag, r.value, r.example)
		}
		if q.Sign() <= 0 {
			return fmt.Errorf("%s %q is out of range: allowed is more than 0 (the HPA's utilisation is the pods' use over their request)", r.flag, r.value)
		}
	}
	for i, s := range o.Steps {
		if _, err := fleet.ParseUsage(fmt.Sprintf("--steps step %d CPU", i+1), s.CPU); err != nil {
			return err
		}
		if s.For < time.Second {
			return fmt.Errorf("--steps step %d duration %s is out of range: allowed is 1s or more", i+1, s.For)
		}
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// Duration is how long the steps take together.
func (o HPAOptions) Duration() time.Duration {
	var d time.Duration
	for _, s := range o.Steps {
		d += s.For
	}
	return d
}

// hpaSelector is the label that picks the run's pods.
func (o HPAOptions) hpaSelector() map[string]string {
	return map[string]string{LabelRun: o.RunID}
}

// Deployment is the inference Deployment: MinReplicas GPU pods on the
// fake nodes, requesting CPU and memory (what the HPA's utilisation is
// relative to) besides their GPUs, starting at the first step's CPU use.
// Later steps annotate the pods themselves: changing the template would
// roll every pod mid-measurement.
func (o HPAOptions) Deployment() *appsv1.Deployment {
	spec := PodSpec(o.GPUsPerPod)
	spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(o.CPURequest),
		corev1.ResourceMemory: resource.MustParse(o.MemoryRequest),
	}
	labels := map[string]string{LabelRun: o.RunID, LabelKind: "hpa"}
	annotations := map[string]string{}
	if len(o.Steps) > 0 {
		annotations[fleet.AnnotationUsageCPU] = o.Steps[0].CPU
	}
	replicas := o.MinReplicas
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: o.RunID, Labels: map[string]string{LabelRun: o.RunID}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: o.hpaSelector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       spec,
			},
		},
	}
}

// HPA is the autoscaler of the Deployment: CPU utilisation at TargetCPU
// % of the request, between MinReplicas and MaxReplicas, with the
// stabilization windows in spec.behavior (so no controller-manager
// restart is needed to shorten Kubernetes' 5-minute scale-down window).
func (o HPAOptions) HPA() *autoscalingv2.HorizontalPodAutoscaler {
	up, down := int32(o.ScaleUpWindow/time.Second), int32(o.ScaleDownWindow/time.Second)
	target, minR := o.TargetCPU, o.MinReplicas
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: o.RunID, Labels: map[string]string{LabelRun: o.RunID}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: o.RunID},
			MinReplicas:    &minR,
			MaxReplicas:    o.MaxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
				},
			}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &up},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &down},
			},
		},
	}
}
