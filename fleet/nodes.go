package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// Labels, annotations and taints GhostFleet puts on its fake nodes.
const (
	LabelManaged    = "ghostfleet.io/managed"
	LabelGPUProfile = "ghostfleet.io/gpu-profile"
	LabelRack       = "topology.ghostfleet.io/rack"
	LabelBlock      = "topology.ghostfleet.io/block"
	LabelNVLink     = "topology.ghostfleet.io/nvlink-domain"
	LabelZone       = "topology.kubernetes.io/zone"
	LabelRegion     = "topology.kubernetes.io/region"
	// LabelType is kwokctl's own marker label for fake nodes.
	LabelType = "type"
	// AnnotationFake is what the kwok controller selects the nodes it
	// manages by.
	AnnotationFake = "kwok.x-k8s.io/node"
	// TaintFake keeps everything that does not tolerate it off fake nodes.
	TaintFake = "kwok.x-k8s.io/node"

	// NodePrefix starts every GhostFleet node name.
	NodePrefix = "gf-node-"
	// MaxNodes is the largest fleet `nodes` accepts. Beyond it the kwok
	// controller's heartbeats alone saturate a 2-core machine.
	MaxNodes = 10000

	nodesPerBlock = 32  // a scalable unit: the servers under one leaf switch group
	nodesPerZone  = 256 // a data hall
)

// NodeName is the name of the node with index i.
func NodeName(i int) string { return fmt.Sprintf("%s%05d", NodePrefix, i) }

func nodeIndex(name string) (int, bool) {
	if !strings.HasPrefix(name, NodePrefix) {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(name, NodePrefix))
	return i, err == nil && i >= 0
}

// NewNode builds fake GPU node number i of profile p: GPU feature
// discovery labels, topology labels, kwok's fake-node annotation and a
// taint so that only workloads meant for the fake fleet land there.
func NewNode(p GPUProfile, i int) *corev1.Node {
	rack := i / p.NodesPerRack
	arch := profileArch(p)
	name := NodeName(i)
	capacity := profileCapacity(p)
	labels := profileLabels(p)
	for k, v := range map[string]string{
		"kubernetes.io/hostname":           name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               arch,
		"node.kubernetes.io/instance-type": p.Machine,
		LabelRegion:                        "ghostfleet",
		LabelZone:                          fmt.Sprintf("zone-%c", 'a'+rune(i/nodesPerZone%26)),
		LabelBlock:                         fmt.Sprintf("block-%03d", i/nodesPerBlock),
		LabelRack:                          fmt.Sprintf("rack-%04d", rack),
		LabelNVLink:                        fmt.Sprintf("nvl-%05d", i/p.NodesPerNVLinkDomain),
	} {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				AnnotationFake:                 "fake",
				"node.alpha.kubernetes.io/ttl": "0",
				AnnotationResourceMetricsPath:  ResourceMetricsPath(name),
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: TaintFake, Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			// kwok serves every node on this host; metrics-server scrapes
			// a node at its InternalIP. Given here, the stages keep them:
			// kwok's own address template writes an empty list over a node
			// that lacks one when its --node-ip is empty, as kwokctl
			// leaves it on 127.0.0.1.
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: BindAddress},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    arch,
				OperatingSystem: "linux",
				KubeletVersion:  "fake",
			},
		},
	}
}

// ValidateNodeCount checks a requested fleet size.
func ValidateNodeCount(n int) error {
	if n < 0 || n > MaxNodes {
		return fmt.Errorf("node count %d is out of range: allowed are 0-%d", n, MaxNodes)
	}
	return nil
}

// ParseNodeCount parses a node count argument.
func ParseNodeCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("node count %q is not a whole number: allowed are 0-%d", s, MaxNodes)
	}
	return n, ValidateNodeCount(n)
}

