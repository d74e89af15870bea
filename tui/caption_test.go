package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// The caption line under the header, playing and failed, at the smallest
// and a talk's size: every line still exactly as wide as the console.
func TestGoldenCaptionFrames(t *testing.T) {
	playing := Caption{Script: "teaser-60s", Step: 1, Steps: 5, Auto: true, State: "playing",
		Text: "400 one-GPU pods on a 100-node fleet", Detail: "until 120/400 pods running"}
	failed := Caption{Script: "talk-5min", Step: 3, Steps: 7, State: "failed",
		Detail: "step 3 (fault gpu-xid 5) failed: no Ready GPU nodes to fault; 1 run cancelled and recorded as interrupted"}
	waiting := Caption{Script: "talk-5min", Steps: 7, State: "waiting"}
	for _, tt := range []struct {
		name string
		c    Caption
		w, h int
	}{
		{"plain-80x24-caption", playing, 80, 24},
		{"plain-160x48-caption", playing, 160, 48},
		{"plain-80x24-caption-failed", failed, 80, 24},
		{"plain-160x48-caption-failed", failed, 160, 48},
		{"plain-160x48-caption-waiting", waiting, 160, 48},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pinProfile(t, termenv.Ascii)
			m := New(testConfig(false))
			m.setSize(tt.w, tt.h)
			m.Update(fleetMsg(sampleFleet(100)))
			m.Update(metricsMsg(sampleMetrics()))
			m.Update(ShowCaption(tt.c))
			frame := m.View()
			lines := strings.Split(frame, "\n")
			if len(lines) != tt.h {
				t.Errorf("frame has %d lines, want %d", len(lines), tt.h)
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w != tt.w {
					t.Errorf("line %d is %d cells wide, not %d: %q", i, w, tt.w, l)
				}
			}
			if !strings.Contains(lines[1], tt.c.Script) {
				t.Errorf("line 2 is not the caption: %q", lines[1])
			}
			golden(t, tt.name, frame)
		})
	}
}

// fakeDemo notes what the console asks of the demo.
type fakeDemo struct{ played, nexts, stops []string }

func (f *fakeDemo) demo() *Demo {
	return &Demo{
		Scripts: func() ([]string, error) { return []string{"teaser-60s", "talk-5min"}, nil },
		Play: func(s string, auto bool) error {
			mode := "presenter"
			if auto {
				mode = "auto"
			}
			f.played = append(f.played, s+" "+mode)
			return nil
		},
		Next: func() { f.nexts = append(f.nexts, "next") },
		Stop: func() { f.stops = append(f.stops, "stop") },
	}
}

// D opens the picker and plays the script chosen; space starts a
// presenter's next step; D while it plays stops it.
func TestDemoKeys(t *testing.T) {
	var f fakeDemo
	cfg := testConfig(false)
	cfg.Demo = f.demo()
	m := New(cfg)
	m.setSize(120, 40)
	drive(t, m, keys("D"))
	if v := m.View(); !strings.Contains(v, "Play a demo") || !strings.Contains(v, "teaser-60s, talk-5min") {
		t.Fatalf("D did not open the picker:\n%s", v)
	}
	drive(t, m, tea.KeyMsg{Type: tea.KeyTab})
	for range "presenter" {
		drive(t, m, tea.KeyMsg{Type: tea.KeyBackspace})
	}
	drive(t, m, keys("auto"))
	drive(t, m, tea.KeyMsg{Type: tea.KeyEnter})
	if strings.Join(f.played, ",") != "teaser-60s auto" || m.overlay != nil {
		t.Fatalf("played %v, overlay %v", f.played, m.overlay)
	}

	drive(t, m, ShowCaption(Caption{Script: "teaser-60s", Steps: 5, State: "waiting"}))
	drive(t, m, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")})
	if len(f.nexts) != 1 {
		t.Errorf("space while waiting: %d nexts", len(f.nexts))
	}
	drive(t, m, keys("D"))
	if len(f.stops) != 1 || m.overlay != nil {
		t.Errorf("D while playing: %d stops, overlay %v", len(f.stops), m.overlay)
	}
	drive(t, m, ShowCaption(Caption{Script: "teaser-60s", Step: 2, Steps: 5, State: "stopped", Detail: "1 run cancelled"}))
	drive(t, m, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")})
	if len(f.nexts) != 1 {
		t.Errorf("space after the demo stopped still went on")
	}
}

// A demo's step starts as a run in the activity pane, and a run whose
// outcome asks for it saves the frame as text in its folder.
func TestStartRunKeepsFrame(t *testing.T) {
	dir := t.TempDir()
	m := New(testConfig(false))
	m.setSize(120, 40)
	m.Update(fleetMsg(sampleFleet(100)))
	drive(t, m, StartRun(Action{Name: "snapshot", Run: func(context.Context, []string, Control) (Outcome, error) {
		return Outcome{Summary: "3 SLOs pass", Dir: dir, Frame: "frame.txt"}, nil
	}}))
	data, err := os.ReadFile(filepath.Join(dir, "frame.txt"))
	if err != nil {
		t.Fatal(err)
	}
	frame := string(data)
	if !strings.Contains(frame, "GhostFleet") || !strings.Contains(frame, "✓ snapshot") || strings.Contains(frame, "\x1b[") {
		t.Errorf("frame.txt:\n%s", frame)
	}
	if n := strings.Count(frame, "\n"); n != 40 {
		t.Errorf("frame.txt has %d lines, want 40", n)
	}
}
