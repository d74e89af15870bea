package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// fleetMap is the map pane: every node a cell shaded by the GPUs
// allocated on it. The costliest pane to draw: it is redrawn only when a
// new view arrives or its size changes.
type fleetMap struct {
	noKeys
	*shared
	size
	fleet watch.FleetView
	have  bool
	out   string // the memo; "" when stale

	// The drill-down (cursor.go, filter.go): shown is fleet with the
	// filter applied, lay the cells it was last drawn in.
	filter mapFilter
	shown  watch.FleetView
	lay    mapLayout
	cursor mapCursor
}

func (p *fleetMap) Update(msg tea.Msg) tea.Cmd {
	if v, ok := msg.(fleetMsg); ok {
		p.fleet, p.have, p.out = watch.FleetView(v), true, ""
		p.shown = p.filter.apply(p.fleet)
		return p.filter.refresh(p.now())
	}
	return nil
}

func (p *fleetMap) SetSize(w, h int) {
	if p.resized(w, h) {
		p.out = ""
	}
}

func (p *fleetMap) View() string {
	if !p.have {
		return box(p.th, "Fleet", p.th.Dim.Render("listing nodes and pods…"), p.w, p.h)
	}
	if p.out == "" {
		p.lay = layoutMap(p.shown, p.w-4, p.h-4)
		cur := p.cursor.place(p.lay, p.shown)
		if !p.cursor.shown {
			cur = cellPos{}
		}
		cells, caption := drawMap(p.th, p.shown, p.lay, cur), mapCaption(p.shown, p.lay)
		if p.filter.active() {
			caption = p.filter.caption(len(p.shown.Nodes), len(p.fleet.Nodes)) + mapCellCaption(p.shown, p.lay)
			if len(p.shown.Nodes) == 0 {
				cells = p.th.Dim.Render(p.filter.empty() + " · esc clears the filter")
			}
		}
		last := mapLegend(p.th)
		if cur.ok {
			last = p.cursor.status(p.th, p.shown, p.lay, cur)
		}
		gap := strings.Repeat("\n", max(0, p.h-5-strings.Count(cells, "\n")))
		p.out = box(p.th, "Fleet · "+caption, cells+"\n"+gap+last, p.w, p.h)
	}
	return p.out
}

// Cell styles beyond the allocation levels.
const (
	cellNotReady = levels + iota
	cellFaulted
	cellGap
)

// mapLayout is how nodes become cells: one node per cell, grouped by rack
// with a gap between racks when they fit; otherwise several nodes per
// cell, whole racks when racks exist.
type mapLayout struct {
	perCell int
	grouped bool
	rows    [][]int  // cell kinds, row by row
	spans   [][]span // each cell's nodes, row by row
}

// span is a cell's nodes: the view's Nodes[lo:hi]; a gap holds none.
type span struct{ lo, hi int }

// layoutMap places v's nodes into at most h rows of w cells.
func layoutMap(v watch.FleetView, w, h int) mapLayout {
	n := len(v.Nodes)
	if n == 0 || w <= 0 || h <= 0 {
		return mapLayout{perCell: 1}
	}
	if l, ok := layoutRacks(v, w, h); ok {
		return l
	}
	per := (n + w*h - 1) / (w * h)
	if v.Racked && v.RackSize > 1 && per >= v.RackSize {
		per = (per + v.RackSize - 1) / v.RackSize * v.RackSize
	}
	l := mapLayout{perCell: per}
	var row []int
	var spans []span
	for i := 0; i < n; i += per {
		row = append(row, aggregate(v.Nodes[i:min(i+per, n)]))
		spans = append(spans, span{i, min(i+per, n)})
		if len(row) == w {
			l.rows, l.spans = append(l.rows, row), append(l.spans, spans)
			row, spans = nil, nil
		}
	}
	if len(row) > 0 {
		l.rows, l.spans = append(l.rows, row), append(l.spans, spans)
	}
	return l
}

// layoutRacks lays out one node per cell with a gap after each rack, if
// that fits.
func layoutRacks(v watch.FleetView, w, h int) (mapLayout, bool) {
	if !v.Racked || v.RackSize <= 1 || v.RackSize > w {
		return mapLayout{}, false
	}
	l := mapLayout{perCell: 1, grouped: true}
	var row []int
	var spans []span
	for i := 0; i < len(v.Nodes); {
		j := i
		for j < len(v.Nodes) && v.Nodes[j].Rack == v.Nodes[i].Rack {
			j++
		}
		rack := v.Nodes[i:j]
		if len(row) > 0 && len(row)+1+len(rack) > w {
			l.rows, l.spans = append(l.rows, row), append(l.spans, spans)
			row, spans = nil, nil
		}
		if len(rack) > w {
			return mapLayout{}, false
		}
		if len(row) > 0 {
			row, spans = append(row, cellGap), append(spans, span{})
		}
		for k, c := range rack {
			row = append(row, aggregate([]watch.NodeCell{c}))
			spans = append(spans, span{i + k, i + k + 1})
		}
		i = j
	}
	if len(row) > 0 {
		l.rows, l.spans = append(l.rows, row), append(l.spans, spans)
	}
	return l, len(l.rows) <= h
}

