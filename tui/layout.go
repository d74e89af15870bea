package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// setSize lays the panes out in w×h: a header line, the SLO strip, the
// map (or an overlay) beside allocation over activity, the charts across
// the bottom, and the footer line. The charts grow with the terminal's height.
func (m *Model) setSize(w, h int) {
	m.w, m.h, m.dirty = w, h, true
	if w < MinWidth || h < MinHeight {
		return
	}
	bodyH := h - 3 - m.caption.rows() // header, SLO strip, footer; a demo's caption
	sparkH := sparkRows(w) * (plotRows(w, h) + sparkChrome)
	topH := bodyH - sparkH
	rw := min(max(w/3, 34), 52)
	mw := w - rw
	allocH := allocationRows(h)

	m.fleetMap.SetSize(mw, topH)
	if m.overlay != nil {
		m.overlay.SetSize(mw, topH)
	}
	m.allocation.SetSize(rw, allocH)
	m.activity.SetSize(rw, topH-allocH)
	m.sparks.SetSize(w, sparkH)
	m.slo.SetSize(w, 1)
	m.footer.SetSize(w, 1)
}

// plotRows is how high each chart's graph is drawn in a w×h console.
func plotRows(w, h int) int {
	plot := 2
	switch {
	case h >= 44:
		plot = 7
	case h >= 32:
		plot = 5
	case h >= 28:
		plot = 3
	}
	if sparkCols(w) == 4 { // one row of charts: room for taller ones
		plot += 2
	}
	return plot
}

func (m *Model) render() string {
	if m.w < MinWidth || m.h < MinHeight {
		return fmt.Sprintf("GhostFleet needs a terminal of at least %d×%d; this one is %d×%d.", MinWidth, MinHeight, m.w, m.h)
	}
	left := m.fleetMap.View()
	m.footer.focus = m.ctx.keys
	if m.overlay != nil {
		left = m.overlay.View()
		m.footer.focus = m.overlay
	}
	right := m.allocation.View() + "\n" + m.activity.View()
	return m.header() + "\n" + m.captionLine() + m.slo.View() + "\n" + joinH(left, right) + "\n" + m.sparks.View() + "\n" + m.footer.View()
}

func (m *Model) header() string {
	i, th := m.ctx.info, m.ctx.th
	parts := []string{i.Cluster}
	if i.Kubernetes != "" && m.w >= 100 {
		parts = append(parts, "k8s "+i.Kubernetes)
	}
	if i.Kwok != "" && m.w >= 100 {
		parts = append(parts, "kwok "+i.Kwok)
	}
	if i.Profile != "" {
		parts = append(parts, "profile "+i.Profile)
	}
	if !i.Created.IsZero() {
		parts = append(parts, "up "+duration(m.ctx.now().Sub(i.Created)))
	}
	state := "idle"
	if active := m.activity.activeNames(); len(active) > 0 {
		state = "running: " + strings.Join(active, ", ")
	}
	// The charts' source and freshness after the state: a stale chart
	// must not read as a quiet cluster.
	parts = append(parts, state, m.metrics.text(i, m.ctx.now(), m.w >= 120))
	line := th.Title.Render("GhostFleet") + " "
	if down := m.health.text(); down != "" { // first: it must not be cut off
		line += th.Bad.Render(down) + " "
	}
	line += th.Header.Render(strings.Join(parts, " · "))
	return fitLine(line, m.w)
}

// fitLine cuts line to w cells and pads it to exactly w: every block of
// the frame is exactly as wide as the console, so the blocks stack with a
// newline and nothing measures the whole frame again.
func fitLine(line string, w int) string {
	line = ansi.Truncate(line, w, "")
	return line + strings.Repeat(" ", max(0, w-ansi.StringWidth(line)))
}

// box draws a pane of exactly w×h cells (border included) with a title;
// content lines are cut to fit rather than wrapped.
func box(th Theme, title string, content string, w, h int) string {
	iw, ih := w-4, h-2 // border and padding
	if iw < 1 || ih < 1 {
		return ""
	}
	lines := []string{ansi.Truncate(th.PaneTitle.Render(title), iw, "…")}
	for _, l := range strings.Split(content, "\n") {
		if len(lines) == ih {
			break
		}
		lines = append(lines, ansi.Truncate(l, iw, "…"))
	}
	return th.Pane.Width(w - 2).Height(ih).Render(strings.Join(lines, "\n"))
}

// joinH places blocks side by side, top aligned. Every block is a box of
// exact size, so lines join as they are: lipgloss.JoinHorizontal would
// measure each line of the map again on every tick. A shorter block is
// padded with blank lines of its width.
func joinH(blocks ...string) string {
	split := make([][]string, len(blocks))
	n, size := 0, 0
	for i, b := range blocks {
		split[i] = strings.Split(b, "\n")
		n, size = max(n, len(split[i])), size+len(b)
	}
	var sb strings.Builder
	sb.Grow(size + n)
	for l := range n {
		if l > 0 {
			sb.WriteByte('\n')
		}
		for _, lines := range split {
			if l < len(lines) {
				sb.WriteString(lines[l])
			} else {
				sb.WriteString(strings.Repeat(" ", ansi.StringWidth(lines[0])))
			}
		}
	}
	return sb.String()
}
