package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// fakeInspector answers from fixed data and counts the fetches.
type fakeInspector struct {
	details map[string]watch.NodeDetail
	match   map[string]bool
	fetches int
	queries []watch.NodeQuery
}

func (f *fakeInspector) Node(_ context.Context, name string) (watch.NodeDetail, error) {
	f.fetches++
	d, ok := f.details[name]
	if !ok {
		return watch.NodeDetail{}, fmt.Errorf("node %s: not found", name)
	}
	return d, nil
}

func (f *fakeInspector) Nodes(_ context.Context, q watch.NodeQuery) (map[string]bool, error) {
	f.queries = append(f.queries, q)
	if q.LabelValue == "broken" {
		return nil, errors.New("the API server is away")
	}
	return f.match, nil
}

// faultedDetail is sampleFleet's 7th node as the Inspector fetches it:
// GpuXidProblem with its Xid (the message laced with escape sequences,
// as anyone's string can be), the health taint, a failed pod.
func faultedDetail() watch.NodeDetail {
	return watch.NodeDetail{
		At: epoch, Name: "gf-node-00006", Ready: true, GPUCapacity: 8, GPUAlloc: 7, GPUUsed: 6,
		Labels: []watch.Label{{Key: "gpu.product", Value: "NVIDIA-H100-80GB-HBM3"}, {Key: "gpu.count", Value: "8"},
			{Key: "rack", Value: "rack-0001"}, {Key: "nvlink", Value: "nvl-00006"}, {Key: "fault.ghostfleet.io/gpu-xid", Value: "true"}},
		Conditions: []watch.Condition{
			{Type: "GpuXidProblem", Status: "True", Reason: "Xid79", Message: "Xid 79: GPU has \x1b[2J\x1b]0;pwned\x07fallen off the bus\n", Since: epoch.Add(-2 * time.Minute), Abnormal: true},
			{Type: "Ready", Status: "True", Reason: "KubeletReady"},
			{Type: "MemoryPressure", Status: "False"}, {Type: "DiskPressure", Status: "False"}, {Type: "PIDPressure", Status: "False"},
		},
		Taints: []string{"kwok.x-k8s.io/node=fake:NoSchedule", "nvidia.com/gpu-health=unhealthy:NoSchedule"},
		Pods: []watch.PodDetail{
			{Namespace: "gf-load", Name: "nccl-test-0", Phase: "Failed", GPUs: 2, Exits: []watch.ContainerExit{{Container: "main", ExitCode: 3, Reason: "Error", Message: "NCCL test failed"}}},
			{Namespace: "gf-load", Name: "load-00042", Phase: "Running", GPUs: 6},
		},
	}
}

func drillModel(t *testing.T, nodes, w, h int) (*Model, *fakeInspector) {
	t.Helper()
	in := &fakeInspector{details: map[string]watch.NodeDetail{"gf-node-00006": faultedDetail()}}
	cfg := testConfig(false)
	cfg.Inspect = in
	m := New(cfg)
	m.setSize(w, h)
	m.Update(fleetMsg(sampleFleet(nodes)))
	m.Update(metricsMsg(sampleMetrics()))
	m.View()
	return m, in
}

func key1(t tea.KeyType) tea.KeyMsg { return tea.KeyMsg{Type: t} }

func typeLine(t *testing.T, m *Model, line string) {
	t.Helper()
	for _, r := range line {
		drive(t, m, keys(string(r)))
	}
	drive(t, m, key1(tea.KeyEnter))
}

