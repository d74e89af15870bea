package tui

import (
	"strings"
	"testing"
	"time"
)

func TestAxisPlacesTimesAndMarks(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := timeAxis{at: now, window: 15 * time.Minute}
	for _, tt := range []struct {
		ago  time.Duration
		col  int
		in   bool
		name string
	}{
		{0, 60, true, "now is the last column"},
		{15 * time.Minute, 0, true, "the window's start the first"},
		{5 * time.Minute, 40, true, "−5m two thirds in"},
		{16 * time.Minute, 0, false, "before the window"},
		{-time.Minute, 0, false, "after now"},
	} {
		if c, in := a.col(now.Add(-tt.ago), 61); c != tt.col || in != tt.in {
			t.Errorf("%s: column %d (%v), want %d (%v)", tt.name, c, in, tt.col, tt.in)
		}
	}
	th := NewTheme(false)
	a.marks = []mark{
		{start: now.Add(-20 * time.Minute), end: now.Add(-12 * time.Minute)}, // began before the window
		{start: now.Add(-6 * time.Minute), end: now.Add(-5*time.Minute - 30*time.Second), fault: true},
		{start: now.Add(-3 * time.Minute)}, // still running
	}
	row := a.markRow(th, 61)
	// 61 columns, 15s each: −12m is column 12, −6m 36, −3m 48.
	want := strings.Repeat("━", 13) + strings.Repeat(" ", 23) + "!" + strings.Repeat(" ", 11) + strings.Repeat("━", 13)
	if row != want {
		t.Errorf("marks\n%q\nwant\n%q", row, want)
	}
	// On a short chart the axis is the bottom border, marks and all:
	// labels win over a run's span, a fault wins over everything.
	box := chartBox(th, "t", "x", 40, 5, &a, 0, 36, true)
	bottom := box[strings.LastIndexByte(box, '\n')+1:]
	if !strings.HasPrefix(bottom, "╰─−15m") || !strings.HasSuffix(bottom, "now─╯") || !strings.Contains(bottom, "!") || !strings.Contains(bottom, "━") {
		t.Errorf("bottom border %q", bottom)
	}
	if got := len([]rune(bottom)); got != 40 {
		t.Errorf("bottom border %d cells, want 40", got)
	}
	for _, w := range []time.Duration{5 * time.Minute, time.Hour} {
		b := chartBox(th, "t", "x", 60, 5, &timeAxis{at: now, window: w}, 0, 56, true)
		if bottom := b[strings.LastIndexByte(b, '\n')+1:]; !strings.Contains(bottom, ago(w)) || !strings.Contains(bottom, ago(w/5*3)) && !strings.Contains(bottom, "−30m") {
			t.Errorf("%s window: %q", w, bottom)
		}
	}
}

// z cycles the charts' window and asks the poller for it.
func TestZCyclesTheWindow(t *testing.T) {
	var asked []time.Duration
	p := &sparkPanel{shared: &shared{th: NewTheme(false), keys: newKeyMap()}, setWindow: func(d time.Duration) { asked = append(asked, d) }}
	for range 3 {
		p.nextWindow()
	}
	if len(asked) != 3 || asked[0] != time.Hour || asked[1] != 5*time.Minute || asked[2] != 15*time.Minute {
		t.Errorf("z asked for %v, want 1h, 5m, 15m", asked)
	}
}
