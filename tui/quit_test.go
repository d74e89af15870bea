package tui

import (
	"context"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// Quit asked while a run was active and answered after it ended quits:
// no run is left to end and quit the console (it used to stay, blank).
func TestQuitAfterTheRunEnded(t *testing.T) {
	m := New(testConfig(false))
	m.setSize(120, 40)
	release := make(chan struct{})
	start := m.activity.start(Action{Name: "load", Run: func(context.Context, []string, Control) (Outcome, error) {
		<-release
		return Outcome{}, nil
	}}, nil)
	done := make(chan []tea.Msg)
	go func() { done <- run1(start) }()
	m.Update(keys("q")) // one run active: it asks
	if _, ok := m.overlay.(*confirm); !ok {
		t.Fatalf("q with a run active did not ask: overlay %T", m.overlay)
	}
	close(release)
	for _, msg := range <-done {
		m.Update(msg) // the run ends while the question is open
	}
	_, cmd := m.Update(keys("q"))
	var quit bool
	for _, msg := range run1(cmd) {
		_, quit = msg.(tea.QuitMsg)
	}
	if !quit {
		t.Error("answering the question after the run ended did not quit")
	}
}
