package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// mapCursor is the map's cursor. It is remembered as the first node of
// the cell it is on, not as a position: a new view, a filter or a resize
// lays the cells out again and the cursor stays with its node (or goes
// to the first cell when its node is no longer shown). It is hidden until
// a cursor key, a filter or enter shows it, so a map nobody points at
// looks as it always did.
type mapCursor struct {
	shown bool
	node  string
}

// cellPos is a cell of a layout; ok is false when there is none.
type cellPos struct {
	r, c int
	ok   bool
}

// place finds the cursor's cell in l.
func (c *mapCursor) place(l mapLayout, v watch.FleetView) cellPos {
	first := cellPos{}
	for r, row := range l.spans {
		for col, s := range row {
			if s.hi == s.lo {
				continue
			}
			if !first.ok {
				first = cellPos{r, col, true}
			}
			for i := s.lo; i < s.hi; i++ {
				if v.Nodes[i].Name == c.node {
					return cellPos{r, col, true}
				}
			}
		}
	}
	if first.ok {
		c.node = v.Nodes[l.spans[first.r][first.c].lo].Name
	}
	return first
}

// move steps the cursor by dr rows or dc cells in l: left and right run
// on into the row before or after, up and down keep the column (or take
// the row's last cell); gaps between racks are stepped over.
func (c *mapCursor) move(l mapLayout, v watch.FleetView, dr, dc int) {
	cur := c.place(l, v)
	if !cur.ok {
		return
	}
	if !c.shown { // the first key shows the cursor where it is
		c.shown = true
		return
	}
	gap := func(p cellPos) bool { s := l.spans[p.r][p.c]; return s.lo == s.hi }
	next := cur
	switch {
	case dc != 0:
		for {
			next.c += dc
			if next.c < 0 {
				if next.r == 0 {
					return
				}
				next.r--
				next.c = len(l.spans[next.r]) - 1
			} else if next.c >= len(l.spans[next.r]) {
				if next.r == len(l.spans)-1 {
					return
				}
				next.r, next.c = next.r+1, 0
			}
			if !gap(next) {
				break
			}
		}
	case dr != 0:
		next.r += dr
		if next.r < 0 || next.r >= len(l.spans) {
			return
		}
		next.c = min(next.c, len(l.spans[next.r])-1)
		for next.c > 0 && gap(next) {
			next.c--
		}
	}
	c.node = v.Nodes[l.spans[next.r][next.c].lo].Name
}

// nodes are the nodes of the cell at p.
func cellNodes(l mapLayout, v watch.FleetView, p cellPos) []watch.NodeCell {
	if !p.ok {
		return nil
	}
	s := l.spans[p.r][p.c]
	return v.Nodes[s.lo:s.hi]
}

// cursorCell draws the cell under the cursor: reversed when colored, a
// diamond when plain (NO_COLOR has no reverse video to show it by).
func cursorCell(th Theme, kind int) string {
	if !th.Color {
		return "◆"
	}
	st := lipgloss.NewStyle().Reverse(true).Bold(true)
	switch kind {
	case cellNotReady:
		st = th.NotReady.Reverse(true)
	case cellFaulted:
		st = th.Faulted.Reverse(true)
	case cellGap:
	default:
		st = th.Cells[kind].Reverse(true)
	}
	return st.Render(cellGlyph(kind))
}

// status is the line under the map while the cursor shows: what the cell
// under it is, and that enter opens it.
func (c *mapCursor) status(th Theme, v watch.FleetView, l mapLayout, p cellPos) string {
	nodes := cellNodes(l, v, p)
	if len(nodes) == 0 {
		return ""
	}
	if len(nodes) == 1 {
		n := nodes[0]
		parts := []string{th.Bold.Render(clean(n.Name)), nodeState(th, n), fmt.Sprintf("%d/%d GPUs", n.Used, n.GPUs)}
		if n.Rack != "" {
			parts = append(parts, clean(n.Rack))
		}
		return th.Key.Render("▸ ") + strings.Join(parts, " · ") + th.Dim.Render(" · enter: open")
	}
	var used, gpus int64
	notReady, faulted := 0, 0
	for _, n := range nodes {
		used, gpus = used+n.Used, gpus+n.GPUs
		if !n.Ready {
			notReady++
		}
		if n.Faulted {
			faulted++
		}
	}
	first, last := nodes[0], nodes[len(nodes)-1]
	what := fmt.Sprintf("%d nodes %s…%s", len(nodes), clean(first.Name), strings.TrimPrefix(clean(last.Name), "gf-node-"))
	if first.Rack != "" {
		what = fmt.Sprintf("%d nodes in %s", len(nodes), clean(first.Rack))
		if last.Rack != first.Rack {
			what += "…" + clean(last.Rack)
		}
	}
	parts := []string{th.Bold.Render(what), fmt.Sprintf("%d/%d GPUs", used, gpus)}
	if notReady > 0 {
		parts = append(parts, th.Bad.Render(fmt.Sprintf("%d NotReady", notReady)))
	}
	if faulted > 0 {
		parts = append(parts, th.Bad.Render(fmt.Sprintf("%d faulted", faulted)))
	}
	return th.Key.Render("▸ ") + strings.Join(parts, " · ") + th.Dim.Render(" · enter: list")
}

// nodeState is a node's state in a word or two.
func nodeState(th Theme, n watch.NodeCell) string {
	var s []string
	if n.Ready {
		s = append(s, th.Good.Render("Ready"))
	} else {
		s = append(s, th.Bad.Render("NotReady"))
	}
	if n.Faulted {
		s = append(s, th.Bad.Render("faulted"))
	}
	if n.Cordoned {
		s = append(s, th.Warn.Render("cordoned"))
	}
	return strings.Join(s, " ")
}
