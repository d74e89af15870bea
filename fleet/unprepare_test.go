package fleet

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Detach removes the workload namespaces and nodes GhostFleet made and
// nothing that only looks like them: a namespace someone labelled as a
// workload namespace, a node without kwok's annotation.
func TestUnprepareWorkloadsRemovesOnlyOurs(t *testing.T) {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	node := func(name string, labels, annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	}
	kwokLabels := map[string]string{LabelManaged: "true", LabelType: "kwok"}
	cs := fake.NewClientset(
		ns("gf-load", map[string]string{LabelWorkloadNamespace: "true", LabelManaged: "true"}),
		ns("theirs", map[string]string{LabelWorkloadNamespace: "true"}),
		node("gf-node-00000", kwokLabels, map[string]string{AnnotationFake: "fake"}),
		node("lookalike", kwokLabels, nil),
		node("real", nil, nil),
	)
	removed := Removed{}
	if err := UnprepareWorkloads(context.Background(), cs, removed, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed["namespaces"], []string{"gf-load"}) || !slices.Equal(removed["nodes"], []string{"gf-node-00000"}) {
		t.Errorf("removed %v", removed)
	}
	left, _ := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	nodes, _ := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "theirs" || len(nodes.Items) != 2 {
		t.Errorf("left %d namespaces (%v), %d nodes", len(left.Items), left.Items, len(nodes.Items))
	}
}
