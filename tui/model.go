package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// Info is what the header says about the fleet.
type Info struct {
	Cluster    string
	Kubernetes string
	Kwok       string
	Profile    string
	Created    time.Time
	// Metrics names the sparklines' source when it is not Prometheus.
	Metrics string
}

// Config is everything the console shows and can do. The channels come
// from the data layer (watch.Fleet, poll.Metrics) or test fakes: the
// console only renders what they send. Actions come from the command line.
type Config struct {
	Info    Info
	Theme   Theme
	Fleet   <-chan watch.FleetView
	Metrics <-chan poll.MetricsView
	Actions map[ActionKey]Action
	// Inspect fetches a node in full and the nodes a filter selects,
	// when the drill-down asks (watch.Inspector); nil: it says it cannot.
	Inspect Inspector
	Now     func() time.Time
	// SetMetricsWindow asks the metrics poller for another window of
	// history (the z key); nil: the charts keep the one they get.
	SetMetricsWindow func(time.Duration)
	// SLOScale multiplies the SLO thresholds of the strip and its alerts:
	// 1 (or 0) in use; less only in tests, to provoke a breach.
	SLOScale float64
	// Demo plays scripted demos (D; caption.go); nil: none.
	Demo *Demo
	// Health lists the control plane's components that are down
	// (health.go); nil: the console cannot tell (an attached cluster).
	Health func() []string
}

// MinWidth and MinHeight are the smallest terminal the console draws in.
const (
	MinWidth  = 80
	MinHeight = 24
)

// resizeDelay debounces resizes: a window dragged across the screen
// redraws once it settles, not on every step.
const resizeDelay = 80 * time.Millisecond

// Model is the console's root model: it routes messages to the panes,
// lays them out and keeps the frame they make.
type Model struct {
	cfg Config
	ctx *shared

	fleetMap   *fleetMap
	allocation *allocation
	activity   *activity
	sparks     *sparkPanel
	slo        *sloStrip
	footer     *footer
	caption    caption
	// overlay, when open, takes the map's place and every key.
	overlay overlay
	// prompt, when open, is the `/` or `:` line in the footer's place.
	prompt *prompt
	// metrics is the header's word on the charts' source.
	metrics metricsSource
	// health is the header's word on the components' processes.
	health health

	w, h      int
	resizeSeq int
	haveFleet bool
	quitting  bool

	// frame memoises View: it is redrawn only after a message that
	// changes something it shows. The costly panes (map, charts) keep
	// their own memo: the clock ticking redraws neither.
	frame string
	dirty bool
}

type (
	fleetMsg   watch.FleetView
	metricsMsg poll.MetricsView
	tickMsg    time.Time
	resizeMsg  struct{ w, h, seq int }

	shutdownMsg struct{}
)

// Shutdown is the message that stops every run and quits without asking
// (SIGTERM): runs clean up and record before the console exits.
func Shutdown() tea.Msg { return shutdownMsg{} }

// New returns the console's model.
func New(cfg Config) *Model {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &shared{info: cfg.Info, th: cfg.Theme, keys: newKeyMap(), now: cfg.Now}
	m := &Model{
		cfg: cfg, ctx: c,
		fleetMap:   &fleetMap{shared: c},
		allocation: newAllocation(c),
		activity:   newActivity(c),
		sparks:     &sparkPanel{shared: c, setWindow: cfg.SetMetricsWindow},
		slo:        newSLOStrip(c, cfg.SLOScale),
		footer:     newFooter(c),
		dirty:      true,
	}
	m.sparks.marks, m.activity.alertLines = m.activity.marks, m.slo.alertLines
	m.setSize(MinWidth, MinHeight)
	return m
}

// Init starts the relays from the data channels and the clock.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(waitFleet(m.cfg.Fleet), waitMetrics(m.cfg.Metrics), tick(), m.healthCheck())
}

// receive reads one value of ch as a message; a closed channel ends it.
// This is the only way data reaches the model: as values, on the UI
// goroutine.
func receive[T any](ch <-chan T, msg func(T) tea.Msg) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		v, ok := <-ch
		if !ok {
			return nil
		}
		return msg(v)
	}
}

func waitFleet(ch <-chan watch.FleetView) tea.Cmd {
	return receive(ch, func(v watch.FleetView) tea.Msg { return fleetMsg(v) })
}

func waitMetrics(ch <-chan poll.MetricsView) tea.Cmd {
	return receive(ch, func(v poll.MetricsView) tea.Msg { return metricsMsg(v) })
}

func tick() tea.Cmd { return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) }) }

