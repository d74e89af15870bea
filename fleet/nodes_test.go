package fleet

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestGPUProfilesAreValid(t *testing.T) {
	for _, p := range GPUProfiles {
		t.Run(p.Name, func(t *testing.T) {
			if err := p.validate(); err != nil {
				t.Error(err)
			}
		})
	}
	if _, err := LookupGPUProfile(DefaultGPUProfile); err != nil {
		t.Errorf("default profile: %v", err)
	}
	_, err := LookupGPUProfile("dgx-v100")
	if err == nil || !strings.Contains(err.Error(), `"dgx-v100"`) || !strings.Contains(err.Error(), "dgx-a100-80gb") {
		t.Errorf("unknown profile error = %v, want the value and the allowed names", err)
	}
}

func TestNewNode(t *testing.T) {
	p, _ := LookupGPUProfile("dgx-a100-80gb")
	n := NewNode(p, 37)
	if n.Name != "gf-node-00037" {
		t.Errorf("name %q", n.Name)
	}
	wantLabels := map[string]string{
		LabelManaged:             "true",
		LabelType:                "kwok",
		"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
		"nvidia.com/gpu.count":   "8",
		"nvidia.com/gpu.memory":  "81920",
		LabelRack:                "rack-0009", // 4 per rack
		LabelBlock:               "block-001", // 32 per block
		LabelNVLink:              "nvl-00037", // a DGX is its own NVLink domain
		LabelZone:                "zone-a",
	}
	for k, want := range wantLabels {
		if got := n.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if n.Annotations[AnnotationFake] != "fake" {
		t.Error("missing kwok's fake-node annotation")
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != TaintFake || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	gpus := n.Status.Allocatable[ResourceGPU]
	if gpus.Value() != 8 {
		t.Errorf("allocatable GPUs %s", gpus.String())
	}
	if rdma := n.Status.Allocatable[ResourceRDMA]; rdma.Value() != 8 {
		t.Errorf("allocatable rdma %s", rdma.String())
	}
	if mem := n.Status.Capacity[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("2Ti")) != 0 {
		t.Errorf("memory %s", mem.String())
	}

	nvl, _ := LookupGPUProfile("gb200-nvl72")
	a, b, c := NewNode(nvl, 0), NewNode(nvl, 17), NewNode(nvl, 18)
	if a.Labels[LabelNVLink] != b.Labels[LabelNVLink] || b.Labels[LabelNVLink] == c.Labels[LabelNVLink] {
		t.Errorf("NVL72 domains: 0=%s 17=%s 18=%s, want 18 trays per domain", a.Labels[LabelNVLink], b.Labels[LabelNVLink], c.Labels[LabelNVLink])
	}
	if a.Labels["kubernetes.io/arch"] != "arm64" {
		t.Errorf("GB200 arch %q, want arm64 (Grace)", a.Labels["kubernetes.io/arch"])
	}
}

func TestParseNodeCount(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr string
	}{
		{"0", 0, ""},
		{"1000", 1000, ""},
		{"10000", 10000, ""},
		{"-1", 0, "out of range: allowed are 0-10000"},
		{"10001", 0, "out of range"},
		{"1e3", 0, `"1e3" is not a whole number`},
		{"lots", 0, "not a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNodeCount(tt.in)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("ParseNodeCount(%q) = %d, %v", tt.in, got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseNodeCount(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func nodeNames(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	list, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names
}

func TestScaleCreatesKeepsAndDeletesOnlyItsOwnNodes(t *testing.T) {
	h100, _ := LookupGPUProfile("dgx-h100")
	a100, _ := LookupGPUProfile("dgx-a100-80gb")
	realNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-gpu-1", Labels: map[string]string{LabelManaged: "true"}}}
	cs := fake.NewClientset(realNode, NewNode(a100, 1), NewNode(h100, 7))
	ctx := context.Background()

	res, err := Scale(ctx, cs, ScaleOptions{Count: 4, Profile: h100, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 3 || res.Deleted != 1 || res.Kept != 1 || res.OtherProfiles["dgx-a100-80gb"] != 1 {
		t.Errorf("result %+v, want 3 created, 1 deleted (node 7), 1 kept (a100 node 1)", res)
	}
	want := []string{"gf-node-00000", "gf-node-00001", "gf-node-00002", "gf-node-00003", "real-gpu-1"}
	if got := nodeNames(t, cs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("nodes %v, want %v", got, want)
	}

	res, err = Scale(ctx, cs, ScaleOptions{Count: 0, Profile: h100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 4 {
		t.Errorf("scale to 0 deleted %d, want 4", res.Deleted)
	}
	if got := nodeNames(t, cs); len(got) != 1 || got[0] != "real-gpu-1" {
		t.Errorf("after scale to 0: %v, want only the node without kwok's annotation", got)
	}
}

// settledNode is fake node i, Ready, with extra taints.
func settledNode(i int, taints ...string) *corev1.Node {
	h100, _ := LookupGPUProfile("dgx-h100")
	n := NewNode(h100, i)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
	}
	return n
}

func TestNodeSchedulable(t *testing.T) {
	notReady := settledNode(0)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	fresh := settledNode(0)
	fresh.Status.Conditions = nil
	for _, c := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"Ready, only kwok's taint", settledNode(0), true},
		{"Ready, a GPU fault's taint", settledNode(0, TaintGPUHealth), true},
		{"Ready, not-ready taint not yet lifted", settledNode(0, corev1.TaintNodeNotReady), false},
		{"Ready, unreachable taint", settledNode(0, corev1.TaintNodeUnreachable), false},
		{"not Ready", notReady, false},
		{"no conditions yet", fresh, false},
	} {
		if got := NodeSchedulable(c.node); got != c.want {
			t.Errorf("%s: NodeSchedulable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWaitNodesSchedulable(t *testing.T) {
	sel := LabelManaged + "=true"
	cs := fake.NewClientset(settledNode(0), settledNode(1, TaintGPUHealth))
	if err := waitNodesSchedulable(context.Background(), cs, sel, 2, progress.Discard, "s"); err != nil {
		t.Fatalf("two schedulable nodes: %v", err)
	}

	defer func(d time.Duration) { schedulableStall = d }(schedulableStall)
	schedulableStall = 10 * time.Millisecond
	cs = fake.NewClientset(settledNode(0), settledNode(1, corev1.TaintNodeNotReady))
	err := waitNodesSchedulable(context.Background(), cs, sel, 2, progress.Discard, "s")
	if err == nil || !strings.Contains(err.Error(), "1 of 2 nodes schedulable") || !strings.Contains(err.Error(), corev1.TaintNodeNotReady) {
		t.Errorf("one node still tainted: err = %v, want it to give up naming 1 of 2 and the taint", err)
	}
}

func TestScaleRejectsBadCounts(t *testing.T) {
	h100, _ := LookupGPUProfile("dgx-h100")
	cs := fake.NewClientset()
	for _, n := range []int{-1, MaxNodes + 1} {
		if _, err := Scale(context.Background(), cs, ScaleOptions{Count: n, Profile: h100}); err == nil {
			t.Errorf("Scale(%d) succeeded", n)
		}
	}
	if len(nodeNames(t, cs)) != 0 {
		t.Error("a rejected scale created nodes")
	}
}

func TestCountPodsAndGPUs(t *testing.T) {
	gpuPod := func(ns, name, node string, phase corev1.PodPhase, gpus int64) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Name:      "c",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}},
			}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	ours := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpu-load", Labels: map[string]string{LabelWorkloadNamespace: "true"}}}
	cs := fake.NewClientset(ours,
		gpuPod("gpu-load", "a", "n1", corev1.PodRunning, 1),
		gpuPod("gpu-load", "b", "n1", corev1.PodRunning, 2),
		gpuPod("gpu-load", "c", "", corev1.PodPending, 1),
		gpuPod("gpu-load", "d", "n2", corev1.PodFailed, 8),
		gpuPod("other", "e", "n2", corev1.PodRunning, 4),
	)
	var st Status
	if err := countPods(context.Background(), cs, &st); err != nil {
		t.Fatal(err)
	}
	if st.GPUs.Allocated != 7 {
		t.Errorf("allocated %d, want 7 (bound, unfinished pods in any namespace)", st.GPUs.Allocated)
	}
	if st.Pods.Running != 2 || st.Pods.Pending != 1 || st.Pods.Failed != 1 {
		t.Errorf("pods %+v, want 2 running, 1 pending, 1 failed in gpu-load only", st.Pods)
	}
}

func TestParseStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks: 3 seconds.
	line := "1234 (kube scheduler) S 1 1234 1234 0 -1 4194560 5000 0 0 0 250 50 0 0 20 0 12 0 100 1000000 2000"
	got, err := parseStatCPU(line)
	if err != nil || got.Seconds() != 3 {
		t.Errorf("parseStatCPU = %s, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Error("garbage accepted")
	}
}

// A thread's wait for a core is the second of schedstat's fields; each
// of a process's threads is read (this test's own process), and a process
// that is gone is said so.
func TestRunQueueWait(t *testing.T) {
	got, err := parseRunDelay("152718419 425712303 334\n")
	if err != nil || got != 425712303*time.Nanosecond {
		t.Errorf("parseRunDelay = %s, %v; want 425.712303ms", got, err)
	}
	for _, bad := range []string{"152718419 425712303", "1 two 3"} {
		if _, err := parseRunDelay(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc here:", err)
	}
	if waits, err := runQueueWaits("/proc/self/task"); err != nil || len(waits) == 0 {
		t.Errorf("runQueueWaits(/proc/self/task) = %v, %v; want this process's threads and no error", waits, err)
	}
	if _, err := runQueueWaits("/proc/self/no-such-dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing process: %v, want not exist", err)
	}
}

func TestStatusKiB(t *testing.T) {
	status := "Name:\tetcd\nVmPeak:\t 2000 kB\nVmHWM:\t  348160 kB\nVmRSS:\t  300000 kB\n"
	if n, ok := statusKiB(status, "VmHWM:"); !ok || n != 348160 {
		t.Errorf("VmHWM = %d, %v; want 348160", n, ok)
	}
	if _, ok := statusKiB(status, "VmSwap:"); ok {
		t.Error("a missing field was found")
	}
}
