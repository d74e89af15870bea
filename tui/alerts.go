package tui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// alertsKept is how many alerts the activity pane can show.
const alertsKept = 20

// alertLog is the strip's breaches and recoveries: the latest for the
// activity pane, and each one kept for the record of every run in
// progress when it happened (alerts.json in the run's folder when it
// finishes) or, with none in progress, for the next snapshot.
type alertLog struct {
	recent []report.Alert
	byRun  map[int][]report.Alert
	loose  []report.Alert
}

func newAlertLog() alertLog { return alertLog{byRun: map[int][]report.Alert{}} }

// add stamps a with the runs in progress and keeps it for their records.
func (l *alertLog) add(a report.Alert, runs []*run) report.Alert {
	var names []string
	for _, r := range runs {
		if !r.finished {
			names = append(names, r.name)
		}
	}
	a.Run = strings.Join(names, ", ")
	for _, r := range runs {
		if !r.finished {
			l.byRun[r.id] = append(l.byRun[r.id], a)
		}
	}
	if len(names) == 0 {
		l.loose = append(l.loose, a)
	}
	l.recent = append(l.recent, a)
	if len(l.recent) > alertsKept {
		l.recent = l.recent[len(l.recent)-alertsKept:]
	}
	return a
}

// isSnapshot tells a snapshot's folder (record.NewRunDir names it
// snapshot-<time>) from a run's.
func isSnapshot(dir string) bool { return strings.HasPrefix(filepath.Base(dir), "snapshot-") }

// finished hands r's alerts to its folder: alerts.json, written off the
// UI goroutine. A snapshot also takes those seen with no run in
// progress; a run without a folder leaves its alerts to the next
// snapshot.
func (l *alertLog) finished(r *run) tea.Cmd {
	as := l.byRun[r.id]
	delete(l.byRun, r.id)
	dir := r.outcome.Dir
	switch {
	case dir == "":
		l.loose = append(l.loose, as...)
		return nil
	case isSnapshot(dir):
		as, l.loose = append(l.loose, as...), nil
	}
	if len(as) == 0 {
		return nil
	}
	return func() tea.Msg {
		if err := report.WriteAlerts(dir, as); err != nil {
			return noticeMsg("SLO alerts not recorded: " + err.Error())
		}
		return nil
	}
}

// startupMsg is a finished run's pod startup figure, read back from its
// record.
type startupMsg struct {
	run    string
	p99    float64
	judged bool
}

// readStartup reads the pod startup figure of the run recorded in dir,
// off the UI goroutine; runs that measure none send nothing.
func readStartup(name, dir string) tea.Cmd {
	if dir == "" || isSnapshot(dir) {
		return nil
	}
	return func() tea.Msg {
		data, err := os.ReadFile(filepath.Join(dir, "run.json"))
		if err != nil {
			return nil
		}
		var rec record.Record
		if json.Unmarshal(data, &rec) != nil || rec.Kind == "" {
			return nil
		}
		if p99, judged, ok := report.PodStartup(rec); ok {
			return startupMsg{name, p99, judged}
		}
		return nil
	}
}

// alertsShown is how many lines of alerts the activity pane gives them.
const alertsShown = 4

// alertLines are the latest alerts, newest first, wrapped to w, at most n
// lines, for the activity pane.
func (s *sloStrip) alertLines(w, n int) []string {
	var lines []string
	for i := len(s.alerts.recent) - 1; i >= 0; i-- {
		a := s.alerts.recent[i]
		style, mark := s.th.Bad, "✗ "
		if a.Good() {
			style, mark = s.th.Good, "✓ "
		}
		// The mark and the text's first w columns, then the rest indented
		// under it: every line fits w (the box cuts a wider one).
		first, rest, _ := strings.Cut(ansi.Wrap(mark+a.Text(), w, ""), "\n")
		more := []string{style.Render(strings.TrimRight(first, " "))}
		if rest = strings.TrimSpace(strings.ReplaceAll(rest, "\n", " ")); rest != "" {
			more = append(more, wrapUpTo(style, rest, w, 2)...)
		}
		if len(lines)+len(more) > n {
			break
		}
		lines = append(lines, more...)
	}
	return lines
}

// sloRound judges a round of metrics; the alerts it raises show in the
// activity pane (alertLines) and wait for their runs' records.
func (m *Model) sloRound(met poll.MetricsView) {
	m.slo.observe(met, m.activity.runs)
}

// sloRunDone hands a finished run's alerts to its folder and reads its
// pod startup figure back for the strip.
func (m *Model) sloRunDone(id int) tea.Cmd {
	r := m.activity.run(id)
	if r == nil || !r.finished {
		return nil
	}
	write, read := m.slo.alerts.finished(r), readStartup(r.name, r.outcome.Dir)
	if write == nil && read == nil {
		return nil
	}
	// One command, in order: on quitting, the alerts are written before
	// the console exits.
	return func() tea.Msg {
		if write != nil {
			if msg := write(); msg != nil {
				return msg
			}
		}
		if read != nil {
			return read()
		}
		return nil
	}
}

// sloStartup judges a finished run's pod startup figure.
func (m *Model) sloStartup(msg startupMsg) {
	s := m.slo
	s.out = ""
	if a := s.startup.set(msg.run, msg.p99, msg.judged, report.PodStartupThreshold*s.scale); a != nil {
		a.At = m.ctx.now()
		s.alerts.add(*a, m.activity.runs)
	}
}
