package fleet

//lint:file-ignore SA1019 kwok v0.8.0's own stock stages still use key/operator/values, expressionFrom and next.statusTemplate; GhostFleet writes its stages the same way.

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
)

// Fault markers. GhostFleet marks a node or pod with a fault by a label
// (fault.ghostfleet.io/<kind>=true) and annotations carrying the fault's
// parameters; kwok stages select on them and write the status a GPU
// health stack or a failing container would produce. The marker stays on
// the object for as long as the fault lasts, so `kubectl get nodes -l`
// finds every faulted node.
const (
	FaultPrefix = "fault.ghostfleet.io/"
	// FaultActive is the marker label's value while the fault holds.
	FaultActive = "true"
	// FaultCleared is a pod marker's value once the fault was cleared
	// before it fired: a stage then cancels what kwok had scheduled.
	FaultCleared = "cleared"

	// TaintGPUHealth is the taint a GPU health operator puts on a node whose
	// GPUs or fabric failed, so that no new GPU work lands there.
	TaintGPUHealth      = "nvidia.com/gpu-health"
	TaintGPUHealthValue = "unhealthy"
)

// Node fault kinds, and the pod ones.
const (
	FaultGPUXid      = "gpu-xid"
	FaultNVLink      = "nvlink"
	FaultRDMA        = "rdma"
	FaultNodeDown    = "node-down"
	FaultPodExit     = "pod-exit"
	FaultPodInitExit = "pod-init-exit"
)

// FaultLabel is the marker label of a fault kind.
func FaultLabel(kind string) string { return FaultPrefix + kind }

// FaultAnnotation is the annotation holding parameter param of a fault.
func FaultAnnotation(kind, param string) string { return FaultPrefix + kind + "." + param }

// ConditionFault describes a node fault that a GPU health stack reports as
// node conditions (NVIDIA's DCGM exporter / NPD health checks, the
// condition types of kwok's GPU demo).
type ConditionFault struct {
	Kind string
	// Condition is set True while the fault holds.
	Condition string
	// Extra is set True too when the fault's "extra" annotation is "true":
	// a double-bit ECC Xid is both an Xid and a DBE/MSBE problem.
	Extra string
	// Reason and Message are written unless the fault's annotations say
	// otherwise.
	Reason, Message string
	// Healthy is the reason written when the fault is cleared, NPD style.
	Healthy, HealthyMessage string
	// LowerGPUs withdraws one GPU from allocatable, as the device plugin
	// does when a GPU is marked unhealthy.
	LowerGPUs bool
}

// ConditionFaults are the node faults done with conditions.
var ConditionFaults = []ConditionFault{
	{Kind: FaultGPUXid, Condition: "GpuXidProblem", Extra: "GpuDbeMsbeProblem", Reason: "Xid79", Message: "Xid 79: GPU has fallen off the bus", Healthy: "NoGpuXidProblem", HealthyMessage: "no GPU Xid errors", LowerGPUs: true},
	{Kind: FaultNVLink, Condition: "NvLinkProblem", Reason: "NvLinkDown", Message: "NVLink inactive: a GPU's NVLink links are down (Xid 74)", Healthy: "NoNvLinkProblem", HealthyMessage: "all NVLink links are up"},
	{Kind: FaultRDMA, Condition: "RoCELinksProblem", Reason: "RoCELinkDown", Message: "RoCE link down: a compute-fabric NIC port lost its link", Healthy: "NoRoCELinksProblem", HealthyMessage: "all RoCE links are up"},
}

// LookupConditionFault returns the condition fault of kind.
func LookupConditionFault(kind string) (ConditionFault, bool) {
	for _, f := range ConditionFaults {
		if f.Kind == kind {
			return f, true
		}
	}
	return ConditionFault{}, false
}

// faultWeight makes a fault stage win over kwok's lifecycle stages (weight
// 0) whenever both match: kwok plays exactly one matching stage per change.
const faultWeight = 10000

func labelIs(kind string, values ...string) v1alpha1.MatchExpression {
	return v1alpha1.MatchExpression{Key: fmt.Sprintf(".metadata.labels[%q]", FaultLabel(kind)), Operator: v1alpha1.SelectorOpIn, Values: values}
}

