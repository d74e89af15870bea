package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
)

// activity is the runs pane and the runs' lifecycle (runs.go): it starts
// them for the root, follows their reports, and takes the keys that act
// on a running one (esc, +/-). Elapsed times change every second, so it is
// drawn each frame; it is a few short lines.
type activity struct {
	*shared
	size
	runs   []*run
	nextID int
	bar    progress.Model
	// alertLines are the latest SLO alerts (the strip's), shown after
	// the active runs.
	alertLines func(w, n int) []string
}

func newActivity(c *shared) *activity { return &activity{shared: c, bar: newBar(c.th, true)} }

func (p *activity) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case runEvent:
		if r := p.run(msg.id); r != nil {
			r.apply(msg.ev)
			return relay(r)
		}
	case runLive:
		if r := p.run(msg.id); r != nil {
			r.rate = msg.rc
			return relay(r)
		}
	case runDone:
		if r := p.run(msg.id); r != nil {
			r.finished, r.ended, r.outcome, r.err, r.rate = true, p.now(), msg.outcome, msg.err, nil
		}
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, p.keys.Cancel):
			return p.cancelCurrent()
		case key.Matches(msg, p.keys.Faster, p.keys.Slower):
			return p.changeRate(key.Matches(msg, p.keys.Faster))
		}
	}
	return nil
}

func (p *activity) SetSize(w, h int) {
	p.resized(w, h)
	p.bar.Width = w - 7 // the content width (w-4) less the two-cell indent and a cell spare
}

func (p *activity) ShortHelp() []key.Binding  { return []key.Binding{p.keys.Cancel, p.keys.Faster} }
func (p *activity) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

func (p *activity) View() string {
	return box(p.th, "Activity", p.content(p.w-4, p.h-3), p.w, p.h)
}

// content lists runs, active first then the latest finished, in w×h.
func (p *activity) content(w, h int) string {
	th := p.th
	if len(p.runs) == 0 && p.alertLines != nil {
		if alerts := p.alertLines(w, h); len(alerts) > 0 {
			return strings.Join(alerts, "\n")
		}
	}
	if len(p.runs) == 0 {
		return th.Dim.Render("no runs yet: l starts a load, c a churn")
	}
	var lines []string
	now := p.now()
	for i := len(p.runs) - 1; i >= 0 && len(lines) < h; i-- {
		r := p.runs[i]
		if r.finished {
			continue
		}
		label := fmt.Sprintf("▸ %s  %s", th.Bold.Render(r.name), duration(now.Sub(r.started)))
		if r.rate != nil {
			label += fmt.Sprintf("  %g pods/s", r.rate.Rate())
		}
		lines = append(lines, label)
		if r.progress >= 0 {
			lines = append(lines, "  "+p.bar.ViewAs(r.progress))
		}
		if r.message != "" {
			lines = append(lines, "  "+th.Dim.Render(r.message))
		}
	}
	if p.alertLines != nil {
		lines = append(lines, p.alertLines(w, min(alertsShown, h-len(lines)))...)
	}
	latest := true
	for i := len(p.runs) - 1; i >= 0 && len(lines) < h; i-- {
		r := p.runs[i]
		if !r.finished {
			continue
		}
		// The latest verdict is shown whole, as far as the pane goes;
		// older ones in three lines at most.
		most := 3
		if latest {
			most = max(3, h-len(lines)-2)
			latest = false
		}
		mark, style := "✓", th.Good
		switch {
		case r.cancelled || r.outcome.Interrupted: // stopped with esc (or with its demo): the run recorded it as interrupted
			mark, style = "■", th.Warn
		case r.err != nil:
			mark, style = "✗", th.Bad
		}
		lines = append(lines, style.Render(mark)+" "+r.name+th.Dim.Render(" · "+duration(r.ended.Sub(r.started))))
		switch {
		case r.err != nil:
			lines = append(lines, wrapUpTo(th.Bad, clean(r.err.Error()), w, most)...)
		case r.outcome.Summary != "":
			lines = append(lines, wrapUpTo(th.Footer, clean(r.outcome.Summary), w, most)...)
		}
		if r.outcome.Dir != "" {
			lines = append(lines, wrapUpTo(th.Dim, r.outcome.Dir, w, 2)...)
		}
	}
	return strings.Join(lines, "\n")
}
