package tui

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

// epoch pins the clock of every test frame.
var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sampleFleet is n 8-GPU nodes in racks of 4, node i using i%9 GPUs, the
// 3rd NotReady and the 7th faulted.
func sampleFleet(n int) watch.FleetView {
	nodes := make([]*corev1.Node, 0, n)
	var pods []*corev1.Pod
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gf-node-%05d", i), Labels: map[string]string{fleet.LabelRack: fmt.Sprintf("rack-%04d", i/4)}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{fleet.ResourceGPU: resource.MustParse("8")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
		if i == 2 {
			node.Status.Conditions[0].Status = corev1.ConditionUnknown
		}
		if i == 6 {
			node.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu-health", Effect: corev1.TaintEffectNoSchedule}}
		}
		nodes = append(nodes, node)
		if g := i % 9; g > 0 {
			pods = append(pods, gpuPod(fmt.Sprintf("p-%d", i), node.Name, g, corev1.PodRunning))
		}
	}
	pods = append(pods, gpuPod("waiting", "", 8, corev1.PodPending), gpuPod("done", nodes[1].Name, 1, corev1.PodSucceeded))
	return watch.Build(nodes, pods, epoch)
}

func gpuPod(name, node string, gpus int, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gf-load"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fleet.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// sampleMetrics is 40 steps of every series: the mutating SLI the worst
// of POST pods (a saw up to 290ms) and PUT leases (50ms), GET nodes at
// 10ms, throughput ramping to 78/s, etcd growing from 50 MiB of 8 GiB.
func sampleMetrics() poll.MetricsView {
	ramp := func(n int, f func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	return poll.MetricsView{
		At: epoch, Window: 15 * time.Minute, Step: 15 * time.Second,
		API: map[string]poll.APILatency{
			"sli-mutating-p99": {
				Worst:  ramp(40, func(i int) float64 { return max(0.02+0.03*float64(i%10), 0.05) }),
				Series: "POST pods", Of: 2,
			},
			"sli-read-single-p99": {Worst: ramp(40, func(i int) float64 { return 0.01 }), Series: "nodes", Of: 1},
		},
		Throughput: ramp(40, func(i int) float64 { return float64(i * 2) }),
		EtcdBytes:  ramp(40, func(i int) float64 { return float64(50<<20 + i<<20) }),
		EtcdQuota:  8 << 30,
		GPUUtil:    ramp(40, func(i int) float64 { return 47 }),
	}
}

func testConfig(color bool) Config {
	return Config{
		Info:  Info{Cluster: "ghostfleet", Kubernetes: "v1.36.3", Kwok: "v0.8.0", Profile: "tuned", Created: epoch.Add(-90 * time.Minute)},
		Theme: NewTheme(color),
		Now:   func() time.Time { return epoch },
	}
}

// pinProfile fixes lipgloss's color profile for a test: its output
// depends on the terminal otherwise. Call it before NewTheme: the
// progress bars take the profile from the theme.
func pinProfile(t testing.TB, p termenv.Profile) {
	old := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(p)
	t.Cleanup(func() { lipgloss.SetColorProfile(old) })
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./tui -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("frame %s differs from %s (go test ./tui -update rewrites it after a deliberate change):\n%s", name, path, got)
	}
}

// drive feeds msg to m and runs the commands it returns, feeding their
// messages back, until none is left; ticks are dropped so it ends.
func drive(t *testing.T, m *Model, msg tea.Msg) {
	t.Helper()
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg, queue = queue[0], queue[1:]
		_, cmd := m.Update(msg)
		queue = append(queue, run1(cmd)...)
	}
}

func run1(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		switch msg := msg.(type) {
		case tea.BatchMsg:
			var out []tea.Msg
			for _, c := range msg {
				out = append(out, run1(c)...)
			}
			return out
		case nil, tickMsg:
			return nil
		default:
			return []tea.Msg{msg}
		}
	case <-time.After(30 * time.Second): // a safety net: no command here blocks for long
		return nil
	}
}

func keys(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

type fakeRate struct{ rate float64 }

func (f *fakeRate) SetRate(r float64) error {
	if r > 100 {
		return errors.New("too fast")
	}
	f.rate = r
	return nil
}
func (f *fakeRate) Rate() float64 { return f.rate }