// aggregate is the cell of a group of nodes: NotReady if any is, else
// faulted if any is, else the group's mean allocation.
func aggregate(nodes []watch.NodeCell) int {
	var gpus, used int64
	faulted := false
	for _, n := range nodes {
		if !n.Ready {
			return cellNotReady
		}
		faulted = faulted || n.Faulted
		gpus += n.GPUs
		used += n.Used
	}
	if faulted {
		return cellFaulted
	}
	return cellLevel(used, gpus)
}

// cellLevel is used of gpus on the map's 0–8 scale: any use shows.
func cellLevel(used, gpus int64) int {
	if gpus <= 0 || used <= 0 {
		return 0
	}
	return min(int((used*int64(levels-1)+gpus-1)/gpus), levels-1)
}

// renderMap draws the map in w×h cells (legend and caption excluded).
func renderMap(th Theme, v watch.FleetView, w, h int) (cells, caption string) {
	l := layoutMap(v, w, h)
	return drawMap(th, v, l, cellPos{}), mapCaption(v, l)
}

// drawMap draws layout l of v, the cell at cur in the cursor's style.
func drawMap(th Theme, v watch.FleetView, l mapLayout, cur cellPos) string {
	if len(v.Nodes) == 0 {
		return th.Dim.Render("no nodes yet: press n to add some")
	}
	// Style each kind of cell once and reuse its escape codes: a
	// 5,000-cell map in a dozen Render calls, not thousands.
	var codes [cellGap + 1][2]string
	for kind := range codes {
		open, closing, _ := strings.Cut(cellRun(th, kind, 1), cellGlyph(kind))
		codes[kind] = [2]string{open, closing}
	}
	var b strings.Builder
	for i, row := range l.rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		for j := 0; j < len(row); {
			if cur.ok && i == cur.r && j == cur.c {
				b.WriteString(cursorCell(th, row[j]))
				j++
				continue
			}
			k := j
			for k < len(row) && row[k] == row[j] && !(cur.ok && i == cur.r && k == cur.c) {
				k++
			}
			c := codes[row[j]]
			b.WriteString(c[0] + strings.Repeat(cellGlyph(row[j]), k-j) + c[1])
			j = k
		}
	}
	return b.String()
}

// mapCaption says how many nodes the map shows and what a cell is.
func mapCaption(v watch.FleetView, l mapLayout) string {
	if len(v.Nodes) == 0 {
		return "0 nodes"
	}
	return fmt.Sprintf("%s nodes", thousands(int64(len(v.Nodes)))) + mapCellCaption(v, l)
}

// mapCellCaption says what a cell is, when it is not one node.
func mapCellCaption(v watch.FleetView, l mapLayout) string {
	switch {
	case l.grouped:
		return " · grouped by rack"
	case l.perCell > 1 && v.Racked && l.perCell%v.RackSize == 0:
		return fmt.Sprintf(" · 1 cell = %d rack%s (%d nodes)", l.perCell/v.RackSize, plural(l.perCell/v.RackSize), l.perCell)
	case l.perCell > 1:
		return fmt.Sprintf(" · 1 cell = %d nodes", l.perCell)
	}
	return ""
}

func cellGlyph(kind int) string {
	switch kind {
	case cellGap:
		return " "
	case cellNotReady:
		return notReadyGlyph
	case cellFaulted:
		return faultedGlyph
	default:
		return cellGlyphs[kind]
	}
}

func cellRun(th Theme, kind, n int) string {
	glyphs := strings.Repeat(cellGlyph(kind), n)
	switch kind {
	case cellGap:
		return glyphs
	case cellNotReady:
		return th.NotReady.Render(glyphs)
	case cellFaulted:
		return th.Faulted.Render(glyphs)
	default:
		return th.Cells[kind].Render(glyphs)
	}
}

// mapLegend explains the cells in one line.
func mapLegend(th Theme) string {
	parts := []string{}
	for _, l := range []int{0, 2, 4, 6, 8} {
		parts = append(parts, cellRun(th, l, 1)+th.Dim.Render(fmt.Sprint(l)))
	}
	return strings.Join(parts, " ") + th.Dim.Render(" GPUs  ") +
		cellRun(th, cellNotReady, 1) + th.Dim.Render(" NotReady  ") +
		cellRun(th, cellFaulted, 1) + th.Dim.Render(" faulted")
}
