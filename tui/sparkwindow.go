package tui

import (
	"math"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// chartWindows are the charts' windows, in the order z cycles them; the
// console opens on the second.
var chartWindows = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour}

// DefaultWindow is the charts' window until z changes it: the poller
// should start with it.
const DefaultWindow = 15 * time.Minute

// markRowFrom is how many graph rows a chart needs before its marks get
// a row of their own.
const markRowFrom = 5

// nextWindow cycles the charts' window and asks the poller for it: the
// axis follows once the longer (or shorter) history arrives.
func (p *sparkPanel) nextWindow() tea.Cmd {
	cur := p.window
	if cur == 0 {
		cur = DefaultWindow
	}
	next := chartWindows[0]
	for i, w := range chartWindows {
		if w == cur {
			next = chartWindows[(i+1)%len(chartWindows)]
		}
	}
	p.window = next
	if p.setWindow == nil {
		return notify("charts: the last %s (no poller to ask: the window shown is the data's)", ago(next)[len("−"):])
	}
	p.setWindow(next)
	return notify("charts: the last %s, a point every %s", ago(next)[len("−"):], duration(poll.StepFor(next)))
}

// axis is the charts' time axis over the metrics' window, with the runs
// and faults to mark; nil before any metrics came.
func (p *sparkPanel) axis() *timeAxis {
	if p.met.Window <= 0 || p.met.At.IsZero() {
		return nil
	}
	a := &timeAxis{at: p.met.At, window: p.met.Window}
	if p.marks != nil {
		a.marks = p.marks()
	}
	return a
}

// gridLen is how many steps the view's window has; 0 for a view without
// one (its series are drawn as they come).
func gridLen(m poll.MetricsView) int {
	if m.Window <= 0 || m.Step <= 0 {
		return 0
	}
	return int(m.Window/m.Step) + 1
}

// onGrid makes every series of m span its window, so that a column is a
// time: a series that began late is padded in front with NaN (nothing
// drawn), one longer than the window keeps its latest steps.
func onGrid(m poll.MetricsView) poll.MetricsView {
	n := gridLen(m)
	if n == 0 {
		return m
	}
	fit := func(vs []float64) []float64 {
		if len(vs) == 0 || len(vs) == n {
			return vs
		}
		if len(vs) > n {
			return vs[len(vs)-n:]
		}
		out := make([]float64, n)
		for i := range n - len(vs) {
			out[i] = math.NaN()
		}
		copy(out[n-len(vs):], vs)
		return out
	}
	api := make(map[string]poll.APILatency, len(m.API))
	for id, l := range m.API {
		l.Worst = fit(l.Worst)
		api[id] = l
	}
	m.API = api
	m.Throughput, m.Rejected, m.EtcdBytes, m.GPUUtil = fit(m.Throughput), fit(m.Rejected), fit(m.EtcdBytes), fit(m.GPUUtil)
	return m
}