func labelAbsent(kind string) v1alpha1.MatchExpression {
	return v1alpha1.MatchExpression{Key: fmt.Sprintf(".metadata.labels[%q]", FaultLabel(kind)), Operator: v1alpha1.SelectorOpDoesNotExist}
}

func conditionStatus(condition string, op v1alpha1.SelectorOperator, values ...string) v1alpha1.MatchExpression {
	return v1alpha1.MatchExpression{Key: fmt.Sprintf(`.status.conditions.[] | select( .type == %q ) | .status`, condition), Operator: op, Values: values}
}

func annotation(kind, param string) string {
	return fmt.Sprintf("(index $a %q)", FaultAnnotation(kind, param))
}

// FaultStages are the kwok stages that play GhostFleet's faults. Each node
// fault stage fires once (its selector requires the condition not yet
// set), so kwok's heartbeat keeps the node otherwise alive: status
// patches are strategic merges keyed by condition type, and the heartbeat
// only writes the kubelet's own conditions, leaving the GPU ones alone.
func FaultStages() []*v1alpha1.Stage {
	var out []*v1alpha1.Stage
	node := v1alpha1.StageResourceRef{APIGroup: "v1", Kind: "Node"}
	pod := v1alpha1.StageResourceRef{APIGroup: "v1", Kind: "Pod"}
	for _, f := range ConditionFaults {
		out = append(out,
			stage("ghostfleet-fault-"+f.Kind, node, []v1alpha1.MatchExpression{
				labelIs(f.Kind, FaultActive),
				conditionStatus(f.Condition, v1alpha1.SelectorOpNotIn, "True"),
			}, nil, conditionFaultTemplate(f), &v1alpha1.StageEvent{Type: "Warning", Reason: f.Condition, Message: "GPU health check failed (" + f.Kind + ", injected by GhostFleet)"}),
			stage("ghostfleet-clear-"+f.Kind, node, []v1alpha1.MatchExpression{
				labelAbsent(f.Kind),
				conditionStatus(f.Condition, v1alpha1.SelectorOpIn, "True"),
			}, nil, conditionClearTemplate(f), &v1alpha1.StageEvent{Type: "Normal", Reason: f.Healthy, Message: "GPU health check passes again (" + f.Kind + ")"}),
		)
	}
	// A node whose kubelet stopped: the node lifecycle controller's view
	// (every condition Unknown), written once; kwok's node-initialize
	// leaves such nodes alone (see Stages) until the marker is removed,
	// then brings them back Ready.
	out = append(out, stage("ghostfleet-fault-"+FaultNodeDown, node, []v1alpha1.MatchExpression{
		labelIs(FaultNodeDown, FaultActive),
		conditionStatus("Ready", v1alpha1.SelectorOpIn, "True"),
	}, nil, nodeDownTemplate, &v1alpha1.StageEvent{Type: "Warning", Reason: "NodeNotReady", Message: "kubelet stopped posting node status (injected by GhostFleet)"}))

	// Pod faults fire at a time taken by kwok itself: between the
	// not-before and not-after annotations (absolute times, so a re-match
	// after another change to the pod keeps the same window).
	delay := func(kind string) *v1alpha1.StageDelay {
		zero := int64(0)
		return &v1alpha1.StageDelay{
			DurationMilliseconds:       &zero,
			DurationFrom:               &v1alpha1.ExpressionFrom{ExpressionFrom: fmt.Sprintf(".metadata.annotations[%q]", FaultAnnotation(kind, "not-before"))},
			JitterDurationMilliseconds: &zero,
			JitterDurationFrom:         &v1alpha1.ExpressionFrom{ExpressionFrom: fmt.Sprintf(".metadata.annotations[%q]", FaultAnnotation(kind, "not-after"))},
		}
	}
	notDeleting := v1alpha1.MatchExpression{Key: ".metadata.deletionTimestamp", Operator: v1alpha1.SelectorOpDoesNotExist}
	out = append(out,
		stage("ghostfleet-fault-"+FaultPodExit, pod, []v1alpha1.MatchExpression{
			labelIs(FaultPodExit, FaultActive), notDeleting,
			{Key: ".status.phase", Operator: v1alpha1.SelectorOpIn, Values: []string{"Running"}},
		}, delay(FaultPodExit), podExitTemplate, nil),
		stage("ghostfleet-fault-"+FaultPodInitExit, pod, []v1alpha1.MatchExpression{
			labelIs(FaultPodInitExit, FaultActive), notDeleting,
			{Key: ".status.phase", Operator: v1alpha1.SelectorOpIn, Values: []string{"Pending", "Running"}},
		}, delay(FaultPodInitExit), podInitExitTemplate, nil),
	)
	// Clearing a pod fault that has not fired yet: kwok keeps one pending
	// job per object and replaces it when another stage matches, so a
	// stage that matches the cleared marker cancels the scheduled failure,
	// and removes the marker to hand the pod back to kwok's lifecycle.
	for _, kind := range []string{FaultPodExit, FaultPodInitExit} {
		s := stage("ghostfleet-clear-"+kind, pod, []v1alpha1.MatchExpression{
			labelIs(kind, FaultCleared), notDeleting,
		}, nil, "", &v1alpha1.StageEvent{Type: "Normal", Reason: "FaultCleared", Message: "pending " + kind + " fault cleared by GhostFleet"})
		merge := v1alpha1.StagePatchTypeMergePatch
		s.Spec.Next.Patches = []v1alpha1.StagePatch{{
			Root: "metadata",
			Type: &merge,
			Template: fmt.Sprintf("labels:\n  %q: null\nannotations:\n  %q: null\n  %q: null\n",
				FaultLabel(kind), FaultAnnotation(kind, "not-before"), FaultAnnotation(kind, "not-after")),
		}}
		out = append(out, s)
	}
	return out
}

