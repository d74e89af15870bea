package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// span is a time a node was not Ready: to is zero while it still is.
type span struct{ from, to time.Time }

// NodeDowns follows the nodes' Ready condition and keeps when each was
// not Ready. A worker on such a node does no work whatever its pod's phase
// says: no kubelet is there to report that it ended, and until the node
// lifecycle controller evicts it, its pod still reads Running.
type NodeDowns struct {
	mu    sync.Mutex
	spans map[string][]span
	now   func() time.Time
	stop  func()
}

// StartNodeDowns lists the nodes and watches them from there; it returns
// once the watch is established.
func StartNodeDowns(ctx context.Context, cs kubernetes.Interface) (*NodeDowns, error) {
	d := &NodeDowns{spans: map[string][]span{}, now: time.Now}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range list.Items {
		d.observe(&list.Items[i])
	}
	d.stop, err = follow(ctx, "nodes", list.ResourceVersion, cs.CoreV1().Nodes().Watch, func(ev watch.Event) {
		if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
			d.observe(n)
		}
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Stop ends the watch.
func (d *NodeDowns) Stop() { d.stop() }

func (d *NodeDowns) observe(n *corev1.Node) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.spans[n.Name]
	open := len(s) > 0 && s[len(s)-1].to.IsZero()
	switch ready := fleet.NodeReady(n); {
	case !ready && !open:
		d.spans[n.Name] = append(s, span{from: now})
	case ready && open:
		s[len(s)-1].to = now
	}
}

// EndOnDownNodes returns pods with each running pod ended at the first
// moment its node was seen not Ready while it ran, when that came before
// the pod's own end.
func (d *NodeDowns) EndOnDownNodes(pods []PodTimes) []PodTimes {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PodTimes, len(pods))
	for i, p := range pods {
		out[i] = p
		if p.Running.IsZero() {
			continue
		}
		for _, s := range d.spans[p.Node] {
			if !s.to.IsZero() && !s.to.After(p.Running) {
				continue // over before the pod ran
			}
			from := s.from
			if from.Before(p.Running) {
				from = p.Running
			}
			if p.Ended.IsZero() || from.Before(p.Ended) {
				out[i].Ended = from
			}
			break
		}
	}
	return out
}
