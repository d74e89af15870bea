package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// A component going down shows first in the header and as an alert in the
// activity pane, kept for the run in progress; its return is logged with
// how long it was down, and the header clears.
func TestComponentDownAndBack(t *testing.T) {
	now := epoch
	cfg := testConfig(false)
	cfg.Now = func() time.Time { return now }
	cfg.Health = func() []string { return nil }
	m := New(cfg)
	m.setSize(160, 48)
	m.Update(fleetMsg(sampleFleet(40)))
	churn := &run{id: 7, name: "churn 50/s"}
	m.activity.runs = append(m.activity.runs, churn)

	m.Update(healthMsg{"kube-apiserver"})
	frame := ansi.Strip(m.View())
	header := strings.SplitN(frame, "\n", 2)[0]
	if !strings.Contains(header, "DOWN: kube-apiserver") {
		t.Errorf("header while the apiserver is down: %q", header)
	}
	if !strings.Contains(frame, "kube-apiserver down during churn 50/s") {
		t.Errorf("no alert for the apiserver going down:\n%s", frame)
	}
	now = now.Add(12 * time.Second)
	m.Update(healthMsg{"kube-apiserver"}) // still down: nothing new
	m.Update(healthMsg{})
	frame = ansi.Strip(m.View())
	if strings.Contains(strings.SplitN(frame, "\n", 2)[0], "DOWN") {
		t.Errorf("header still says DOWN after the apiserver came back")
	}
	if !strings.Contains(frame, "kube-apiserver back after 12s") {
		t.Errorf("no alert for the apiserver coming back:\n%s", frame)
	}
	kept := m.slo.alerts.byRun[churn.id]
	if len(kept) != 2 || kept[0].Kind != report.AlertDown || kept[1].Kind != report.AlertBack || kept[1].Value != 12 {
		t.Errorf("alerts kept for the churn's record: %+v", kept)
	}
}
