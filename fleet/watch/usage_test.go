package watch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestViewCountsRequests(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	pod := func(name, node string, phase corev1.PodPhase, cpu, mem string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.NodeName, p.Status.Phase = node, phase
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}
		return p
	}
	pods := []*corev1.Pod{
		pod("a", "n1", corev1.PodRunning, "1", "4Gi"),
		pod("b", "n1", corev1.PodPending, "500m", "1Gi"),
		pod("c", "", corev1.PodPending, "2", "1Gi"),     // not bound: not counted
		pod("d", "n1", corev1.PodSucceeded, "2", "1Gi"), // finished: not counted
	}
	for i, p := range pods { // as the informer keeps them
		pods[i].Spec.Containers = slimRequests(p)
	}
	v := Build([]*corev1.Node{node}, pods, time.Time{})
	if v.CPURequested != 1500 || v.MemoryRequested != 5<<30 {
		t.Errorf("requested cpu %dm memory %d, want 1500m and 5Gi", v.CPURequested, v.MemoryRequested)
	}
	if v.Usage != nil {
		t.Errorf("usage %+v without a metrics API, want nil", v.Usage)
	}
}
