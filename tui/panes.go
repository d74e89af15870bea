package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/guptarohit/asciigraph"
)

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

// bar is a w-cell bar filled to frac.
func bar(th Theme, frac float64, w int) string {
	if w < 1 {
		return ""
	}
	frac = math.Max(0, math.Min(1, frac))
	full := int(math.Round(frac * float64(w)))
	glyph, empty := "█", "░"
	return th.Bar.Render(strings.Repeat(glyph, full)) + th.BarEmpty.Render(strings.Repeat(empty, w-full))
}

// renderAllocation is the allocation pane's content.
func renderAllocation(th Theme, v FleetView, gpuUtil []float64, w int) string {
	frac := 0.0
	if v.GPUs > 0 {
		frac = float64(v.GPUsUsed) / float64(v.GPUs)
	}
	util := ""
	if len(gpuUtil) > 0 {
		util = th.Dim.Render(fmt.Sprintf(" · util %.0f%%", gpuUtil[len(gpuUtil)-1]))
	}
	lines := []string{
		fmt.Sprintf("%s %s / %s  %s%s", th.Bold.Render("GPUs"), thousands(v.GPUsUsed), thousands(v.GPUs), th.Bold.Render(fmt.Sprintf("%.0f%%", 100*frac)), util),
		bar(th, frac, w),
		fmt.Sprintf("%s %s ready%s%s", th.Bold.Render("Nodes"), thousands(int64(v.Ready)),
			warnIf(th, v.NotReady, " · %s NotReady"), warnIf(th, v.Faulted, " · %s faulted")),
		// Failed pods matter more than finished ones: they come first.
		fmt.Sprintf("%s %s running · %s pending%s%s%s", th.Bold.Render("Pods"), thousands(int64(v.Running)), thousands(int64(v.Pending)),
			parenIf(v.Unscheduled, " (%s unscheduled)"), warnIf(th, v.Failed, " · %s failed"), parenIf(v.Succeeded, " · %s done")),
	}
	return strings.Join(lines, "\n")
}

func parenIf(n int, format string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, thousands(int64(n)))
}

func warnIf(th Theme, n int, format string) string {
	if n == 0 {
		return ""
	}
	return th.Bad.Render(fmt.Sprintf(format, thousands(int64(n))))
}

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
}

// renderSpark draws s as a w-wide pane content of a graph h rows high.
func renderSpark(th Theme, s spark, w, h int) (title, body string) {
	if len(s.values) == 0 {
		note := s.note
		if note == "" {
			note = "no data yet"
		}
		return s.title + th.Dim.Render(s.limitText("  ")), th.Dim.Render(note)
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
	if s.limit > 0 {
		// The limit shows as a second series only when the values come
		// near it; otherwise it would flatten the series to the floor.
		top := 0.0
		for _, v := range s.values {
			top = math.Max(top, v)
		}
		if top >= s.limit/2 {
			series = append(series, flat(s.limit, len(s.values)))
		}
	}
	plot := func(width int) string {
		return asciigraph.PlotMany(series, append([]asciigraph.Option{
			asciigraph.Height(h - 1), asciigraph.Width(width), asciigraph.Offset(2), asciigraph.LowerBound(0),
			asciigraph.YAxisValueFormatter(s.unit),
		}, th.Graph...)...)
	}
	// The axis labels' width depends on the values: draw once to measure
	// it, then again to fill exactly w columns.
	out := plot(w / 2)
	drawn := 0
	for _, l := range strings.Split(out, "\n") {
		drawn = max(drawn, ansi.StringWidth(l))
	}
	if width := w - (drawn - w/2); width >= 4 {
		out = plot(width)
	}
	if caption != "" {
		out = th.Dim.Render(caption) + "\n" + out
	}
	return title, out
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
	cur := s.values[len(s.values)-1]
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

// throughputGoal is experiment D's churn rate: the scheduler must keep up
// with it.
const throughputGoal = 200.0

// sparks builds the four sparklines from the metrics, the API one for SLO
// class class (an index of sloClasses).
func sparks(m MetricsView, class int) []spark {
	note := ""
	if m.Err != "" {
		note = "Prometheus: " + m.Err
	}
	// Prometheus has no series of a counter until its first increment: no
	// pod scheduled yet, no request rejected yet. That is zero, not
	// missing data.
	zero := func(vs []float64) []float64 {
		if len(vs) == 0 && m.Err == "" && !m.At.IsZero() {
			return []float64{0}
		}
		return vs
	}
	etcd := spark{title: "etcd DB", values: m.EtcdBytes, unit: bytesIEC, note: note}
	if m.EtcdQuota > 0 {
		etcd.limit, etcd.limitName = m.EtcdQuota, "quota"
	} else {
		etcd.noLimit = "quota unknown"
	}
	return []spark{
		apiSpark(m, sloClasses[class%len(sloClasses)], note),
		{title: "Scheduler", values: zero(m.Throughput), unit: perSecond, limit: throughputGoal, limitName: "goal", note: note},
		{title: "APF rejected", values: zero(m.Rejected), unit: perSecond, note: note},
		etcd,
	}
}

// duration formats d the way kubectl's AGE column does.
func duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// joinH places blocks side by side, top aligned.
func joinH(blocks ...string) string { return lipgloss.JoinHorizontal(lipgloss.Top, blocks...) }
