package watch

import (
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// FleetView is one immutable picture of the fleet, computed off the UI
// goroutine: the console reads it and never the informers' caches.
type FleetView struct {
	At    time.Time
	Nodes []NodeCell // ordered by rack, then name
	// Racked is set when nodes carry a rack label: the map groups by it.
	Racked      bool
	RackSize    int // nodes of the largest rack
	Ready       int
	NotReady    int
	Faulted     int
	GPUs        int64 // allocatable
	GPUsUsed    int64 // requested by pods bound and not finished, or allocated to claims
	Pending     int
	Running     int
	Succeeded   int
	Failed      int
	Unscheduled int // pending and not bound to a node
	// CPURequested (millicores) and MemoryRequested (bytes) are what pods
	// bound and not finished request; Usage is what the pods use, from
	// metrics.k8s.io, nil when the cluster serves no metrics API.
	CPURequested    int64
	MemoryRequested int64
	Usage           *fleet.PodUsage
}

// NodeCell is what the map needs of one node.
type NodeCell struct {
	Name     string
	Rack     string
	GPUs     int64
	Used     int64
	Ready    bool
	Faulted  bool
	Cordoned bool
}

// faultTaintPrefix marks taints a GPU health operator sets.
const faultTaintPrefix = "nvidia.com/"

// healthyConditions are the node conditions whose True (or, for Ready,
// False) status is normal; any other condition that is True is a fault.
var healthyConditions = map[corev1.NodeConditionType]bool{
	corev1.NodeReady: true, corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true,
	corev1.NodePIDPressure: true, corev1.NodeNetworkUnavailable: true,
}

// Devices are the GPUs offered and held through DRA, by node
// (fleet.SliceGPUs, fleet.ClaimGPUs): on a fleet up with --gpu-model dra
// nodes have no nvidia.com/gpu and pods request none; their GPUs are
// devices in ResourceSlices and their allocations are in ResourceClaims.
// Zero (nil maps) on a fleet without.
type Devices struct {
	Published, Allocated map[string]int64
}

// Build summarises nodes and pods. Pods on nodes that are not in the list
// still count in the phase totals.
func Build(nodes []*corev1.Node, pods []*corev1.Pod, at time.Time) FleetView {
	return BuildWith(nodes, pods, Devices{}, at)
}

// BuildWith is Build that also counts GPUs offered and held through DRA,
// each device as one GPU, like nvidia.com/gpu.
func BuildWith(nodes []*corev1.Node, pods []*corev1.Pod, d Devices, at time.Time) FleetView {
	return buildNodes(nodes, d.Published).withPods(pods, d.Allocated, at)
}

// nodeView is the part of a view that only the nodes and the devices they
// publish decide: the cells in map order, the node counts and the
// allocatable GPUs. The console rebuilds it only when one of those
// changed: node events are rare next to a churn's pod events, and sorting
// and scanning 1,000 nodes twice a second was a quarter of the console's
// CPU during a churn.
type nodeView struct {
	v     FleetView // without At, Used, GPUsUsed and the pod counts
	index map[string]int
}

func buildNodes(nodes []*corev1.Node, published map[string]int64) nodeView {
	v := FleetView{Nodes: make([]NodeCell, 0, len(nodes))}
	racks := map[string]int{}
	for _, n := range nodes {
		c := NodeCell{Name: n.Name, Rack: n.Labels[fleet.LabelRack], Cordoned: n.Spec.Unschedulable}
		if q, ok := n.Status.Allocatable[fleet.ResourceGPU]; ok {
			c.GPUs = q.Value()
		}
		c.GPUs += published[n.Name]
		for _, cond := range n.Status.Conditions {
			switch {
			case cond.Type == corev1.NodeReady:
				c.Ready = cond.Status == corev1.ConditionTrue
			case !healthyConditions[cond.Type] && cond.Status == corev1.ConditionTrue:
				c.Faulted = true
			}
		}
		for _, t := range n.Spec.Taints {
			if strings.HasPrefix(t.Key, faultTaintPrefix) {
				c.Faulted = true
			}
		}
		if c.Rack != "" {
			racks[c.Rack]++
			v.Racked = true
		}
		v.Nodes = append(v.Nodes, c)
		v.GPUs += c.GPUs
	}
	sort.Slice(v.Nodes, func(i, j int) bool {
		a, b := v.Nodes[i], v.Nodes[j]
		if a.Rack != b.Rack {
			return a.Rack < b.Rack
		}
		return a.Name < b.Name
	})
	index := make(map[string]int, len(nodes))
	for i, c := range v.Nodes {
		index[c.Name] = i
		if c.Ready {
			v.Ready++
		} else {
			v.NotReady++
		}
		if c.Faulted {
			v.Faulted++
		}
	}
	for _, n := range racks {
		v.RackSize = max(v.RackSize, n)
	}
	return nodeView{v: v, index: index}
}

// withPods completes the view with what pods and claims hold, on a copy
// of the cells: the nodeView is reused by later views.
func (b nodeView) withPods(pods []*corev1.Pod, allocated map[string]int64, at time.Time) FleetView {
	v := b.v
	v.At = at
	v.Nodes = slices.Clone(b.v.Nodes)
	for i := range v.Nodes {
		v.Nodes[i].Used = allocated[v.Nodes[i].Name]
		v.GPUsUsed += v.Nodes[i].Used
	}
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			v.Succeeded++
			continue
		case corev1.PodFailed:
			v.Failed++
			continue
		case corev1.PodRunning:
			v.Running++
		default:
			v.Pending++
			if p.Spec.NodeName == "" {
				v.Unscheduled++
			}
		}
		i, ok := b.index[p.Spec.NodeName]
		if !ok {
			continue
		}
		cpu, mem := podRequests(p)
		v.CPURequested += cpu
		v.MemoryRequested += mem
		g := fleet.PodGPUs(p)
		v.Nodes[i].Used += g
		v.GPUsUsed += g
	}
	return v
}
