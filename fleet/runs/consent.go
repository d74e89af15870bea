package runs

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// ConsentFlag is the flag that gives Env.RealCluster.
const ConsentFlag = "--i-know-this-is-real"

// attachedWrite guards every run that writes to a cluster GhostFleet did
// not create: it says which cluster (server URL and context) is about to
// change before anything is sent, and, when realRisk (load and faults:
// pods that could land, or faults that could hit, a real machine), refuses
// a cluster with any node that is not a kwok fake node unless the user
// gave Env.RealCluster. GhostFleet's own fleets pass untouched. It lives
// here, in the run API, so neither the flags nor the console can skip it.
func attachedWrite(ctx context.Context, env Env, cs kubernetes.Interface, what string, realRisk bool) error {
	if !env.Target.Attached() {
		return nil
	}
	where := describeAttached(env.Target)
	if realRisk {
		real, total, err := realNodes(ctx, cs)
		if err != nil {
			return fmt.Errorf("checking the nodes of %s before %s: %w", where, what, err)
		}
		if len(real) > 0 && !env.RealCluster {
			ok, err := preparedSeparates(ctx, cs)
			if err != nil {
				return fmt.Errorf("checking the nodes of %s before %s: %w", where, what, err)
			}
			if ok {
				env.warn("%s on %s: its %d real nodes (%s) are left alone: GhostFleet attached it, its pods select %s=kwok nodes, none of them real, and faults pick GhostFleet's fake nodes only",
					what, where, len(real), sample(real, 3), fleet.LabelType)
				env.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("about to change attached cluster %s: %s", where, what)})
				return nil
			}
			return fmt.Errorf("refusing to %s on %s: %d of its %d nodes are not kwok fake nodes (%s); pass %s to go ahead anyway",
				what, where, len(real), total, sample(real, 3), ConsentFlag)
		}
		if len(real) > 0 {
			env.warn("%s given: %s on %s, which has %d real nodes (%s)", ConsentFlag, what, where, len(real), sample(real, 3))
		}
	}
	env.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("about to change attached cluster %s: %s", where, what)})
	return nil
}

// realNodes lists the nodes that are not kwok fake nodes (no
// kwok.x-k8s.io/node=fake annotation), sorted, and how many nodes there are.
func realNodes(ctx context.Context, cs kubernetes.Interface) ([]string, int, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var real []string
	for _, n := range list.Items {
		if n.Annotations[fleet.AnnotationFake] != "fake" {
			real = append(real, n.Name)
		}
	}
	sort.Strings(real)
	return real, len(list.Items), nil
}

// describeAttached names an attached cluster by its server URL, context
// and kubeconfig, as the user would recognise it.
func describeAttached(t fleet.Target) string {
	ctxName := t.Context
	server := ""
	raw, err := clientcmd.LoadFromFile(t.Kubeconfig)
	if err == nil {
		if ctxName == "" {
			ctxName = raw.CurrentContext
		}
		if c, ok := raw.Contexts[ctxName]; ok {
			if cl, ok := raw.Clusters[c.Cluster]; ok {
				server = cl.Server
			}
		}
	}
	if server == "" {
		server = "(server unknown)"
	}
	return fmt.Sprintf("%s (context %q of %s)", server, ctxName, t.Kubeconfig)
}

// sample names up to n of names, and how many more.
func sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// preparedSeparates says whether an attached cluster keeps GhostFleet's
// work off its real nodes: GhostFleet attached it (its record is there)
// and no real node carries the label GhostFleet's pods select
// (type=kwok), so a load cannot land on one whatever the taints.
func preparedSeparates(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	if _, ok, err := fleet.ReadAttachment(ctx, cs); err != nil || !ok {
		return false, err
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelType + "=kwok"})
	if err != nil {
		return false, err
	}
	for _, n := range list.Items {
		if n.Annotations[fleet.AnnotationFake] != "fake" {
			return false, nil
		}
	}
	return true, nil
}
