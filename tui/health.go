package tui

import (
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// healthEvery is how often the console asks which components are down:
// a few pid files and /proc entries, cheap enough to read every 2 s.
const healthEvery = 2 * time.Second

// healthMsg is the components that were down when last asked.
type healthMsg []string

// health is the header's word on the control plane's processes: which
// are down and since when. Each change is logged like an SLO alert, in
// the activity pane and in the records of the runs in progress.
type health struct {
	since map[string]time.Time // down components, by when they went down
}

func (m *Model) healthCheck() tea.Cmd {
	if m.cfg.Health == nil {
		return nil
	}
	check := m.cfg.Health
	return tea.Tick(healthEvery, func(time.Time) tea.Msg { return healthMsg(check()) })
}

// healthUpdate notes which components are down, logs the changes and
// asks again.
func (m *Model) healthUpdate(down healthMsg) tea.Cmd {
	h, now := &m.health, m.ctx.now()
	if h.since == nil {
		h.since = map[string]time.Time{}
	}
	for _, name := range down {
		if _, ok := h.since[name]; !ok {
			h.since[name] = now
			m.slo.alerts.add(report.Alert{At: now, SLO: "component", Name: name, Kind: report.AlertDown}, m.activity.runs)
			m.dirty = true
		}
	}
	for name, since := range h.since {
		if !slices.Contains(down, name) {
			delete(h.since, name)
			m.slo.alerts.add(report.Alert{At: now, SLO: "component", Name: name, Kind: report.AlertBack, Value: now.Sub(since).Seconds()}, m.activity.runs)
			m.dirty = true
		}
	}
	return m.healthCheck()
}

// text is the header's part: "DOWN: etcd, kube-scheduler", or "" when
// every component runs.
func (h *health) text() string {
	if len(h.since) == 0 {
		return ""
	}
	names := make([]string, 0, len(h.since))
	for name := range h.since {
		names = append(names, name)
	}
	slices.Sort(names)
	return "DOWN: " + strings.Join(names, ", ")
}
