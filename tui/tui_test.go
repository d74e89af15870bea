package tui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

// epoch pins the clock of every test frame.
var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sampleFleet is n 8-GPU nodes in racks of 4, node i using i%9 GPUs, the
// 3rd NotReady and the 7th faulted.
func sampleFleet(n int) FleetView {
	nodes := make([]*corev1.Node, 0, n)
	var pods []*corev1.Pod
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gf-node-%05d", i), Labels: map[string]string{RackLabel: fmt.Sprintf("rack-%04d", i/4)}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{gpuResource: resource.MustParse("8")},
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
	return BuildFleetView(nodes, pods, epoch)
}

func gpuPod(name, node string, gpus int, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gf-load"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{gpuResource: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func sampleMetrics() MetricsView {
	ramp := func(n int, f func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	series := func(labels map[string]string, vs []float64) metrics.Series {
		s := metrics.Series{Labels: labels}
		for i, v := range vs {
			s.Points = append(s.Points, [2]float64{float64(epoch.Unix() - int64(15*(len(vs)-1-i))), v})
		}
		return s
	}
	return MetricsView{
		At: epoch,
		API: map[string]APILatency{
			"sli-mutating-p99": worstOf([]metrics.Series{
				series(map[string]string{"verb": "POST", "resource": "pods"}, ramp(40, func(i int) float64 { return 0.02 + 0.03*float64(i%10) })),
				series(map[string]string{"verb": "PUT", "resource": "leases"}, ramp(40, func(i int) float64 { return 0.05 })),
			}),
			"sli-read-single-p99": worstOf([]metrics.Series{
				series(map[string]string{"resource": "nodes"}, ramp(40, func(i int) float64 { return 0.01 })),
			}),
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
// depends on the terminal otherwise.
func pinProfile(t *testing.T, p termenv.Profile) {
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

func TestGoldenFrames(t *testing.T) {
	tests := []struct {
		name    string
		profile termenv.Profile
		color   bool
		nodes   int
		w, h    int
	}{
		{"plain-80x24-1000", termenv.Ascii, false, 1000, 80, 24},
		{"plain-120x40-100", termenv.Ascii, false, 100, 120, 40},
		{"color-160x48-5000", termenv.ANSI256, true, 5000, 160, 48},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinProfile(t, tt.profile)
			frame := Frame(testConfig(tt.color), sampleFleet(tt.nodes), sampleMetrics(), tt.w, tt.h)
			lines := strings.Split(frame, "\n")
			if len(lines) != tt.h {
				t.Errorf("frame has %d lines, want %d", len(lines), tt.h)
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w > tt.w {
					t.Errorf("line %d is %d cells wide, more than %d: %q", i, w, tt.w, l)
				}
			}
			golden(t, tt.name, frame)
		})
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

func TestActionFormRunsWithValuesAndReportsProgress(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	var got []string
	release := make(chan struct{})
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{ActLoad: {
		Name:     "Load",
		Fields:   []Field{{Label: "pods", Default: "8000"}, {Label: "GPUs per pod", Default: "1"}},
		Describe: func(v []string) string { return "load " + v[0] + "×" + v[1] },
		Run: func(ctx context.Context, v []string, ctl Control) (Outcome, error) {
			got = v
			ctl.Report(progress.Event{Kind: progress.Start, Step: "create", Message: "creating"})
			ctl.Report(progress.Event{Kind: progress.Update, Step: "create", Done: 25, Total: 100})
			<-release
			return Outcome{Summary: "verdict: fine", Dir: "results/load-1"}, nil
		},
	}}
	m := New(cfg)
	m.w, m.h = 100, 30
	drive(t, m, keys("l"))
	if m.form == nil {
		t.Fatal("l did not open the load form")
	}
	drive(t, m, keys("q")) // typed into the field, not quitting
	if m.quitting || m.form.values()[0] != "8000q" {
		t.Fatalf("q in a form: quitting=%v value=%q", m.quitting, m.form.values()[0])
	}
	drive(t, m, tea.KeyMsg{Type: tea.KeyBackspace})
	drive(t, m, tea.KeyMsg{Type: tea.KeyTab})
	drive(t, m, tea.KeyMsg{Type: tea.KeyBackspace})
	drive(t, m, keys("2"))
	// enter starts the run; the relay delivers its events as messages.
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if m.form != nil || len(m.runs) != 1 {
		t.Fatalf("enter did not start a run: form %v runs %d", m.form, len(m.runs))
	}
	frame := m.View()
	if !strings.Contains(frame, "running: load 8000×2") {
		t.Errorf("header does not show the run:\n%s", frame)
	}
	close(release)
	for _, msg := range run1(cmd) {
		drive(t, m, msg)
	}
	if strings.Join(got, ",") != "8000,2" {
		t.Errorf("action got %q, want 8000,2", got)
	}
	r := m.runs[0]
	if !r.finished || r.err != nil || r.outcome.Dir != "results/load-1" {
		t.Errorf("run after done: %+v", r)
	}
	if frame := m.View(); !strings.Contains(frame, "verdict: fine") || !strings.Contains(frame, "results/load-1") {
		t.Errorf("activity does not show the outcome:\n%s", frame)
	}
}

func TestProgressBarFromUpdates(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.w, m.h = 100, 30
	r := &run{id: 1, name: "load 10×1", started: epoch, progress: -1, cancel: func() {}}
	m.runs = append(m.runs, r)
	r.apply(progress.Event{Kind: progress.Start, Step: "create", Message: "creating 10 pods"})
	r.apply(progress.Event{Kind: progress.Update, Step: "create", Done: 5, Total: 10})
	if got := m.activity(30, 10); !strings.Contains(got, "50%") || !strings.Contains(got, "creating 10 pods") {
		t.Errorf("activity at half way:\n%s", got)
	}
}

func TestEscCancelsTheCurrentRunAndRateKeysChangeIt(t *testing.T) {
	m := New(testConfig(false))
	cancelled := false
	rc := &fakeRate{rate: 50}
	m.runs = []*run{{id: 1, name: "churn 50/s", cancel: func() { cancelled = true }, rate: rc, progress: -1}}
	drive(t, m, keys("+"))
	if rc.rate != 60 {
		t.Errorf("+ set rate %g, want 60", rc.rate)
	}
	drive(t, m, keys("-"))
	drive(t, m, keys("-"))
	if rc.rate != 40 {
		t.Errorf("- - set rate %g, want 40", rc.rate)
	}
	rc.rate = 100
	drive(t, m, keys("+"))
	if rc.rate != 100 || !strings.Contains(m.notice, "too fast") {
		t.Errorf("a refused rate: rate %g notice %q", rc.rate, m.notice)
	}
	// A snapshot started after the churn does not take the rate keys.
	m.runs = append(m.runs, &run{id: 2, name: "snapshot", cancel: func() {}, progress: -1})
	drive(t, m, keys("-"))
	if rc.rate != 90 {
		t.Errorf("- with a later snapshot active set rate %g, want 90", rc.rate)
	}
	m.runs = m.runs[:1]
	drive(t, m, tea.KeyMsg{Type: tea.KeyEsc})
	if !cancelled || !m.runs[0].cancelled {
		t.Error("esc did not cancel the run")
	}
}

func TestQuitAsksWhileARunIsActive(t *testing.T) {
	m := New(testConfig(false))
	cancelled := false
	m.runs = []*run{{id: 1, name: "load", cancel: func() { cancelled = true }, progress: -1}}
	_, cmd := m.Update(keys("q"))
	if cmd != nil || m.confirm == nil {
		t.Fatal("q with an active run quit without asking")
	}
	_, cmd = m.Update(keys("n"))
	if cmd != nil || m.quitting || cancelled {
		t.Fatal("answering n did not keep the console")
	}
	m.Update(keys("q"))
	m.Update(keys("y"))
	if !cancelled || !m.quitting {
		t.Fatal("confirming did not cancel the run")
	}
	// The console quits once the cancelled run has recorded and ended.
	_, cmd = m.Update(runDone{id: 1})
	if cmd == nil {
		t.Fatal("no quit after the last run ended")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("the command after the last run is not quit")
	}
}

func TestUnavailableActionSaysSo(t *testing.T) {
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{ActCL2: {Name: "CL2", Unavailable: "no clusterloader binary"}}
	m := New(cfg)
	drive(t, m, keys("b"))
	if m.form != nil || len(m.runs) != 0 || !strings.Contains(m.footer(120), "no clusterloader binary") {
		t.Errorf("b: form %v runs %d footer %q", m.form, len(m.runs), m.footer(120))
	}
}

func TestConfirmedActionAsksFirst(t *testing.T) {
	ran := false
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{ActUnload: {Name: "unload", Confirm: "remove?", Run: func(context.Context, []string, Control) (Outcome, error) {
		ran = true
		return Outcome{}, nil
	}}}
	m := New(cfg)
	drive(t, m, keys("x"))
	drive(t, m, keys("n"))
	drive(t, m, keys("x"))
	drive(t, m, keys("q")) // leaving the question is not a yes
	if ran || m.quitting {
		t.Fatalf("unload ran without a yes (ran %v, quitting %v)", ran, m.quitting)
	}
	drive(t, m, keys("x"))
	drive(t, m, keys("y"))
	if !ran {
		t.Fatal("unload did not run after y")
	}
}

func TestResizeIsDebounced(t *testing.T) {
	m := New(testConfig(false))
	m.Update(fleetMsg(sampleFleet(10)))
	m.View()
	_, first := m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	_, second := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if m.w != MinWidth {
		t.Fatalf("resized at once to %d", m.w)
	}
	m.Update(first()) // superseded
	if m.w != MinWidth {
		t.Fatalf("a superseded resize applied: %d", m.w)
	}
	m.Update(second())
	if m.w != 120 || m.h != 40 {
		t.Fatalf("size %d×%d, want 120×40", m.w, m.h)
	}
}

func TestViewIsMemoised(t *testing.T) {
	m := New(testConfig(false))
	m.Update(fleetMsg(sampleFleet(10)))
	a := m.View()
	m.fleet = sampleFleet(20) // changed behind Update's back: not redrawn
	if b := m.View(); b != a {
		t.Error("View redrew without a message")
	}
	m.Update(fleetMsg(sampleFleet(20)))
	if b := m.View(); b == a {
		t.Error("View did not redraw after new data")
	}
}

func TestTooSmall(t *testing.T) {
	got := Frame(testConfig(false), sampleFleet(10), MetricsView{}, 60, 20)
	if !strings.Contains(got, "at least 80×24") || !strings.Contains(got, "60×20") {
		t.Errorf("small terminal: %q", got)
	}
}

func TestBuildFleetView(t *testing.T) {
	v := sampleFleet(12)
	if v.GPUs != 96 || v.NotReady != 1 || v.Faulted != 1 || v.Ready != 11 {
		t.Errorf("counts: %+v", v)
	}
	// Node i uses i%9 GPUs; the succeeded pod holds none.
	var used int64
	for i := range 12 {
		used += int64(i % 9)
	}
	if v.GPUsUsed != used || v.Running != 10 || v.Pending != 1 || v.Unscheduled != 1 || v.Succeeded != 1 {
		t.Errorf("allocation: used %d (want %d) %+v", v.GPUsUsed, used, v)
	}
	if !v.Racked || v.RackSize != 4 {
		t.Errorf("racks: %v %d", v.Racked, v.RackSize)
	}
}

func TestLayoutMap(t *testing.T) {
	tests := []struct {
		nodes, w, h int
		perCell     int
		grouped     bool
		wantCaption string
	}{
		{10, 40, 5, 1, true, "10 nodes · grouped by rack"},
		{1000, 60, 10, 2, false, "1,000 nodes · 1 cell = 2 nodes"},
		{5000, 60, 10, 12, false, "5,000 nodes · 1 cell = 3 racks (12 nodes)"},
	}
	for _, tt := range tests {
		t.Run(tt.wantCaption, func(t *testing.T) {
			v := sampleFleet(tt.nodes)
			l := layoutMap(v, tt.w, tt.h)
			if l.perCell != tt.perCell || l.grouped != tt.grouped || len(l.rows) > tt.h {
				t.Errorf("layout: per cell %d grouped %v rows %d", l.perCell, l.grouped, len(l.rows))
			}
			cells := 0
			for _, r := range l.rows {
				if len(r) > tt.w {
					t.Errorf("row of %d cells, wider than %d", len(r), tt.w)
				}
				for _, c := range r {
					if c != cellGap {
						cells++
					}
				}
			}
			if want := (tt.nodes + tt.perCell - 1) / tt.perCell; cells != want {
				t.Errorf("%d cells, want %d", cells, want)
			}
			if _, caption := renderMap(NewTheme(false), v, tt.w, tt.h); caption != tt.wantCaption {
				t.Errorf("caption %q, want %q", caption, tt.wantCaption)
			}
		})
	}
}

func TestCellLevels(t *testing.T) {
	tests := []struct {
		used, gpus int64
		want       int
	}{{0, 8, 0}, {1, 8, 1}, {8, 8, 8}, {1, 4, 2}, {4, 4, 8}, {1, 72, 1}, {5, 0, 0}}
	for _, tt := range tests {
		if got := (NodeCell{Used: tt.used, GPUs: tt.gpus}).Level(); got != tt.want {
			t.Errorf("%d of %d GPUs: level %d, want %d", tt.used, tt.gpus, got, tt.want)
		}
	}
}

func TestSlimKeepsWhatTheViewReads(t *testing.T) {
	p := gpuPod("a", "n1", 2, corev1.PodRunning)
	p.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	got, err := slim(p)
	if err != nil {
		t.Fatal(err)
	}
	sp := got.(*corev1.Pod)
	if sp.Annotations != nil || sp.Spec.Containers[0].Env != nil || podGPUs(sp) != 2 || sp.Spec.NodeName != "n1" || sp.Status.Phase != corev1.PodRunning {
		t.Errorf("slim pod: %+v", sp)
	}
}

func BenchmarkRender(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("%d-nodes-160x48", n), func(b *testing.B) {
			cfg := testConfig(true)
			fleet, met := sampleFleet(n), sampleMetrics()
			b.ReportAllocs()
			for b.Loop() {
				_ = Frame(cfg, fleet, met, 160, 48)
			}
		})
	}
	b.Run("build-view-1000-nodes-8000-pods", func(b *testing.B) {
		nodes := make([]*corev1.Node, 1000)
		pods := make([]*corev1.Pod, 0, 8000)
		for i := range nodes {
			nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}, Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{gpuResource: resource.MustParse("8")}}}
			for range 8 {
				pods = append(pods, gpuPod("p", nodes[i].Name, 1, corev1.PodRunning))
			}
		}
		for b.Loop() {
			_ = BuildFleetView(nodes, pods, epoch)
		}
	})
}

// BenchmarkTickRedraw is the console's steady state: the clock ticks every
// second and only the header and activity change.
func BenchmarkTickRedraw(b *testing.B) {
	m := New(testConfig(true))
	m.w, m.h = 160, 48
	m.Update(fleetMsg(sampleFleet(1000)))
	m.Update(metricsMsg(sampleMetrics()))
	m.View()
	b.ReportAllocs()
	for b.Loop() {
		m.Update(tickMsg(epoch))
		_ = m.View()
	}
}