func stage(name string, ref v1alpha1.StageResourceRef, exprs []v1alpha1.MatchExpression, delay *v1alpha1.StageDelay, tpl string, event *v1alpha1.StageEvent) *v1alpha1.Stage {
	s := &v1alpha1.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StageSpec{
			ResourceRef: ref,
			Selector:    &v1alpha1.StageSelector{MatchExpressions: exprs},
			Weight:      faultWeight,
			Delay:       delay,
			Next:        &v1alpha1.StageNext{StatusTemplate: tpl, Event: event},
		},
	}
	s.APIVersion, s.Kind = v1alpha1.GroupVersion.String(), v1alpha1.StageKind
	return s
}

const conditionEntry = `- type: %q
  status: %s
  reason: {{ %s | Quote }}
  message: {{ %s | Quote }}
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
`

func conditionFaultTemplate(f ConditionFault) string {
	var b strings.Builder
	b.WriteString("{{ $now := Now }}\n{{ $a := or .metadata.annotations dict }}\n")
	fmt.Fprintf(&b, "{{ $reason := or %s %q }}\n{{ $message := or %s %q }}\n",
		annotation(f.Kind, "reason"), f.Reason, annotation(f.Kind, "message"), f.Message)
	b.WriteString("conditions:\n")
	fmt.Fprintf(&b, conditionEntry, f.Condition, `"True"`, "$reason", "$message")
	if f.Extra != "" {
		fmt.Fprintf(&b, "{{ if eq (or %s \"\") \"true\" }}\n", annotation(f.Kind, "extra"))
		fmt.Fprintf(&b, conditionEntry, f.Extra, `"True"`, "$reason", "$message")
		b.WriteString("{{ end }}\n")
	}
	if f.LowerGPUs {
		b.WriteString(`{{ with .status.capacity }}{{ with index . "` + ResourceGPU + `" }}
allocatable:
  ` + ResourceGPU + `: {{ max 0 (sub (atoi .) 1) | toString | Quote }}
{{ end }}{{ end }}
`)
	}
	return b.String()
}