// ScaleOptions configures Scale.
type ScaleOptions struct {
	Count   int
	Profile GPUProfile
	// GPUModel is how new nodes offer their GPUs (GPUModels); empty keeps
	// the fleet's: that of its nodes, extended when it has none.
	GPUModel string
	// DRAExtendedResource makes a DRA fleet's DeviceClass also serve pods
	// that ask for nvidia.com/gpu (NewDeviceClass); a fleet keeps it once
	// set. Refused on a fleet whose model is not dra.
	DRAExtendedResource bool
	// Workers is how many requests are in flight at once.
	Workers int
	// WaitReady waits until every node reports Ready, then until every
	// node is schedulable: the node lifecycle controller has lifted the
	// not-ready taint that admission puts on each new node.
	WaitReady bool
	Report    progress.Func
}

// ScaleResult says what Scale did and how long it took.
type ScaleResult struct {
	Created, Deleted, Kept int
	// Autoscaled counts the nodes Karpenter made, which Scale leaves to it.
	Autoscaled int
	// GPUModel is the model the fleet's nodes use.
	GPUModel string
	// Slices counts ResourceSlices created (DRA only).
	Slices int
	// OtherProfiles counts kept nodes of a profile other than the requested.
	OtherProfiles map[string]int
	CreateTime    time.Duration // until every create/delete was answered
	ReadyTime     time.Duration // until all Count nodes were Ready (0 if not waited)
	// SchedulableTime is until all Count nodes were schedulable (0 if not
	// waited): Ready and free of the not-ready and unreachable taints.
	SchedulableTime time.Duration
}

