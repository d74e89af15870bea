package fleet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LivePodsOnFakeNodes lists the pods in namespace (all when empty)
// matching selector that GhostFleet may act on: not being deleted,
// Running or Pending, and on a node kwok fakes or not yet on any node.
// listed is how many matched before that filter, for the caller's error
// when none is left.
func LivePodsOnFakeNodes(ctx context.Context, cs kubernetes.Interface, namespace, selector string) (live []corev1.Pod, listed int, err error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, 0, fmt.Errorf("listing nodes: %w", err)
	}
	fake := map[string]bool{}
	for _, n := range nodes.Items {
		fake[n.Name] = n.Annotations[AnnotationFake] == "fake"
	}
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, 0, fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending) {
			continue
		}
		if p.Spec.NodeName != "" && !fake[p.Spec.NodeName] {
			continue
		}
		live = append(live, p)
	}
	return live, len(list.Items), nil
}
