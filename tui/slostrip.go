package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// sloStrip is the line under the header: every upstream SLO live, pass /
// at risk / breached, from the charts' own metrics. It judges each round
// (slo.go), logs breaches and recoveries (alerts.go) and is redrawn only
// when a round or the size changes.
type sloStrip struct {
	noKeys
	*shared
	size
	scale   float64
	classes []sloSLI
	startup podStartup
	haveMet bool
	err     string
	alerts  alertLog
	alarms  []string // etcd's, from the round (etcdalarm.go)
	out     string
}

func newSLOStrip(c *shared, scale float64) *sloStrip {
	if scale <= 0 {
		scale = 1
	}
	return &sloStrip{shared: c, scale: scale, classes: sloClasses(scale), alerts: newAlertLog()}
}

func (s *sloStrip) SetSize(w, h int) {
	if s.resized(w, h) {
		s.out = ""
	}
}

// observe judges a round of metrics and returns its alerts, stamped
// with the runs in progress (runs).
func (s *sloStrip) observe(m poll.MetricsView, runs []*run) []report.Alert {
	s.out, s.haveMet, s.err, s.alarms = "", true, m.Err, m.EtcdAlarms
	if m.Err != "" {
		return nil // the source failed: no verdict either way
	}
	var out []report.Alert
	for i := range s.classes {
		if a := s.classes[i].observe(m); a != nil {
			out = append(out, s.alerts.add(*a, runs))
		}
	}
	return out
}

func (s *sloStrip) Update(msg tea.Msg) tea.Cmd { return nil }

// View is the strip: each SLO with its glyph, value and threshold, the
// long form when it fits the width, else a shorter one.
func (s *sloStrip) View() string {
	if s.out != "" {
		return s.out
	}
	th := s.th
	head := s.etcdAlarmCell() + th.Bold.Render("SLOs") + th.Dim.Render(" p99 5m ")
	if !s.haveMet {
		s.out = fitLine(head+th.Dim.Render("waiting for metrics…"), s.w)
		return s.out
	}
	if s.err != "" {
		s.out = fitLine(head+th.Dim.Render("no verdict: metrics unavailable"), s.w)
		return s.out
	}
	for _, form := range []int{formLong, formMid, formShort} {
		cells := make([]string, 0, len(s.classes)+1)
		for _, c := range s.classes {
			cells = append(cells, s.cell(c, form))
		}
		cells = append(cells, s.startupCell(form))
		sep := th.Dim.Render(" · ")
		if form == formShort {
			sep = " "
		}
		line := head + strings.Join(cells, sep)
		if ansi.StringWidth(line) <= s.w || form == formShort {
			s.out = fitLine(line, s.w)
			break
		}
	}
	return s.out
}

// The strip's forms, widest first.
const (
	formLong = iota
	formMid
	formShort
)

// glyph and style of a level: the glyph alone carries it without color.
func (s *sloStrip) look(l sloLevel) (string, lipgloss.Style) {
	switch l {
	case sloPass:
		return "✓", s.th.Good
	case sloAtRisk:
		return "▲", s.th.Warn
	case sloBreached:
		return "✗", s.th.Bad
	}
	return "–", s.th.Dim
}

func (s *sloStrip) cell(c sloSLI, form int) string {
	g, st := s.look(c.level)
	name := strings.TrimSuffix(c.name, " p99")
	if form == formShort {
		name = c.short
	}
	if c.level == sloNoData {
		switch form {
		case formShort:
			return s.th.Dim.Render(g + name)
		case formMid:
			return s.th.Dim.Render(g + " " + name)
		}
		return s.th.Dim.Render(fmt.Sprintf("%s %s no calls", g, name))
	}
	v := report.Seconds(c.value)
	switch form {
	case formLong:
		word := ""
		switch c.level {
		case sloAtRisk:
			word = " AT RISK"
		case sloBreached:
			word = " BREACHED " + c.scope
		}
		return st.Render(g+" "+name+" "+v) + s.th.Dim.Render("/"+report.Seconds(c.threshold)) + st.Render(word)
	case formMid:
		return st.Render(g+" "+name+" "+v) + s.th.Dim.Render("/"+report.Seconds(c.threshold))
	}
	return st.Render(g + name + " " + v)
}

// startupCell is the pod startup SLO: judged on steady runs only.
func (s *sloStrip) startupCell(form int) string {
	p := s.startup
	name := "pod startup"
	if form == formShort {
		name = "start"
	}
	threshold := report.PodStartupThreshold * s.scale
	if p.run == "" {
		switch form {
		case formShort:
			return s.th.Dim.Render("–" + name)
		case formMid:
			return s.th.Dim.Render("– " + name)
		}
		return s.th.Dim.Render("– " + name + " (steady runs) none yet")
	}
	if !p.judged && p.level == sloNoData {
		if form == formShort {
			return s.th.Dim.Render("–" + name + " burst")
		}
		return s.th.Dim.Render(fmt.Sprintf("– %s %s burst, not judged", name, report.Seconds(p.p99)))
	}
	g, st := s.look(p.level)
	cell := st.Render(g+" "+name+" "+report.Seconds(p.p99)) + s.th.Dim.Render("/"+report.Seconds(threshold))
	if form == formLong {
		cell += s.th.Dim.Render(" steady")
	}
	return cell
}

// sloHelp is what the help says of the strip and the charts' axis.
func sloHelp() string {
	return fmt.Sprintf("SLOs: p99 over the last 5m against the upstream threshold (GhostFleet's catalog): ✓ pass · ▲ at risk from %.0f %% of it · ✗ breached over it · – no calls; "+
		"pod startup from the latest steady run only. Charts: ━ a run, ! a fault.", AtRiskAt*100)
}
