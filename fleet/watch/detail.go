package watch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// The informers keep only what the map needs (slim); what one node holds
// in full is fetched when someone asks, here. Reads ask for
// ResourceVersion "0": the API server answers from its watch cache, not
// etcd, so a view refreshed every second while it is open costs the fleet
// little.

// NodeDetail is one node in full, as the console's detail view shows it.
type NodeDetail struct {
	At     time.Time
	Name   string
	Labels []Label // the ones that matter, in a fixed order
	// Conditions abnormal first (a GPU fault, NotReady), then the rest.
	Conditions  []Condition
	Taints      []string // key=value:Effect
	Cordoned    bool
	Ready       bool
	GPUCapacity int64
	GPUAlloc    int64 // allocatable: a faulted GPU leaves it
	GPUUsed     int64 // requested by the node's pods that are not finished
	Pods        []PodDetail
}

// Label is a label key (shortened where a filter takes the short name)
// and value.
type Label struct{ Key, Value string }

// Condition is a node condition with why.
type Condition struct {
	Type, Status, Reason, Message string
	Since                         time.Time
	// Abnormal: a fault's condition True, or Ready not True.
	Abnormal bool
}

// PodDetail is one pod on the node; Exits are its terminated containers
// that did not exit 0.
type PodDetail struct {
	Namespace, Name, Phase, Reason string
	GPUs                           int64
	Exits                          []ContainerExit
}

// ContainerExit is how a container ended.
type ContainerExit struct {
	Container, Reason, Message string
	ExitCode                   int32
}

// shownLabels are the labels the detail view shows, with the short names
// a filter also accepts (see LabelAliases).
var shownLabels = []struct{ short, key string }{
	{"gpu.product", "nvidia.com/gpu.product"},
	{"gpu.count", "nvidia.com/gpu.count"},
	{"gpu.family", "nvidia.com/gpu.family"},
	{"gpu.machine", "nvidia.com/gpu.machine"},
	{"rack", fleet.LabelRack},
	{"nvlink", fleet.LabelNVLink},
	{"block", fleet.LabelBlock},
	{"zone", fleet.LabelZone},
	{"profile", fleet.LabelGPUProfile},
}

// LabelAliases maps the short label names a filter takes to label keys.
func LabelAliases() map[string]string {
	m := make(map[string]string, len(shownLabels)+1)
	for _, l := range shownLabels {
		m[l.short] = l.key
	}
	m["nvlink-domain"] = fleet.LabelNVLink
	return m
}

// Inspector fetches one node's details, or the nodes a label or pod
// phase selects, on demand.
type Inspector struct{ cs kubernetes.Interface }

// NewInspector returns an Inspector reading through cs.
func NewInspector(cs kubernetes.Interface) Inspector { return Inspector{cs: cs} }

var fromCache = metav1.ListOptions{ResourceVersion: "0"}

// Node fetches node name and the pods bound to it.
func (in Inspector) Node(ctx context.Context, name string) (NodeDetail, error) {
	n, err := in.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return NodeDetail{}, fmt.Errorf("node %s: %w", name, err)
	}
	opts := fromCache
	opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", name).String()
	pods, err := in.cs.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return NodeDetail{}, fmt.Errorf("pods on node %s: %w", name, err)
	}
	var on []*corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName == name { // a fake clientset ignores field selectors
			on = append(on, p)
		}
	}
	return Detail(n, on, time.Now()), nil
}

// Detail is what the detail view shows of node n with pods.
func Detail(n *corev1.Node, pods []*corev1.Pod, at time.Time) NodeDetail {
	d := NodeDetail{At: at, Name: n.Name, Cordoned: n.Spec.Unschedulable}
	for _, l := range shownLabels {
		if v, ok := n.Labels[l.key]; ok {
			d.Labels = append(d.Labels, Label{l.short, v})
		}
	}
	var faults []Label // the fault markers, whatever their kind
	for k, v := range n.Labels {
		if strings.HasPrefix(k, fleet.FaultPrefix) {
			faults = append(faults, Label{k, v})
		}
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].Key < faults[j].Key })
	d.Labels = append(d.Labels, faults...)
	for _, c := range n.Status.Conditions {
		cond := Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
		switch {
		case c.Type == corev1.NodeReady:
			d.Ready = c.Status == corev1.ConditionTrue
			cond.Abnormal = !d.Ready
		default:
			cond.Abnormal = c.Status == corev1.ConditionTrue && !healthyConditions[c.Type] ||
				healthyConditions[c.Type] && c.Status != corev1.ConditionFalse
		}
		d.Conditions = append(d.Conditions, cond)
	}
	sort.SliceStable(d.Conditions, func(i, j int) bool { return d.Conditions[i].Abnormal && !d.Conditions[j].Abnormal })
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		d.Taints = append(d.Taints, s+":"+string(t.Effect))
	}
	if q, ok := n.Status.Capacity[fleet.ResourceGPU]; ok {
		d.GPUCapacity = q.Value()
	}
	if q, ok := n.Status.Allocatable[fleet.ResourceGPU]; ok {
		d.GPUAlloc = q.Value()
	}
	for _, p := range pods {
		pd := PodDetail{Namespace: p.Namespace, Name: p.Name, Phase: string(p.Status.Phase), Reason: p.Status.Reason, GPUs: fleet.PodGPUs(p)}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			d.GPUUsed += pd.GPUs
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				pd.Exits = append(pd.Exits, ContainerExit{Container: cs.Name, ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message})
			}
		}
		d.Pods = append(d.Pods, pd)
	}
	sort.SliceStable(d.Pods, func(i, j int) bool {
		a, b := phaseRank(d.Pods[i].Phase), phaseRank(d.Pods[j].Phase)
		if a != b {
			return a < b
		}
		return d.Pods[i].Namespace+"/"+d.Pods[i].Name < d.Pods[j].Namespace+"/"+d.Pods[j].Name
	})
	return d
}

// phaseRank orders pods as someone chasing a failure reads them: failed
// first, then pending, running, done.
func phaseRank(phase string) int {
	switch corev1.PodPhase(phase) {
	case corev1.PodFailed:
		return 0
	case corev1.PodPending:
		return 1
	case corev1.PodRunning:
		return 2
	case corev1.PodSucceeded:
		return 4
	}
	return 3
}

// NodeQuery selects nodes the informers' slim copies cannot: by any
// label, or by having a pod in a phase.
type NodeQuery struct {
	LabelKey, LabelValue string
	PodPhase             corev1.PodPhase
}

// Nodes returns the names of the nodes q selects.
func (in Inspector) Nodes(ctx context.Context, q NodeQuery) (map[string]bool, error) {
	out := map[string]bool{}
	if q.PodPhase != "" {
		opts := fromCache
		opts.FieldSelector = fields.OneTermEqualSelector("status.phase", string(q.PodPhase)).String()
		pods, err := in.cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s pods: %w", q.PodPhase, err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == q.PodPhase && p.Spec.NodeName != "" {
				out[p.Spec.NodeName] = true
			}
		}
		return out, nil
	}
	opts := fromCache
	sel, err := labels.ValidatedSelectorFromSet(labels.Set{q.LabelKey: q.LabelValue})
	if err != nil {
		return nil, fmt.Errorf("%s=%s is not a label selector: %w", q.LabelKey, q.LabelValue, err)
	}
	opts.LabelSelector = sel.String()
	nodes, err := in.cs.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing nodes with %s=%s: %w", q.LabelKey, q.LabelValue, err)
	}
	for _, n := range nodes.Items {
		out[n.Name] = true
	}
	return out, nil
}
