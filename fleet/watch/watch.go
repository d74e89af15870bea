package watch

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// Fleet keeps node and pod informers (and, on a cluster serving DRA,
// ResourceSlice and ResourceClaim informers) and sends a FleetView on the
// returned channel at most once per interval, and only after something
// changed; the first view is there when Fleet returns. The informers'
// handlers only mark the fleet changed: views are built on this package's
// goroutine and cross to the reader as values, so no reader ever shares
// the caches. A view the reader has not taken yet is replaced, never
// queued. The channel closes when ctx ends.
func Fleet(ctx context.Context, cs kubernetes.Interface, interval time.Duration) (<-chan FleetView, error) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(slim))
	nodes := f.Core().V1().Nodes()
	pods := f.Core().V1().Pods()
	// Nodes and the devices they publish change rarely; pods and claims
	// change with every run: each kind has its flag, so a churn rebuilds
	// only the pods' part of the view (nodeView).
	var nodesDirty, podsDirty atomic.Bool
	markNodes, markPods := marker(&nodesDirty), marker(&podsDirty)
	if _, err := nodes.Informer().AddEventHandler(markNodes); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(markPods); err != nil {
		return nil, err
	}
	published := func() map[string]int64 { return nil }
	allocated := func() map[string]int64 { return nil }
	if servesDRA(cs) {
		slices := f.Resource().V1().ResourceSlices()
		claims := f.Resource().V1().ResourceClaims()
		if _, err := slices.Informer().AddEventHandler(markNodes); err != nil {
			return nil, err
		}
		if _, err := claims.Informer().AddEventHandler(markPods); err != nil {
			return nil, err
		}
		published = func() map[string]int64 {
			ss, _ := slices.Lister().List(labels.Everything())
			return fleet.SliceGPUs(ss)
		}
		allocated = func() map[string]int64 {
			cl, _ := claims.Lister().List(labels.Everything())
			return fleet.ClaimGPUs(cl)
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			f.Shutdown()
			return nil, fmt.Errorf("listing %v: %w", typ, context.Cause(ctx))
		}
	}
	out := make(chan FleetView, 1)
	var base nodeView
	// A flag is cleared before its objects are listed: a change during a
	// build marks it again and the next tick rebuilds.
	build := func(first bool) FleetView {
		if nodesDirty.Swap(false) || first {
			ns, _ := nodes.Lister().List(labels.Everything())
			base = buildNodes(ns, published())
		}
		podsDirty.Store(false)
		ps, _ := pods.Lister().List(labels.Everything())
		return base.withPods(ps, allocated(), time.Now())
	}
	usage := startUsage(ctx, cs, usageEvery, &podsDirty)
	build = withUsage(build, usage)
	out <- build(true)
	go func() {
		defer close(out)
		defer f.Shutdown()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !nodesDirty.Load() && !podsDirty.Load() {
					continue
				}
				v := build(false)
				select { // replace a view the reader has not taken yet
				case <-out:
				default:
				}
				out <- v
			}
		}
	}()
	return out, nil
}

// marker is an event handler that only sets its flag, and not for an
// update that changed nothing the view reads.
func marker(dirty *atomic.Bool) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { dirty.Store(true) },
		UpdateFunc: func(old, cur any) {
			if !sameForView(old, cur) {
				dirty.Store(true)
			}
		},
		DeleteFunc: func(any) { dirty.Store(true) },
	}
}

// sameForView says an update changed nothing the view reads. The caches
// hold only what it reads (slim), so such an update differs in its
// resource version alone: kwok renewing a node's heartbeat, which at
// 5,000 nodes had the console rebuild every node's cell every second (42 %
// of its CPU on an idle fleet).
func sameForView(old, cur any) bool {
	switch a := old.(type) {
	case *corev1.Node:
		b, ok := cur.(*corev1.Node)
		return ok && sameButVersion(*a, *b, func(n *corev1.Node) *metav1.ObjectMeta { return &n.ObjectMeta })
	case *corev1.Pod:
		b, ok := cur.(*corev1.Pod)
		return ok && sameButVersion(*a, *b, func(p *corev1.Pod) *metav1.ObjectMeta { return &p.ObjectMeta })
	}
	return false
}

// sameButVersion compares copies of a and b without their resource
// versions.
func sameButVersion[T any](a, b T, meta func(*T) *metav1.ObjectMeta) bool {
	meta(&a).ResourceVersion, meta(&b).ResourceVersion = "", ""
	return equality.Semantic.DeepEqual(a, b)
}

// slim keeps only what Build reads, so 8,000 pods cost the console little
// memory: no managed fields, annotations, env or status details.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		p := &corev1.Pod{ObjectMeta: slimMeta(o.ObjectMeta, nil)}
		p.Spec.NodeName = o.Spec.NodeName
		p.Spec.Containers = slimRequests(o)
		p.Status.Phase = o.Status.Phase
		return p, nil
	case *corev1.Node:
		n := &corev1.Node{ObjectMeta: slimMeta(o.ObjectMeta, map[string]string{fleet.LabelRack: o.Labels[fleet.LabelRack]})}
		n.Spec.Unschedulable = o.Spec.Unschedulable
		n.Spec.Taints = o.Spec.Taints
		if q, ok := o.Status.Allocatable[fleet.ResourceGPU]; ok {
			n.Status.Allocatable = corev1.ResourceList{fleet.ResourceGPU: q}
		}
		for _, c := range o.Status.Conditions {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c.Type, Status: c.Status})
		}
		return n, nil
	case *resourcev1.ResourceSlice:
		sl := &resourcev1.ResourceSlice{ObjectMeta: slimMeta(o.ObjectMeta, nil)}
		sl.Spec.Driver, sl.Spec.NodeName = o.Spec.Driver, o.Spec.NodeName
		sl.Spec.Devices = make([]resourcev1.Device, len(o.Spec.Devices)) // counted, never read
		return sl, nil
	case *resourcev1.ResourceClaim:
		c := &resourcev1.ResourceClaim{ObjectMeta: slimMeta(o.ObjectMeta, nil)}
		if a := o.Status.Allocation; a != nil {
			c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: a.Devices.Results}}
		}
		return c, nil
	default: // tombstones and the like pass through
		return obj, nil
	}
}

// servesDRA says whether the cluster serves resource.k8s.io/v1 (DRA, GA
// in 1.34): informers on a group it does not serve would never sync.
func servesDRA(cs kubernetes.Interface) bool {
	_, err := cs.Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String())
	return err == nil
}

func slimMeta(m metav1.ObjectMeta, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: labels}
}
