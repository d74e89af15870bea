package cl2

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDeleteNamespaces(t *testing.T) {
	var objs []corev1.Namespace
	for _, n := range []string{"test-q7x2kd-1", "test-q7x2kd-2", "test-q7x2kd-10", "test-q7x2kd-x", "test-q7x2kd", "test-aaaaaa-1", "gf-load", "default"} {
		objs = append(objs, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	cs := fake.NewClientset(&objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6], &objs[7])
	deleted, err := DeleteNamespaces(context.Background(), cs, "test-q7x2kd")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(deleted)
	if want := []string{"test-q7x2kd-1", "test-q7x2kd-10", "test-q7x2kd-2"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	left, _ := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 5 {
		t.Errorf("%d namespaces left, want 5", len(left.Items))
	}
	for _, bad := range []string{"", "test-", "gf-load", "test-q7x2kd-1", "kube"} {
		if _, err := DeleteNamespaces(context.Background(), cs, bad); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("prefix %q: error %v", bad, err)
		}
	}
}