// Scale makes the fleet have exactly opts.Count GhostFleet nodes: it keeps
// nodes 0..Count-1 that exist, creates the missing ones and deletes the
// rest. It only ever deletes nodes that carry GhostFleet's label and
// kwok's fake-node annotation, and never those Karpenter made.
func Scale(ctx context.Context, cs kubernetes.Interface, opts ScaleOptions) (ScaleResult, error) {
	if err := ValidateNodeCount(opts.Count); err != nil {
		return ScaleResult{}, err
	}
	report := opts.Report
	if report == nil {
		report = progress.Discard
	}
	if opts.Workers <= 0 {
		opts.Workers = 64
	}
	start := time.Now()
	existing, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true"})
	if err != nil {
		return ScaleResult{}, fmt.Errorf("listing nodes: %w", err)
	}
	res := ScaleResult{OtherProfiles: map[string]int{}}
	have := map[int]bool{}
	var toDelete []string
	var kept []*corev1.Node
	models := map[string]int{}
	for k := range existing.Items {
		n := &existing.Items[k]
		if n.Annotations[AnnotationFake] != "fake" {
			continue // not ours to touch, whatever its labels say
		}
		if IsKarpenterNode(n) {
			res.Autoscaled++ // Karpenter's to add and remove
			continue
		}
		i, ok := nodeIndex(n.Name)
		if !ok || i >= opts.Count {
			toDelete = append(toDelete, n.Name)
			continue
		}
		have[i] = true
		kept = append(kept, n)
		res.Kept++
		models[nodeGPUModel(n)]++
		if p := n.Labels[LabelGPUProfile]; p != opts.Profile.Name {
			res.OtherProfiles[p]++
		}
	}
	if res.GPUModel, err = fleetGPUModel(opts.GPUModel, models); err != nil {
		return res, err
	}
	var toCreate []int
	for i := 0; i < opts.Count; i++ {
		if !have[i] {
			toCreate = append(toCreate, i)
		}
	}
	sort.Strings(toDelete)

	dra := res.GPUModel == GPUModelDRA
	if err := CheckDRAExtendedResource(opts.DRAExtendedResource, res.GPUModel); err != nil {
		return res, err
	}
	if dra && opts.Count > 0 {
		if err := EnsureDeviceClass(ctx, cs, opts.DRAExtendedResource); err != nil {
			return res, err
		}
	}
	created := make([]*corev1.Node, len(toCreate))
	if len(toCreate) > 0 {
		done := progress.Step(report, "create-nodes", fmt.Sprintf("creating %d %s nodes (GPUs as %s)", len(toCreate), opts.Profile.Name, res.GPUModel), 0)
		n, err := parallel(ctx, len(toCreate), opts.Workers, report, "create-nodes", func(ctx context.Context, k int) error {
			node := NewNode(opts.Profile, toCreate[k])
			if dra {
				node = asDRANode(node)
			}
			got, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			}
			created[k] = got
			return err
		})
		res.Created = n
		done()
		if err != nil {
			return res, fmt.Errorf("created %d of %d nodes: %w (run `ghostfleet nodes %d` again to finish)", n, len(toCreate), err, opts.Count)
		}
	}
	if dra && opts.Count > 0 {
		n, err := publishSlices(ctx, cs, opts, append(kept, slices.DeleteFunc(created, func(n *corev1.Node) bool { return n == nil })...), report)
		res.Slices = n
		if err != nil {
			return res, fmt.Errorf("published %d ResourceSlices: %w (run `ghostfleet nodes %d` again to finish)", n, err, opts.Count)
		}
	}
	if len(toDelete) > 0 {
		done := progress.Step(report, "delete-nodes", fmt.Sprintf("deleting %d nodes", len(toDelete)), 0)
		n, err := parallel(ctx, len(toDelete), opts.Workers, report, "delete-nodes", func(ctx context.Context, k int) error {
			err := cs.CoreV1().Nodes().Delete(ctx, toDelete[k], metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		res.Deleted = n
		done()
		if err != nil {
			return res, fmt.Errorf("deleted %d of %d nodes: %w (run `ghostfleet nodes %d` again to finish)", n, len(toDelete), err, opts.Count)
		}
	}
	res.CreateTime = time.Since(start)
	if opts.WaitReady && opts.Count > 0 {
		done := progress.Step(report, "ready-nodes", fmt.Sprintf("waiting for %d nodes to be Ready", opts.Count), 0)
		err := waitNodesReady(ctx, cs, LabelManaged+"=true", opts.Count, report, "ready-nodes")
		done()
		if err != nil {
			return res, err
		}
		res.ReadyTime = time.Since(start)
		// Admission (TaintNodesByCondition) gives every new node the
		// not-ready taint, and only the node lifecycle controller lifts
		// it, at its client QPS: about 4.8 nodes/s under the default
		// profile, so 1,000 Ready nodes take minutes to accept pods.
		done = progress.Step(report, "schedulable-nodes", fmt.Sprintf("waiting for the node lifecycle controller to lift the not-ready taint from %d nodes", opts.Count), 0)
		err = waitNodesSchedulable(ctx, cs, LabelManaged+"=true", opts.Count, report, "schedulable-nodes")
		done()
		if err != nil {
			return res, err
		}
		res.SchedulableTime = time.Since(start)
	}
	return res, nil
}

// fleetGPUModel is the model a scale gives new nodes: the one asked for,
// else that of the kept nodes, else extended. A fleet has one model:
// asking for another while nodes of the first stay is refused before
// anything changes.
func fleetGPUModel(asked string, kept map[string]int) (string, error) {
	if asked != "" {
		if err := CheckGPUModel(asked); err != nil {
			return "", err
		}
	}
	for _, m := range slices.Sorted(maps.Keys(kept)) {
		n := kept[m]
		if asked != "" && m != asked {
			return "", fmt.Errorf("--gpu-model %s: the fleet's %d kept nodes offer their GPUs as %s and a fleet has one GPU model; `ghostfleet nodes 0` first to change it", asked, n, m)
		}
		if asked == "" {
			asked = m
		}
	}
	if asked == "" {
		asked = GPUModelExtended
	}
	return asked, nil
}

// publishSlices creates the ResourceSlices nodes lack (see NewResourceSlice).
func publishSlices(ctx context.Context, cs kubernetes.Interface, opts ScaleOptions, nodes []*corev1.Node, report progress.Func) (int, error) {
	missing, err := missingSlices(ctx, cs, nodes)
	if err != nil || len(missing) == 0 {
		return 0, err
	}
	done := progress.Step(report, "publish-slices", fmt.Sprintf("publishing %d ResourceSlices (%s, %d GPUs each)", len(missing), DRADriver, opts.Profile.GPUs), 0)
	defer done()
	return parallel(ctx, len(missing), opts.Workers, report, "publish-slices", func(ctx context.Context, k int) error {
		p := opts.Profile
		if own, err := LookupGPUProfile(missing[k].Labels[LabelGPUProfile]); err == nil {
			p = own // a kept node of another profile publishes its own GPUs
		}
		_, err := cs.ResourceV1().ResourceSlices().Create(ctx, NewResourceSlice(p, missing[k]), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// parallel runs fn for k in [0,n) on workers goroutines, reporting progress
// at most every 200ms. It stops at the first error and returns how many
// calls succeeded.
func parallel(ctx context.Context, n, workers int, report progress.Func, step string, fn func(context.Context, int) error) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		ok       atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	stopReporting := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		// A progress ticker, not a condition: it reports until the work ends.
		wait.Until(func() {
			report(progress.Event{Kind: progress.Update, Step: step, Done: int(ok.Load()), Total: n})
		}, 200*time.Millisecond, stopReporting)
	}()
	workqueue.ParallelizeUntil(ctx, workers, n, func(k int) {
		if err := fn(ctx, k); err != nil {
			errOnce.Do(func() { firstErr = err; cancel() })
			return
		}
		ok.Add(1)
	})
	close(stopReporting)
	<-reported
	report(progress.Event{Kind: progress.Update, Step: step, Done: int(ok.Load()), Total: n})
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return int(ok.Load()), firstErr
}

// waitNodesReady waits until want nodes matching selector are Ready. The
// list is a consistent read: one at resourceVersion 0 may still hold nodes
// just deleted, Ready, and end the wait before the new ones are.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, selector string, want int, report progress.Func, step string) error {
	return poll(ctx, 5*time.Minute, func() (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			if NodeReady(&list.Items[i]) {
				ready++
			}
		}
		report(progress.Event{Kind: progress.Update, Step: step, Done: ready, Total: want})
		return ready >= want, nil
	})
}

// schedulableStall is how long waitNodesSchedulable waits for one more
// node to become schedulable before it gives up.
var schedulableStall = 2 * time.Minute

// waitNodesSchedulable waits until want nodes matching selector are
// schedulable. It has no fixed deadline (the taints go at the
// controller's pace, minutes for thousands of nodes) but gives up when
// none became schedulable for schedulableStall. Its lists come from the
// apiserver's cache (resourceVersion 0) every 2 s: a stale list only
// delays the end, and consistent lists of every node twice a second
// would compete with the controller it waits for.
func waitNodesSchedulable(ctx context.Context, cs kubernetes.Interface, selector string, want int, report progress.Func, step string) error {
	best, since := 0, time.Now()
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err == nil {
			n := 0
			for i := range list.Items {
				if NodeSchedulable(&list.Items[i]) {
					n++
				}
			}
			report(progress.Event{Kind: progress.Update, Step: step, Done: n, Total: want})
			if n >= want {
				return nil
			}
			if n > best {
				best, since = n, time.Now()
			}
		}
		if time.Since(since) > schedulableStall {
			if err != nil {
				return fmt.Errorf("%d of %d nodes schedulable, and listing nodes fails: %w", best, want, err)
			}
			return fmt.Errorf("%d of %d nodes schedulable, and none became so in %s: the rest still carry the %s or %s taint (is kube-controller-manager running? see `ghostfleet status`)", best, want, schedulableStall, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// NodeSchedulable reports whether the node is Ready and free of the
// taints the control plane puts on nodes that are not (not-ready,
// unreachable). Other taints, GhostFleet's own or a fault's, do not
// count: they keep off only the pods that do not tolerate them.
func NodeSchedulable(n *corev1.Node) bool {
	if !NodeReady(n) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