// Update routes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resizeSeq++
		if m.frame == "" || !m.haveFleet {
			m.setSize(msg.Width, msg.Height)
			return m, nil
		}
		seq := m.resizeSeq
		return m, tea.Tick(resizeDelay, func(time.Time) tea.Msg { return resizeMsg{msg.Width, msg.Height, seq} })
	case resizeMsg:
		if msg.seq == m.resizeSeq {
			m.setSize(msg.w, msg.h)
		}
		return m, nil
	case fleetMsg:
		m.haveFleet, m.dirty = true, true
		return m, tea.Batch(m.fleetMap.Update(msg), m.allocation.Update(msg), waitFleet(m.cfg.Fleet))
	case metricsMsg:
		m.metrics.note(poll.MetricsView(msg))
		m.dirty = true
		m.sloRound(poll.MetricsView(msg))
		return m, tea.Batch(m.sparks.Update(msg), m.allocation.Update(msg), waitMetrics(m.cfg.Metrics))
	case tickMsg:
		m.dirty = true // uptime and elapsed times
		return m, tea.Batch(m.footer.Update(msg), tick(), m.drillTick())
	case healthMsg:
		return m, m.healthUpdate(msg)
	case demoMsg:
		m.dirty = true
		return m, m.demoUpdate(msg)
	case drillMsg:
		m.dirty = true
		return m, m.drill(msg)
	case noticeMsg:
		m.dirty = true
		return m, m.footer.Update(msg)
	case runEvent, runLive:
		m.dirty = true
		return m, m.activity.Update(msg)
	case runDone:
		m.dirty = true
		cmd := m.activity.Update(msg)
		alerts := m.sloRunDone(msg.id) // after the pane took the outcome
		if m.quitting && m.activity.active() == 0 {
			return m, tea.Sequence(alerts, tea.Quit)
		}
		return m, tea.Batch(cmd, alerts, m.keepFrame(msg))
	case startupMsg:
		m.dirty = true
		m.sloStartup(msg)
		return m, nil
	case shutdownMsg:
		if m.activity.active() == 0 {
			m.quitting = true
			return m, tea.Quit
		}
		m.overlay = nil
		return m, m.stopAll()
	case tea.KeyMsg:
		m.dirty = true
		return m, m.key(msg)
	}
	return m, nil
}

// key routes a key: ctrl+c first, then an open overlay takes them all,
// then the console's own keys, then the panes'.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.keys
	if key.Matches(msg, k.Interrupt) {
		return m.quit()
	}
	if m.prompt != nil {
		return m.promptKey(msg)
	}
	if m.overlay != nil {
		o := m.overlay
		cmd := o.Update(msg)
		if o.closed() && m.overlay == o { // its answer may have opened another
			m.overlay = nil
		}
		return cmd
	}
	if cmd, ok := m.demoKey(msg); ok {
		return cmd
	}
	if a, ok := k.action(msg); ok {
		return m.action(a)
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.open(newKeysHelp(m.ctx, commandsHelp(m.ctx.th, m.cfg.Actions)))
		return nil
	}
	if cmd, ok := m.drillKey(msg); ok {
		return cmd
	}
	return tea.Batch(m.activity.Update(msg), m.sparks.Update(msg))
}

// open puts o in the map's place.
func (m *Model) open(o overlay) {
	m.overlay = o
	o.SetSize(m.fleetMap.w, m.fleetMap.h)
}

// action opens the form of the action on key k, or starts it.
func (m *Model) action(k ActionKey) tea.Cmd {
	a, ok := m.cfg.Actions[k]
	switch {
	case !ok:
		return nil
	case a.Unavailable != "" && strings.Contains(a.Unavailable, "\n"):
		m.open(newNote(m.ctx, a.Unavailable))
		return nil
	case a.Unavailable != "":
		return notify("%s", a.Unavailable)
	case len(a.Fields) > 0:
		m.open(newForm(m.ctx, a, func(values []string) tea.Cmd { return m.activity.start(a, values) }))
		return nil
	case a.Confirm != "":
		m.open(newConfirm(m.ctx, a.Confirm, false, func() tea.Cmd { return m.activity.start(a, nil) }))
		return nil
	}
	return m.activity.start(a, nil)
}

func (m *Model) quit() tea.Cmd {
	if m.quitting {
		return nil
	}
	n := m.activity.active()
	if n == 0 {
		m.quitting = true
		return tea.Quit
	}
	if c, ok := m.overlay.(*confirm); ok && c.quit {
		m.overlay = nil
		return c.yes()
	}
	q := "quit? %d run%s active: they are cancelled, clean up and are recorded (y/q: quit, any other key: stay)"
	m.open(newConfirm(m.ctx, fmt.Sprintf(q, n, plural(n)), true, m.stopAll))
	return nil
}

// stopAll cancels every run and quits once all have finished.
func (m *Model) stopAll() tea.Cmd {
	m.quitting = true
	n := m.activity.stopAll()
	if n == 0 { // the runs ended while the question was open: no runDone will quit
		return tea.Quit
	}
	return notify("stopping %d run%s: each cleans up and records what it did…", n, plural(n))
}

// View draws the console; the frame is memoised between changes.
func (m *Model) View() string {
	if m.quitting && m.activity.active() == 0 {
		return ""
	}
	if m.dirty || m.frame == "" {
		m.frame = m.render()
		m.dirty = false
	}
	return m.frame
}

// Frame renders one frame of the console at w×h: `console --once`.
func Frame(cfg Config, fleet watch.FleetView, met poll.MetricsView, w, h int) string {
	m := New(cfg)
	m.setSize(w, h)
	m.Update(fleetMsg(fleet))
	m.Update(metricsMsg(met))
	return m.render()
}
