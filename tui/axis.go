package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// mark is a time the charts mark, as the report shades its charts: a run's
// span (end zero while it runs), or a fault, an instant.
type mark struct {
	start, end time.Time
	fault      bool
}

// timeAxis places times on a chart's columns: window up to at, the
// metrics' own time (the charts and their marks move together, once per
// round of metrics, not with the clock).
type timeAxis struct {
	at     time.Time
	window time.Duration
	marks  []mark
}

// Glyphs of the marks: a run's span, a fault (the map's faulted glyph).
const (
	runGlyph   = '━'
	faultGlyph = '!'
)

// col is the column of t among w, and whether it falls in the window.
func (a timeAxis) col(t time.Time, w int) (int, bool) {
	ago := a.at.Sub(t)
	if ago < 0 || ago > a.window || w < 1 {
		return 0, false
	}
	return int(math.Round(float64(w-1) * (1 - ago.Seconds()/a.window.Seconds()))), true
}

// tickEvery is the spacing of the axis' labels: five of them at most.
func tickEvery(window time.Duration) time.Duration {
	switch {
	case window <= 5*time.Minute:
		return time.Minute
	case window <= 15*time.Minute:
		return 5 * time.Minute
	}
	return 15 * time.Minute
}

// ago is how a tick is labelled: −15m, −90s.
func ago(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("−%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("−%ds", int(d.Seconds()))
}

// cell is one column of an axis row: a glyph and its style.
type cell struct {
	r     rune
	style *lipgloss.Style
}

// labels writes the ticks into row: the window's start at the left, now at
// the right, the ticks between where they fit with a blank on each side.
func (a timeAxis) labels(row []cell, style *lipgloss.Style) {
	w := len(row)
	put := func(at int, s string) bool {
		rs := []rune(s)
		if at < 0 || at+len(rs) > w {
			return false
		}
		for i := max(0, at-1); i < min(w, at+len(rs)+1); i++ {
			if row[i].style == style {
				return false // another label
			}
		}
		for i, r := range rs {
			row[at+i] = cell{r, style}
		}
		return true
	}
	put(0, ago(a.window))
	put(w-3, "now")
	every := tickEvery(a.window)
	for d := a.window - every; d > 0; d -= every {
		c, _ := a.col(a.at.Add(-d), w)
		put(c-len([]rune(ago(d)))/2, ago(d))
	}
}

// markCells writes the marks into row: runs as a span, faults on top of
// everything. Where keep says so (a label), a run's span gives way.
func (a timeAxis) markCells(row []cell, th Theme, keep func(i int) bool) {
	w := len(row)
	for _, m := range a.marks {
		if m.fault {
			continue
		}
		end := m.end
		if end.IsZero() || end.After(a.at) {
			end = a.at
		}
		if end.Before(a.at.Add(-a.window)) {
			continue
		}
		c0, ok := a.col(m.start, w)
		if !ok {
			c0 = 0
		}
		c1, _ := a.col(end, w)
		for i := c0; i <= c1 && i < w; i++ {
			if !keep(i) {
				row[i] = cell{runGlyph, &th.Key}
			}
		}
	}
	for _, m := range a.marks {
		if c, ok := a.col(m.start, w); ok && m.fault {
			row[c] = cell{faultGlyph, &th.Faulted}
		}
	}
}

// render draws cells, one style per run of cells.
func render(row []cell) string {
	var sb strings.Builder
	for i := 0; i < len(row); {
		j := i
		var run []rune
		for j < len(row) && row[j].style == row[i].style {
			run = append(run, row[j].r)
			j++
		}
		if s := row[i].style; s != nil {
			sb.WriteString(s.Render(string(run)))
		} else {
			sb.WriteString(string(run))
		}
		i = j
	}
	return sb.String()
}

// markRow is a row of the marks alone, w columns, for a chart tall enough
// to give them a row of their own.
func (a timeAxis) markRow(th Theme, w int) string {
	row := make([]cell, w)
	for i := range row {
		row[i] = cell{' ', nil}
	}
	a.markCells(row, th, func(int) bool { return false })
	return render(row)
}

// chartBox is box with the time axis drawn into its bottom border: the
// axis costs no row. The plot's columns start left cells into the
// content; withMarks puts the marks on the border too (a chart too short
// for a row of marks of its own).
func chartBox(th Theme, title, body string, w, h int, a *timeAxis, left, plotW int, withMarks bool) string {
	out := box(th, title, body, w, h)
	if a == nil || a.window <= 0 || out == "" || plotW < 1 {
		return out
	}
	i := strings.LastIndexByte(out, '\n')
	if i < 0 {
		return out
	}
	border := lipgloss.NewStyle().Foreground(th.Pane.GetBorderBottomForeground())
	row := make([]cell, w)
	for j := range row {
		row[j] = cell{'─', &border}
	}
	row[0], row[w-1] = cell{'╰', &border}, cell{'╯', &border}
	from := 2 + left // border and padding
	plot := row[from:min(w-1, from+plotW)]
	a.labels(plot, &th.Dim)
	if withMarks {
		a.markCells(plot, th, func(j int) bool { return plot[j].style == &th.Dim })
	}
	bottom := render(row)
	if ansi.StringWidth(bottom) != w {
		return out
	}
	return out[:i+1] + bottom
}
