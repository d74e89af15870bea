package fault

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// Current is one fault kind that holds in the cluster now, for the
// console's fault pane and `status`.
type Current struct {
	Kind Kind `json:"kind"`
	// Nodes carry the fault (node faults), sorted.
	Nodes []string `json:"nodes,omitempty"`
	// Pending pods are marked and have not failed yet; Failed ones did.
	Pending int `json:"pending,omitempty"`
	Failed  int `json:"failed,omitempty"`
}

// Active lists the faults that hold now, by kind in menu order; kinds
// with nothing marked are left out. It reads the markers, so it sees
// faults injected by any GhostFleet process.
func Active(ctx context.Context, c Clients) ([]Current, error) {
	nodes, err := fakeNodes(ctx, c.Kube)
	if err != nil {
		return nil, err
	}
	var out []Current
	for _, k := range Kinds {
		cur := Current{Kind: k.Kind}
		if k.Scope == "nodes" {
			for _, n := range nodes {
				if n.Labels[fleet.FaultLabel(string(k.Kind))] == fleet.FaultActive {
					cur.Nodes = append(cur.Nodes, n.Name)
				}
			}
			sort.Strings(cur.Nodes)
		} else {
			for _, pk := range []string{fleet.FaultPodExit, fleet.FaultPodInitExit} {
				pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: fleet.FaultLabel(pk) + "=" + fleet.FaultActive})
				if err != nil {
					return nil, fmt.Errorf("listing pods: %w", err)
				}
				for _, p := range pods.Items {
					if p.Status.Phase == "Running" || p.Status.Phase == "Pending" {
						cur.Pending++
					} else {
						cur.Failed++
					}
				}
			}
		}
		if len(cur.Nodes) > 0 || cur.Pending > 0 || cur.Failed > 0 {
			out = append(out, cur)
		}
	}
	return out, nil
}