func TestCursorMoves(t *testing.T) {
	// 100 nodes grouped by rack at 120×40: rows of racks of 4 with gaps.
	m, _ := drillModel(t, 100, 120, 40)
	p := m.fleetMap
	if p.cursor.shown || strings.Contains(m.View(), "◆") {
		t.Fatalf("the cursor shows before any cursor key: %v\n%s", p.cursor.shown, m.View())
	}
	steps := []struct {
		key  tea.KeyMsg
		want string
	}{
		{key1(tea.KeyRight), "gf-node-00000"}, // the first key shows it where it is
		{key1(tea.KeyRight), "gf-node-00001"},
		{key1(tea.KeyRight), "gf-node-00002"},
		{key1(tea.KeyRight), "gf-node-00003"},
		{key1(tea.KeyRight), "gf-node-00004"}, // over the gap between racks
		{keys("h"), "gf-node-00003"},
		{keys("j"), ""}, // the next row, same column
		{keys("k"), "gf-node-00003"},
		{key1(tea.KeyUp), "gf-node-00003"}, // no row above: stays
		{key1(tea.KeyLeft), "gf-node-00002"},
	}
	for i, s := range steps {
		drive(t, m, s.key)
		m.View()
		if s.want != "" && p.cursor.node != s.want {
			t.Fatalf("step %d (%s): cursor on %s, want %s", i, s.key, p.cursor.node, s.want)
		}
	}
	row0 := len(p.lay.spans[0])
	drive(t, m, keys("j"))
	m.View()
	if cur := p.cursor.place(p.lay, p.shown); cur.r != 1 || cur.c != 2 {
		t.Errorf("down from row 0 column 2 (of %d): at %+v", row0, cur)
	}
	frame := m.View()
	if !strings.Contains(frame, "◆") || !strings.Contains(frame, "enter: open") {
		t.Errorf("no cursor cell or status line:\n%s", frame)
	}
}

func TestCursorOnGroups(t *testing.T) {
	// 5,000 nodes at 80×24: a cell is several racks; enter lists them.
	m, in := drillModel(t, 5000, 80, 24)
	drive(t, m, key1(tea.KeyRight))
	drive(t, m, key1(tea.KeyRight))
	m.View()
	per := m.fleetMap.lay.perCell
	if per < 2 || m.fleetMap.cursor.node != fmt.Sprintf("gf-node-%05d", per) {
		t.Fatalf("cursor on %s with %d nodes per cell", m.fleetMap.cursor.node, per)
	}
	if !strings.Contains(m.View(), fmt.Sprintf("%d nodes in rack-", per)) {
		t.Errorf("the status line does not say the cell's nodes:\n%s", m.View())
	}
	drive(t, m, key1(tea.KeyEnter))
	l, ok := m.overlay.(*nodeList)
	if !ok || len(l.nodes) != per {
		t.Fatalf("enter on a group: overlay %T", m.overlay)
	}
	drive(t, m, keys("j"))
	drive(t, m, key1(tea.KeyEnter))
	if l.detail == nil || l.detail.name != fmt.Sprintf("gf-node-%05d", per+1) || in.fetches != 1 {
		t.Fatalf("enter in the list did not open its 2nd node: %+v, %d fetches", l.detail, in.fetches)
	}
	drive(t, m, key1(tea.KeyEsc))
	if m.overlay != l || l.detail != nil {
		t.Fatal("esc in a node opened from a list did not go back to the list")
	}
	drive(t, m, key1(tea.KeyEsc))
	if m.overlay != nil {
		t.Fatal("esc in the list did not go back to the map")
	}
}

func TestParseFilter(t *testing.T) {
	tests := []struct {
		in         string
		kind       filterKind
		key, value string
		err        string
	}{
		{in: "", kind: filterNone},
		{in: "faulted", kind: filterFaulted},
		{in: " NotReady ", kind: filterNotReady},
		{in: "cordoned", kind: filterCordoned},
		{in: "failed", kind: filterPhase},
		{in: "rack=rack-0012", kind: filterRack, key: fleet.LabelRack, value: "rack-0012"},
		{in: "rack=r012", kind: filterRack, key: fleet.LabelRack, value: "rack-0012"},
		{in: "rack=7", kind: filterRack, key: fleet.LabelRack, value: "rack-0007"},
		{in: "nvlink=3", kind: filterLabel, key: fleet.LabelNVLink, value: "nvl-00003"},
		{in: "gpu.product=NVIDIA-H100-80GB-HBM3", kind: filterLabel, key: "nvidia.com/gpu.product", value: "NVIDIA-H100-80GB-HBM3"},
		{in: "example.com/team=a", kind: filterLabel, key: "example.com/team", value: "a"},
		{in: "broken", err: `unknown filter "broken": allowed are faulted, notready, cordoned, failed`},
		{in: "rack=", err: `unknown filter "rack="`},
		{in: "phase=Running", err: "the map filters on failed pods only"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := parseFilter(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || f.kind != tt.kind || f.key != tt.key || f.value != tt.value {
				t.Errorf("got %+v %v, want kind %d %s=%s", f, err, tt.kind, tt.key, tt.value)
			}
		})
	}
}

