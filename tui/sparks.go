package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/prometheus/common/model"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// sparkPanel is the row (or two) of charts across the bottom. Drawing
// them is costly: they are redrawn only for new metrics, another SLO
// class or another size.
type sparkPanel struct {
	*shared
	size
	met   poll.MetricsView
	class int    // the API chart's SLO class, an index of poll.SLOClasses
	out   string // the memo; "" when stale
	// window is the charts' window (z cycles chartWindows); setWindow
	// asks the poller for it. marks are the runs and faults to mark,
	// read when the charts are drawn.
	window    time.Duration
	setWindow func(time.Duration)
	marks     func() []mark
}

// sparkChrome is a chart pane's rows besides its graph: title and border.
const sparkChrome = 3

// sparkCols is how many charts share a row in a console w wide; the
// charts are laid out in sparkRows rows.
func sparkCols(w int) int {
	if w >= 150 {
		return 4
	}
	return 2
}

func sparkRows(w int) int { return 4 / sparkCols(w) }

func (p *sparkPanel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case metricsMsg:
		p.met, p.out = poll.MetricsView(msg), ""
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, p.keys.SLOClass):
			p.class, p.out = (p.class+1)%len(poll.SLOClasses), ""
		case key.Matches(msg, p.keys.Window):
			return p.nextWindow()
		}
	}
	return nil
}

func (p *sparkPanel) SetSize(w, h int) {
	if p.resized(w, h) {
		p.out = ""
	}
}

func (p *sparkPanel) ShortHelp() []key.Binding  { return []key.Binding{p.keys.SLOClass, p.keys.Window} }
func (p *sparkPanel) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

func (p *sparkPanel) View() string {
	if p.out != "" {
		return p.out
	}
	cols := sparkCols(p.w)
	paneH := p.h / (4 / cols)
	var rows []string
	sp := sparks(p.met, p.class)
	axis := p.axis()
	for i := 0; i < len(sp); i += cols {
		var blocks []string
		for j := range cols {
			sw := p.w / cols
			if j == cols-1 {
				sw = p.w - (cols-1)*(p.w/cols)
			}
			plotH := paneH - sparkChrome
			// A tall chart gives the marks a row of their own; a short
			// one draws them on the axis, in its bottom border.
			var markRow func(int) string
			if axis != nil && plotH >= markRowFrom {
				markRow = func(w int) string { return axis.markRow(p.th, w) }
			}
			title, body, at := renderSpark(p.th, sp[i+j], sw-4, plotH, markRow)
			blocks = append(blocks, chartBox(p.th, title, body, sw, paneH, axis, at.left, at.w, markRow == nil))
		}
		rows = append(rows, joinH(blocks...))
	}
	p.out = strings.Join(rows, "\n")
	return p.out
}

// throughputGoal is experiment D's churn rate: the scheduler must keep up
// with it.
const throughputGoal = 200.0

// sparks builds the four sparklines from the metrics, the API one for SLO
// class class (an index of poll.SLOClasses).
func sparks(m poll.MetricsView, class int) []spark {
	m = onGrid(m)
	note := ""
	if m.Err != "" {
		note = "Prometheus: " + m.Err
	}
	// Prometheus has no series of a counter until its first increment: no
	// pod scheduled yet, no request rejected yet. That is zero, not
	// missing data.
	zero := func(vs []float64) []float64 {
		if len(vs) == 0 && m.Err == "" && !m.At.IsZero() {
			return flat(0, max(1, gridLen(m)))
		}
		return vs
	}
	etcd := spark{title: "etcd DB", values: m.EtcdBytes, unit: bytesIEC, note: note}
	if m.EtcdQuota > 0 {
		etcd.limit, etcd.limitName = m.EtcdQuota, "quota"
	} else {
		etcd.noLimit = "quota unknown"
	}
	c := poll.SLOClasses[class%len(poll.SLOClasses)]
	return []spark{
		apiSpark(m, c, note).orUnavailable(m, c.Query.ID),
		spark{title: "Scheduler", values: zero(m.Throughput), unit: perSecond, limit: throughputGoal, limitName: "goal", note: note}.orUnavailable(m, poll.QueryThroughput),
		spark{title: "APF rejected", values: zero(m.Rejected), unit: perSecond, note: note}.orUnavailable(m, poll.QueryRejected),
		etcd.orUnavailable(m, poll.QueryEtcdSize),
	}
}

// apiSpark is the API latency sparkline of class c.
func apiSpark(m poll.MetricsView, c poll.SLOClass, note string) spark {
	lat := m.API[c.Query.ID]
	s := spark{
		title: "API p99 " + c.Name, values: lat.Worst, unit: seconds,
		limit: c.Query.SLO.Threshold, limitName: "SLO", note: note,
	}
	window := model.Duration(c.Query.Expr.Window).String() // as PromQL writes it: 5m
	if len(lat.Worst) > 0 {
		s.detail = lat.Series
		s.captions = []string{fmt.Sprintf("SLI over %s · worst of %d series", window, lat.Of)}
		s.detailCaptions = []string{
			fmt.Sprintf("worst of %d: %s · SLI over %s", lat.Of, lat.Series, window),
			fmt.Sprintf("worst %s · SLI %s", lat.Series, window),
		}
	}
	if note == "" && !m.At.IsZero() {
		s.note = fmt.Sprintf("no %s calls in the last %s (SLI %s)", c.Name, window, c.Query.Expr.Metric)
	}
	return s
}
