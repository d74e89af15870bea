package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

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
				if w := lipgloss.Width(l); w != tt.w {
					t.Errorf("line %d is %d cells wide, not %d: %q", i, w, tt.w, l)
				}
			}
			golden(t, tt.name, frame)
		})
	}
}

// A frame with a run in progress and one finished: the activity pane's
// progress bar and outcome, the header's state.
func TestGoldenFrameWithRuns(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.setSize(120, 40)
	m.Update(fleetMsg(sampleFleet(100)))
	m.Update(metricsMsg(sampleMetrics()))
	m.activity.runs = []*run{
		{id: 1, name: "load 8000×1", started: epoch.Add(-3 * 60e9), ended: epoch.Add(-60e9), finished: true, progress: -1,
			outcome: Outcome{Summary: "8,000 pods scheduled in 1m52s; pod startup p99 2.1s (SLO 5s)", Dir: "results/load-20261129-1157"}},
		{id: 2, name: "churn 50/s", started: epoch.Add(-42e9), progress: 0.35, message: "churning: 2,100 of 6,000 pods", rate: &fakeRate{rate: 50}},
	}
	golden(t, "plain-120x40-runs", m.View())
}

func TestTooSmall(t *testing.T) {
	got := Frame(testConfig(false), sampleFleet(10), poll.MetricsView{}, 60, 20)
	if !strings.Contains(got, "at least 80×24") || !strings.Contains(got, "60×20") {
		t.Errorf("small terminal: %q", got)
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
	if m.w != 120 || m.h != 40 || m.sparks.w != 120 || m.fleetMap.w != 120-40 {
		t.Fatalf("size %d×%d (charts %d wide, map %d), want 120×40", m.w, m.h, m.sparks.w, m.fleetMap.w)
	}
	if frame := m.View(); len(strings.Split(frame, "\n")) != 40 {
		t.Errorf("frame after resize is not 40 lines:\n%s", frame)
	}
}

func TestViewIsMemoised(t *testing.T) {
	m := New(testConfig(false))
	m.Update(fleetMsg(sampleFleet(10)))
	a := m.View()
	m.fleetMap.fleet = sampleFleet(20) // changed behind Update's back: not redrawn
	if b := m.View(); b != a {
		t.Error("View redrew without a message")
	}
	m.Update(fleetMsg(sampleFleet(20)))
	if b := m.View(); b == a {
		t.Error("View did not redraw after new data")
	}
}

// The clock's tick redraws the frame but neither the map nor the charts.
func TestTickKeepsTheCostlyPanes(t *testing.T) {
	m := New(testConfig(false))
	m.setSize(120, 40)
	m.Update(fleetMsg(sampleFleet(100)))
	m.Update(metricsMsg(sampleMetrics()))
	m.View()
	m.fleetMap.out, m.sparks.out, m.allocation.out = "map", "charts", "allocation" // what a redraw would replace
	m.Update(tickMsg(epoch))
	frame := m.View()
	for _, memo := range []string{"map", "charts", "allocation"} {
		if !strings.Contains(frame, memo) {
			t.Errorf("a tick redrew the %s", memo)
		}
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
}

// BenchmarkTickRedraw is the console's steady state: the clock ticks every
// second and only the header and activity change.
func BenchmarkTickRedraw(b *testing.B) {
	m := New(testConfig(true))
	m.setSize(160, 48)
	m.Update(fleetMsg(sampleFleet(1000)))
	m.Update(metricsMsg(sampleMetrics()))
	m.View()
	b.ReportAllocs()
	for b.Loop() {
		m.Update(tickMsg(epoch))
		_ = m.View()
	}
}
