package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

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
	m.setSize(100, 30)
	drive(t, m, keys("l"))
	f, ok := m.overlay.(*form)
	if !ok {
		t.Fatal("l did not open the load form")
	}
	if frame := m.View(); !strings.Contains(frame, "enter start") || strings.Contains(frame, "l load") {
		t.Errorf("the footer does not show the form's keys:\n%s", frame)
	}
	drive(t, m, keys("q")) // typed into the field, not quitting
	if m.quitting || f.values()[0] != "8000q" {
		t.Fatalf("q in a form: quitting=%v value=%q", m.quitting, f.values()[0])
	}
	drive(t, m, tea.KeyMsg{Type: tea.KeyBackspace})
	drive(t, m, tea.KeyMsg{Type: tea.KeyTab})
	drive(t, m, tea.KeyMsg{Type: tea.KeyBackspace})
	drive(t, m, keys("2"))
	// enter starts the run; the relay delivers its events as messages.
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if m.overlay != nil || len(m.activity.runs) != 1 {
		t.Fatalf("enter did not start a run: overlay %v runs %d", m.overlay, len(m.activity.runs))
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
	r := m.activity.runs[0]
	if !r.finished || r.err != nil || r.outcome.Dir != "results/load-1" {
		t.Errorf("run after done: %+v", r)
	}
	if frame := m.View(); !strings.Contains(frame, "verdict: fine") || !strings.Contains(frame, "results/load-1") {
		t.Errorf("activity does not show the outcome:\n%s", frame)
	}
}

func TestQuitAsksWhileARunIsActive(t *testing.T) {
	m := New(testConfig(false))
	cancelled := false
	m.activity.runs = []*run{{id: 1, name: "load", cancel: func() { cancelled = true }, progress: -1}}
	_, cmd := m.Update(keys("q"))
	if _, ok := m.overlay.(*confirm); cmd != nil || !ok {
		t.Fatal("q with an active run quit without asking")
	}
	_, cmd = m.Update(keys("n"))
	if cmd != nil || m.quitting || cancelled || m.overlay != nil {
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

func TestCtrlCTwiceQuitsWithRunsActive(t *testing.T) {
	m := New(testConfig(false))
	cancelled := false
	m.activity.runs = []*run{{id: 1, name: "load", cancel: func() { cancelled = true }, progress: -1}}
	ctrlC := tea.KeyMsg{Type: tea.KeyCtrlC}
	drive(t, m, keys("l")) // no such action here: nothing opens
	m.Update(ctrlC)
	m.Update(ctrlC)
	if !cancelled || !m.quitting {
		t.Fatalf("ctrl+c twice: cancelled %v quitting %v", cancelled, m.quitting)
	}
}

func TestUnavailableActionSaysSo(t *testing.T) {
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{
		ActCL2:    {Name: "CL2", Unavailable: "no clusterloader binary"},
		ActFaults: {Name: "Faults", Unavailable: "faults need a fleet of ours:\nrun ghostfleet up"},
	}
	m := New(cfg)
	drive(t, m, keys("b"))
	if m.overlay != nil || len(m.activity.runs) != 0 || !strings.Contains(m.footer.View(), "no clusterloader binary") {
		t.Errorf("b: overlay %v runs %d footer %q", m.overlay, len(m.activity.runs), m.footer.View())
	}
	// A longer reason takes the map's place until any key.
	drive(t, m, keys("f"))
	if frame := m.View(); !strings.Contains(frame, "Not available") || !strings.Contains(frame, "run ghostfleet up") {
		t.Errorf("f: no note in the map's place:\n%s", frame)
	}
	drive(t, m, keys("q"))
	if m.overlay != nil || m.quitting {
		t.Errorf("the key that closes a note did more: overlay %v quitting %v", m.overlay, m.quitting)
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

// Action keys are matched through the keymap: a binding switched off
// starts nothing, even though the action exists.
func TestActionKeysGoThroughTheKeymap(t *testing.T) {
	started := 0
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{ActSnapshot: {Name: "snapshot", Run: func(context.Context, []string, Control) (Outcome, error) {
		started++
		return Outcome{}, nil
	}}}
	m := New(cfg)
	drive(t, m, keys("s"))
	if started != 1 {
		t.Fatalf("s started %d snapshots, want 1", started)
	}
	m.ctx.keys.Snapshot.SetEnabled(false)
	drive(t, m, keys("s"))
	if started != 1 {
		t.Errorf("s with its binding off started a snapshot")
	}
	for _, a := range m.ctx.keys.actions() {
		if got := a.key.Keys(); len(got) != 1 || got[0] != string(a.act) {
			t.Errorf("action %q is bound to %q", a.act, got)
		}
	}
}

// ? opens every key in the map's place; esc closes it, and any other key
// closes it and does what it does.
func TestHelpOverlay(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.setSize(120, 40)
	drive(t, m, keys("?"))
	frame := m.View()
	for _, want := range []string{"Keys", "training jobs", "API SLO class", "any key closes this"} {
		if !strings.Contains(frame, want) {
			t.Errorf("help overlay lacks %q:\n%s", want, frame)
		}
	}
	drive(t, m, tea.KeyMsg{Type: tea.KeyEsc})
	if m.overlay != nil || m.footer.notice != "" {
		t.Fatalf("esc on the help: overlay %v notice %q (it cancelled nothing)", m.overlay, m.footer.notice)
	}
	drive(t, m, keys("?"))
	drive(t, m, keys("v"))
	if m.overlay != nil || m.sparks.class != 1 {
		t.Errorf("v on the help: overlay %v class %d, want closed and the next class", m.overlay, m.sparks.class)
	}
}

func TestKeyHelpIsTheBindings(t *testing.T) {
	k := newKeyMap()
	for _, b := range append(k.ShortHelp(), k.FullHelp()[2]...) {
		if !b.Enabled() || b.Help().Key == "" {
			t.Errorf("binding %v without keys or help", b.Keys())
		}
	}
	if !key.Matches(keys("="), k.Faster) || !key.Matches(keys("_"), k.Slower) {
		t.Error("+/- lost their unshifted keys")
	}
}
