package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/guptarohit/asciigraph"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// spark is one sparkline: recent values, the current one and a limit line.
type spark struct {
	title string
	// detail follows the title when it fits (the worst series). A
	// caption is a line over the graph when there is room: the first of
	// captions that fits, or of detailCaptions when the title had no
	// room for the detail; the last one is cut if none fits.
	detail                   string
	captions, detailCaptions []string

	values    []float64
	unit      func(float64) string
	limit     float64 // 0: none
	limitName string
	noLimit   string // said in the limit's place while it is unknown
	note      string // shown instead of a value when there is no data
	wrapNote  bool   // the note is wrapped over the pane, not cut
	why       string // why the series is not available (sparkunavail.go)
}

// plotArea is where renderSpark put the graph's columns in its body: from
// left for w cells; w 0 when it drew no graph.
type plotArea struct{ left, w int }

// renderSpark draws s as a w-wide pane content of a graph h rows high.
// With marks, the graph gives its last row to markRow (drawn at the
// graph's columns). Values may be NaN: no value at that time.
func renderSpark(th Theme, s spark, w, h int, markRow func(w int) string) (title, body string, at plotArea) {
	s.values = plottable(s.values)
	if _, ok := poll.Last(s.values); !ok {
		return s.title + th.Dim.Render(s.limitText("  ")), noteBody(th, s, w, h), plotArea{}
	}
	if markRow != nil && h >= 3 {
		h--
	} else {
		markRow = nil // no room for the marks under the graph
	}
	title, captions := sparkTitle(th, s, w)
	caption := ""
	if len(captions) > 0 && h >= 3 {
		h--
		caption = captions[len(captions)-1]
		for _, c := range captions {
			if ansi.StringWidth(c) <= w {
				caption = c
				break
			}
		}
	}
	series := [][]float64{s.values}
	top := 0.0
	for _, v := range s.values {
		if !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	if s.limit > 0 && top >= s.limit/2 {
		// The limit shows as a second series only when the values come
		// near it; otherwise it would flatten the series to the floor.
		series = append(series, flat(s.limit, len(s.values)))
		top = math.Max(top, s.limit)
	}
	plot := func(width int) string {
		// UpperBound top: stretched to width, a lone value among NaNs can
		// vanish, and asciigraph then sizes its grid from -Inf (a panic).
		// With values it changes nothing: they never exceed top.
		return asciigraph.PlotMany(series, append([]asciigraph.Option{
			asciigraph.Height(max(1, h-1)), asciigraph.Width(width), asciigraph.Offset(2), asciigraph.LowerBound(0), asciigraph.UpperBound(top),
			asciigraph.YAxisValueFormatter(s.unit),
		}, th.Graph...)...)
	}
	// The axis labels' width depends on the values: draw once to measure
	// it, then again to fill exactly w columns.
	// The graph's first column is the axis' own (asciigraph draws the
	// first value on it).
	out, width := plot(w/2), w/2
	left := axisColumn(out)
	if wide := w - left; wide >= 4 {
		out, width = plot(wide), wide
	}
	at = plotArea{left: left, w: width}
	if markRow != nil {
		// Under the graph's last row, however few rows it drew.
		rows := strings.Count(out, "\n") + 1
		out += strings.Repeat("\n", max(1, h-rows+1)) + strings.Repeat(" ", at.left) + markRow(width)
	}
	if caption != "" {
		out = th.Dim.Render(caption) + "\n" + out
	}
	return title, out, at
}

// axisColumn is the cell of the graph's y axis (its first column) in
// asciigraph's output: the labels' width. It is read from the axis
// character, not from the lines' width, which asciigraph trims where the
// latest values are gaps.
func axisColumn(graph string) int {
	for _, l := range strings.Split(ansi.Strip(graph), "\n") {
		for i, r := range []rune(l) {
			if r == '┤' || r == '┼' {
				return i
			}
		}
	}
	return 0
}

// plottable returns values with what cannot be drawn as no value (NaN):
// infinities, and negative figures, which none of the charted quantities
// can be (a rate across a counter reset can come out below zero).
// asciigraph panics on some such series.
func plottable(values []float64) []float64 {
	var out []float64
	for i, v := range values {
		if v >= 0 && !math.IsInf(v, 1) || math.IsNaN(v) {
			continue
		}
		if out == nil {
			out = append([]float64(nil), values...)
		}
		out[i] = math.NaN()
	}
	if out == nil {
		return values
	}
	return out
}

// limitText is what the title says of the limit, after sep.
func (s spark) limitText(sep string) string {
	switch {
	case s.limit > 0:
		return sep + s.limitName + " " + s.unit(s.limit)
	case s.noLimit != "":
		return sep + s.noLimit
	}
	return ""
}

// sparkTitle is the title of s with values, at most w wide when it can
// be, and the captions that go with it: the detail goes to the caption
// when it does not fit, and the spacing closes up before the limit is
// cut off.
func sparkTitle(th Theme, s spark, w int) (title string, captions []string) {
	cur, _ := poll.Last(s.values)
	style := lipgloss.NewStyle()
	if s.limit > 0 {
		style = th.Good
		if cur > s.limit {
			style = th.Bad
		}
	}
	fits := func(head, sep string) bool {
		return ansi.StringWidth(head+sep+s.unit(cur)+s.limitText(sep)) <= w
	}
	head := s.title
	captions = s.captions
	if s.detail != "" {
		if fits(head+" · "+s.detail, "  ") {
			head += " · " + s.detail
		} else {
			captions = s.detailCaptions
		}
	}
	sep := "  "
	if !fits(head, sep) {
		sep = " "
	}
	return head + sep + style.Render(s.unit(cur)) + th.Dim.Render(s.limitText(sep)), captions
}

func flat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func seconds(v float64) string {
	switch {
	case v >= 10, v == math.Trunc(v) && v >= 1: // an SLO of 1s, not 1.0s
		return fmt.Sprintf("%.0fs", v)
	case v >= 1:
		return fmt.Sprintf("%.1fs", v)
	case v >= 0.001:
		return fmt.Sprintf("%.0fms", v*1000)
	default:
		return "0"
	}
}

func perSecond(v float64) string {
	if v >= 10 || v == 0 {
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%.1f/s", v)
}

func bytesIEC(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v >= 10 || i == 0 {
		return fmt.Sprintf("%.0f%s", v, units[i])
	}
	return fmt.Sprintf("%.1f%s", v, units[i])
}