func conditionClearTemplate(f ConditionFault) string {
	var b strings.Builder
	b.WriteString("{{ $now := Now }}\nconditions:\n")
	fmt.Fprintf(&b, conditionEntry, f.Condition, `"False"`, fmt.Sprintf("%q", f.Healthy), fmt.Sprintf("%q", f.HealthyMessage))
	if f.Extra != "" {
		fmt.Fprintf(&b, "{{ range .status.conditions }}{{ if and (eq .type %q) (eq .status \"True\") }}\n", f.Extra)
		fmt.Fprintf(&b, conditionEntry, f.Extra, `"False"`, fmt.Sprintf("%q", "No"+f.Extra), fmt.Sprintf("%q", f.HealthyMessage))
		b.WriteString("{{ end }}{{ end }}\n")
	}
	if f.LowerGPUs {
		b.WriteString(`{{ with .status.capacity }}{{ with index . "` + ResourceGPU + `" }}
allocatable:
  ` + ResourceGPU + `: {{ . | Quote }}
{{ end }}{{ end }}
`)
	}
	return b.String()
}

// nodeDownTemplate is what the node lifecycle controller writes when a
// kubelet stops posting status: every kubelet condition Unknown.
const nodeDownTemplate = `{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- type: {{ .type | Quote }}
  status: "Unknown"
  reason: "NodeStatusUnknown"
  message: "Kubelet stopped posting node status."
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
`

// podExitTemplate is kwok's pod-container-running-failed chaos stage with
// GhostFleet's annotations: the chosen container (or every one)
// terminates with the exit code and reason; the pod fails, or succeeds
// when the code is 0 (restarts are the kubelet's business, and there is
// none).
var podExitTemplate = `{{ $now := Now }}
{{ $a := or .metadata.annotations dict }}
{{ $container := or ` + annotation(FaultPodExit, "container") + ` "" }}
{{ $code := or ` + annotation(FaultPodExit, "exit-code") + ` "1" }}
{{ $reason := or ` + annotation(FaultPodExit, "reason") + ` "Error" }}
{{ $message := or ` + annotation(FaultPodExit, "message") + ` "" }}
conditions:
- type: Ready
  status: "False"
  reason: PodFailed
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: PodFailed
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
{{ if or (not $container) (eq .name $container) }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {{ $code }}
      reason: {{ $reason | Quote }}
      message: {{ $message | Quote }}
      startedAt: {{ or $.status.startTime $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ else }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ or $.status.startTime $now | Quote }}
{{ end }}
{{ end }}
phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
`

// podInitExitTemplate is kwok's pod-init-container-running-failed chaos
// stage with GhostFleet's annotations: a failed pre-flight check. The
// chosen init container (or the first) terminates with the exit code;
// the app containers never start.
var podInitExitTemplate = `{{ $now := Now }}
{{ $a := or .metadata.annotations dict }}
{{ $container := or ` + annotation(FaultPodInitExit, "container") + ` "" }}
{{ $code := or ` + annotation(FaultPodInitExit, "exit-code") + ` "1" }}
{{ $reason := or ` + annotation(FaultPodInitExit, "reason") + ` "Error" }}
{{ $message := or ` + annotation(FaultPodInitExit, "message") + ` "" }}
{{ $failed := false }}
conditions:
- type: Initialized
  status: "False"
  reason: ContainersNotInitialized
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "False"
  reason: PodFailed
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: PodFailed
  lastTransitionTime: {{ $now | Quote }}
initContainerStatuses:
{{ range $i, $c := .spec.initContainers }}
{{ if and (not $failed) (or (eq $c.name $container) (and (not $container) (eq $i 0))) }}
{{ $failed = true }}
- image: {{ $c.image | Quote }}
  name: {{ $c.name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {{ $code }}
      reason: {{ $reason | Quote }}
      message: {{ $message | Quote }}
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ else if not $failed }}
- image: {{ $c.image | Quote }}
  name: {{ $c.name | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ else }}
- image: {{ $c.image | Quote }}
  name: {{ $c.name | Quote }}
  ready: false
  restartCount: 0
  state:
    waiting:
      reason: PodInitializing
{{ end }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: PodInitializing
{{ end }}
phase: Failed
`