func TestFilterFaultedThenOpen(t *testing.T) {
	m, in := drillModel(t, 100, 120, 40)
	drive(t, m, keys("/"))
	if !strings.Contains(m.View(), "/") || m.prompt == nil {
		t.Fatal("/ did not open the filter line")
	}
	typeLine(t, m, "faulted")
	frame := m.View()
	if !strings.Contains(frame, "filter faulted: 1 of 100 nodes") || m.prompt != nil {
		t.Fatalf("no filtered map:\n%s", frame)
	}
	drive(t, m, key1(tea.KeyEnter)) // the cursor is on the only faulted node
	d, ok := m.overlay.(*nodeDetail)
	if !ok || d.name != "gf-node-00006" {
		t.Fatalf("enter opened %T", m.overlay)
	}
	frame = m.View()
	for _, want := range []string{"GpuXidProblem True Xid79: Xid 79: GPU has", "nvidia.com/gpu-health=unhealthy:NoSchedule",
		"GPUs 6 used / 7 allocatable / 8 (1 out of service)", "gf-load/nccl-test-0", "main exit 3 Error: NCCL test failed"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the detail does not show %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "\x1b") || strings.Contains(frame, "pwned\a") {
		t.Errorf("the condition's escape sequences reached the frame:\n%q", frame)
	}
	// Each second while open, the node is fetched again.
	drive(t, m, tickMsg(epoch))
	if in.fetches != 2 {
		t.Errorf("%d fetches after a tick, want 2", in.fetches)
	}
	drive(t, m, key1(tea.KeyEsc))
	if m.overlay != nil || !m.fleetMap.filter.active() {
		t.Fatal("esc in the detail did not go back to the filtered map")
	}
	drive(t, m, key1(tea.KeyEsc))
	if m.fleetMap.filter.active() || !strings.Contains(m.View(), "Fleet · 100 nodes") {
		t.Errorf("esc on the map did not clear the filter:\n%s", m.View())
	}
	drive(t, m, tickMsg(epoch))
	if in.fetches != 2 {
		t.Errorf("a closed detail was fetched again")
	}
}

func TestFilterByLabelAsksTheAPIServer(t *testing.T) {
	m, in := drillModel(t, 100, 120, 40)
	in.match = map[string]bool{"gf-node-00010": true, "gf-node-00011": true}
	drive(t, m, keys("/"))
	typeLine(t, m, "gpu.product=NVIDIA-H100-80GB-HBM3")
	if len(in.queries) != 1 || in.queries[0].LabelKey != "nvidia.com/gpu.product" {
		t.Fatalf("queries %+v", in.queries)
	}
	if !strings.Contains(m.View(), "filter gpu.product=NVIDIA-H100-80GB-HBM3: 2 of 100 nodes") {
		t.Errorf("no filtered map:\n%s", m.View())
	}
	// A new view within refreshEvery does not ask again.
	drive(t, m, fleetMsg(sampleFleet(100)))
	if len(in.queries) != 1 {
		t.Errorf("asked again at once: %d queries", len(in.queries))
	}
	// A bad filter stays in the line with its error.
	drive(t, m, keys("/"))
	for range len("gpu.product=NVIDIA-H100-80GB-HBM3") {
		drive(t, m, key1(tea.KeyBackspace))
	}
	typeLine(t, m, "gpu")
	if m.prompt == nil || !strings.Contains(m.footer.View(), `unknown filter "gpu"`) {
		t.Errorf("a bad filter: prompt %v footer %q", m.prompt, m.footer.View())
	}
}
