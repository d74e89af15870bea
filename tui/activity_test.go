package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestProgressBarFromUpdates(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	m := New(testConfig(false))
	m.setSize(100, 30)
	r := &run{id: 1, name: "load 10×1", started: epoch, progress: -1, cancel: func() {}}
	m.activity.runs = append(m.activity.runs, r)
	r.apply(progress.Event{Kind: progress.Start, Step: "create", Message: "creating 10 pods"})
	r.apply(progress.Event{Kind: progress.Update, Step: "create", Done: 5, Total: 10})
	got := m.activity.content(30, 10)
	if !strings.Contains(got, "50%") || !strings.Contains(got, "creating 10 pods") {
		t.Errorf("activity at half way:\n%s", got)
	}
	if !strings.Contains(got, strings.Repeat("█", 6)+strings.Repeat("░", 6)) {
		t.Errorf("no half-full bar:\n%s", got)
	}
	r.apply(progress.Event{Kind: progress.Finish, Step: "create", Message: "created"})
	if got := m.activity.content(30, 10); strings.Contains(got, "%") || !strings.Contains(got, "created ✓") {
		t.Errorf("activity after the step:\n%s", got)
	}
}

func TestEscCancelsTheCurrentRunAndRateKeysChangeIt(t *testing.T) {
	m := New(testConfig(false))
	cancelled := false
	rc := &fakeRate{rate: 50}
	m.activity.runs = []*run{{id: 1, name: "churn 50/s", cancel: func() { cancelled = true }, rate: rc, progress: -1}}
	drive(t, m, keys("+"))
	if rc.rate != 60 || m.footer.notice != "churn rate 50 → 60 pods/s" {
		t.Errorf("+ set rate %g (notice %q), want 60", rc.rate, m.footer.notice)
	}
	drive(t, m, keys("-"))
	drive(t, m, keys("-"))
	if rc.rate != 40 {
		t.Errorf("- - set rate %g, want 40", rc.rate)
	}
	rc.rate = 100
	drive(t, m, keys("+"))
	if rc.rate != 100 || !strings.Contains(m.footer.notice, "too fast") {
		t.Errorf("a refused rate: rate %g notice %q", rc.rate, m.footer.notice)
	}
	// A snapshot started after the churn does not take the rate keys.
	m.activity.runs = append(m.activity.runs, &run{id: 2, name: "snapshot", cancel: func() {}, progress: -1})
	drive(t, m, keys("-"))
	if rc.rate != 90 {
		t.Errorf("- with a later snapshot active set rate %g, want 90", rc.rate)
	}
	m.activity.runs = m.activity.runs[:1]
	drive(t, m, tea.KeyMsg{Type: tea.KeyEsc})
	if !cancelled || !m.activity.runs[0].cancelled {
		t.Error("esc did not cancel the run")
	}
	m.activity.runs[0].finished = true
	drive(t, m, tea.KeyMsg{Type: tea.KeyEsc})
	if m.footer.notice != "no run to cancel" {
		t.Errorf("esc without a run: notice %q", m.footer.notice)
	}
}

func TestNoticeExpires(t *testing.T) {
	now := epoch
	cfg := testConfig(false)
	cfg.Now = func() time.Time { return now }
	m := New(cfg)
	drive(t, m, keys("+"))
	if m.footer.notice == "" {
		t.Fatal("+ without a churn said nothing")
	}
	now = now.Add(noticeFor + 1)
	m.Update(tickMsg(now))
	if m.footer.notice != "" || !strings.Contains(m.footer.View(), "q quit") {
		t.Errorf("notice after %s: %q", noticeFor, m.footer.notice)
	}
}
