package watch

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// usageEvery is how often the pods' use is read: metrics-server scrapes
// every 15 s, so reading more often would only repeat its figures.
const usageEvery = 15 * time.Second

// slimRequests is a pod's one container the view reads: the GPUs, CPU
// and memory all its containers request, summed.
func slimRequests(p *corev1.Pod) []corev1.Container {
	req := corev1.ResourceList{}
	if g := fleet.PodGPUs(p); g > 0 {
		req[fleet.ResourceGPU] = *resource.NewQuantity(g, resource.DecimalSI)
	}
	var cpu, mem int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	if cpu > 0 {
		req[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	}
	if mem > 0 {
		req[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	if len(req) == 0 {
		return nil
	}
	return []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: req}}}
}

// podRequests is the CPU (millicores) and memory (bytes) a pod requests.
func podRequests(p *corev1.Pod) (cpu, mem int64) {
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	return cpu, mem
}

// startUsage reads the pods' use from metrics.k8s.io now and then every
// interval, marking the view dirty when it changes; it returns the
// latest figure (nil: the cluster serves no metrics API, asked again
// each interval in case metrics-server comes up).
func startUsage(ctx context.Context, cs kubernetes.Interface, interval time.Duration, dirty *atomic.Bool) *atomic.Pointer[fleet.PodUsage] {
	var latest atomic.Pointer[fleet.PodUsage]
	read := func() {
		var u *fleet.PodUsage
		if fleet.MetricsAvailable(ctx, cs) == nil {
			if got, err := fleet.ReadPodUsage(ctx, cs); err == nil {
				u = &got
			}
		}
		old := latest.Swap(u)
		if (old == nil) != (u == nil) || (u != nil && *old != *u) {
			dirty.Store(true)
		}
	}
	if cs.Discovery().RESTClient() == nil {
		return &latest // a fake clientset: no metrics API to ask
	}
	read()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return &latest
}

// withUsage adds the latest use to every view build makes.
func withUsage(build func(bool) FleetView, usage *atomic.Pointer[fleet.PodUsage]) func(bool) FleetView {
	return func(first bool) FleetView {
		v := build(first)
		v.Usage = usage.Load()
		return v
	}
}
