package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
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

// Config is everything the console shows and can do. The channels are fed
// by WatchFleet and PollMetrics (or test fakes); Actions come from the
// command line.
type Config struct {
	Info    Info
	Theme   Theme
	Fleet   <-chan FleetView
	Metrics <-chan MetricsView
	Actions map[ActionKey]Action
	Now     func() time.Time
}

// MinWidth and MinHeight are the smallest terminal the console draws in.
const (
	MinWidth  = 80
	MinHeight = 24
)

// resizeDelay debounces resizes: a window dragged across the screen
// redraws once it settles, not on every step.
const resizeDelay = 80 * time.Millisecond

// noticeFor is how long a notice replaces the key help in the footer.
const noticeFor = 8 * time.Second

// Model is the console's root model: it owns the data the panes show and
// routes messages; the panes are pure functions of it.
type Model struct {
	cfg  Config
	th   Theme
	keys keyMap
	help help.Model

	w, h      int
	resizeSeq int

	fleet     FleetView
	haveFleet bool
	met       MetricsView
	class     int // the API sparkline's SLO class, an index of sloClasses

	runs   []*run
	nextID int

	form     *form
	confirm  *confirm
	showHelp bool
	note     string // a longer message in the map's place until a key
	notice   string
	noticeAt time.Time
	quitting bool

	// frame memoises View: it is redrawn only after something it shows
	// changed. The map and the sparklines, the costly parts, are kept
	// apart: the clock ticking redraws neither.
	frame  string
	dirty  bool
	maps   memo
	sparks memo
}

// memo is one rendered block and what it was rendered from.
type memo struct {
	key any
	out string
}

func (c *memo) get(key any, render func() string) string {
	if c.out == "" || c.key != key {
		c.key, c.out = key, render()
	}
	return c.out
}

// run is one action started from the console.
type run struct {
	id      int
	name    string
	started time.Time
	ended   time.Time
	cancel  context.CancelFunc
	msgs    chan tea.Msg
	done    chan struct{}

	message  string
	progress float64 // 0–1, or -1 when the step has no total
	rate     RateControl

	finished  bool
	cancelled bool
	outcome   Outcome
	err       error
}

// confirm is a pending yes/no question: quitting with runs active, or an
// action that asks first.
type confirm struct {
	question string
	yes      func() tea.Cmd
	quit     bool // ctrl+c again answers yes
}

type (
	fleetMsg   FleetView
	metricsMsg MetricsView
	tickMsg    time.Time
	resizeMsg  struct{ w, h, seq int }
	runEvent   struct {
		id int
		ev progress.Event
	}
	runLive struct {
		id int
		rc RateControl
	}
	runDone struct {
		id      int
		outcome Outcome
		err     error
	}
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
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles.ShortKey, h.Styles.FullKey = cfg.Theme.Key, cfg.Theme.Key
	h.Styles.ShortDesc, h.Styles.FullDesc = cfg.Theme.Footer, cfg.Theme.Footer
	h.Styles.ShortSeparator, h.Styles.FullSeparator = cfg.Theme.Dim, cfg.Theme.Dim
	return &Model{cfg: cfg, th: cfg.Theme, keys: newKeyMap(), help: h, w: MinWidth, h: MinHeight, dirty: true}
}

// Init starts the relays from the data channels and the clock.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(waitFleet(m.cfg.Fleet), waitMetrics(m.cfg.Metrics), tick())
}

// receive reads one value of ch as a message; a closed channel ends it.
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

func waitFleet(ch <-chan FleetView) tea.Cmd {
	return receive(ch, func(v FleetView) tea.Msg { return fleetMsg(v) })
}

func waitMetrics(ch <-chan MetricsView) tea.Cmd {
	return receive(ch, func(v MetricsView) tea.Msg { return metricsMsg(v) })
}

func tick() tea.Cmd { return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) }) }

// relay turns a run's reports into messages until the run is done.
func relay(r *run) tea.Cmd {
	return func() tea.Msg {
		select {
		case msg := <-r.msgs:
			return msg
		case <-r.done:
			select { // reports sent just before the end still count
			case msg := <-r.msgs:
				return msg
			default:
				return nil
			}
		}
	}
}

// Update routes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resizeSeq++
		if m.frame == "" || !m.haveFleet {
			m.w, m.h, m.dirty = msg.Width, msg.Height, true
			return m, nil
		}
		seq := m.resizeSeq
		return m, tea.Tick(resizeDelay, func(time.Time) tea.Msg { return resizeMsg{msg.Width, msg.Height, seq} })
	case resizeMsg:
		if msg.seq == m.resizeSeq {
			m.w, m.h, m.dirty = msg.w, msg.h, true
		}
		return m, nil
	case fleetMsg:
		m.fleet, m.haveFleet, m.dirty = FleetView(msg), true, true
		return m, waitFleet(m.cfg.Fleet)
	case metricsMsg:
		m.met, m.dirty = MetricsView(msg), true
		return m, waitMetrics(m.cfg.Metrics)
	case tickMsg:
		m.dirty = true // uptime and elapsed times
		if m.notice != "" && m.cfg.Now().Sub(m.noticeAt) > noticeFor {
			m.notice = ""
		}
		return m, tick()
	case runEvent:
		if r := m.run(msg.id); r != nil {
			r.apply(msg.ev)
			m.dirty = true
			return m, relay(r)
		}
	case runLive:
		if r := m.run(msg.id); r != nil {
			r.rate = msg.rc
			return m, relay(r)
		}
	case runDone:
		return m, m.finish(msg)
	case shutdownMsg:
		if m.active() == 0 {
			m.quitting = true
			return m, tea.Quit
		}
		m.confirm = nil
		return m, m.stopAll()
	case tea.KeyMsg:
		m.dirty = true
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) run(id int) *run {
	for _, r := range m.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

// current is the run esc cancels: the latest one still active.
func (m *Model) current() *run {
	for i := len(m.runs) - 1; i >= 0; i-- {
		if !m.runs[i].finished {
			return m.runs[i]
		}
	}
	return nil
}

func (m *Model) active() int {
	n := 0
	for _, r := range m.runs {
		if !r.finished {
			n++
		}
	}
	return n
}

func (m *Model) say(format string, args ...any) {
	m.notice, m.noticeAt = fmt.Sprintf(format, args...), m.cfg.Now()
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return m.quit()
	}
	if m.form != nil { // q and every letter go to the form's inputs
		if msg.String() == "esc" {
			m.form = nil
			return nil
		}
		submitted, cmd := m.form.update(msg)
		if !submitted {
			return cmd
		}
		f := m.form
		m.form = nil
		return m.start(f.action, f.values())
	}
	if m.confirm != nil {
		c := m.confirm
		m.confirm = nil
		switch k := msg.String(); {
		case k == "y" || k == "Y" || k == "enter", k == "q" && c.quit:
			return c.yes()
		}
		return nil
	}
	if m.note != "" {
		m.note = ""
		return nil
	}
	if m.showHelp {
		m.showHelp = false
		if msg.String() == "esc" || msg.String() == "?" {
			return nil
		}
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.Cancel):
		if r := m.current(); r != nil {
			r.cancelled = true
			r.cancel()
			m.say("cancelling %s: it cleans up and records what it did", r.name)
		} else {
			m.say("no run to cancel")
		}
	case key.Matches(msg, k.Faster), key.Matches(msg, k.Slower):
		m.changeRate(key.Matches(msg, k.Faster))
	case key.Matches(msg, k.SLOClass):
		m.class = (m.class + 1) % len(sloClasses)
	default:
		return m.action(ActionKey(msg.String()))
	}
	return nil
}

// action opens the form of the action on key k, or starts it.
func (m *Model) action(k ActionKey) tea.Cmd {
	a, ok := m.cfg.Actions[k]
	if !ok {
		return nil
	}
	if a.Unavailable != "" {
		if strings.Contains(a.Unavailable, "\n") {
			m.note = a.Unavailable
		} else {
			m.say("%s", a.Unavailable)
		}
		return nil
	}
	if len(a.Fields) > 0 {
		m.form = newForm(a)
		return textinput.Blink
	}
	if a.Confirm != "" {
		m.confirm = &confirm{question: a.Confirm, yes: func() tea.Cmd { return m.start(a, nil) }}
		return nil
	}
	return m.start(a, nil)
}

// start runs an action in the background; its reports come back as
// messages through relay.
func (m *Model) start(a Action, values []string) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	m.nextID++
	name := a.Name
	if a.Describe != nil {
		name = a.Describe(values)
	}
	r := &run{id: m.nextID, name: name, started: m.cfg.Now(), cancel: cancel,
		msgs: make(chan tea.Msg, 64), done: make(chan struct{}), progress: -1}
	m.runs = append(m.runs, r)
	id := r.id
	ctl := Control{
		Report: func(e progress.Event) {
			if e.Kind == progress.Update { // a later update supersedes a dropped one
				select {
				case r.msgs <- runEvent{id, e}:
				default:
				}
				return
			}
			r.msgs <- runEvent{id, e}
		},
		Live: func(rc RateControl) { r.msgs <- runLive{id, rc} },
	}
	work := func() tea.Msg {
		defer close(r.done)
		defer cancel()
		o, err := a.Run(ctx, values, ctl)
		return runDone{id, o, err}
	}
	return tea.Batch(work, relay(r))
}

func (m *Model) finish(d runDone) tea.Cmd {
	r := m.run(d.id)
	if r == nil {
		return nil
	}
	r.finished, r.ended, r.outcome, r.err, r.rate = true, m.cfg.Now(), d.outcome, d.err, nil
	m.dirty = true
	if m.quitting && m.active() == 0 {
		return tea.Quit
	}
	return nil
}

func (m *Model) changeRate(up bool) {
	var r *run
	for i := len(m.runs) - 1; i >= 0 && r == nil; i-- {
		if !m.runs[i].finished && m.runs[i].rate != nil {
			r = m.runs[i]
		}
	}
	if r == nil {
		m.say("+/- change a running churn's rate: start one with c")
		return
	}
	old := r.rate.Rate()
	step := 10.0 // pods/s: round figures to say on stage
	if old <= 10 {
		step = 1
	}
	next := old + step
	if !up {
		next = max(1, old-step)
	}
	if err := r.rate.SetRate(next); err != nil {
		m.say("rate %g: %v", next, err)
		return
	}
	m.say("churn rate %g → %g pods/s", old, next)
}

func (m *Model) quit() tea.Cmd {
	if m.quitting {
		return nil
	}
	n := m.active()
	if n == 0 {
		m.quitting = true
		return tea.Quit
	}
	if m.confirm != nil && m.confirm.quit {
		return m.confirm.yes()
	}
	m.form = nil
	m.confirm = &confirm{
		question: fmt.Sprintf("quit? %d run%s active: they are cancelled, clean up and are recorded (y/q: quit, any other key: stay)", n, plural(n)),
		yes:      m.stopAll,
		quit:     true,
	}
	return nil
}

// stopAll cancels every run and quits once all have finished.
func (m *Model) stopAll() tea.Cmd {
	m.quitting = true
	n := 0
	for _, r := range m.runs {
		if !r.finished {
			r.cancelled = true
			r.cancel()
			n++
		}
	}
	m.say("stopping %d run%s: each cleans up and records what it did…", n, plural(n))
	return nil
}

func (r *run) apply(e progress.Event) {
	switch e.Kind {
	case progress.Start:
		r.message, r.progress = e.Message, -1
	case progress.Update:
		if e.Message != "" {
			r.message = e.Message
		}
		if e.Total > 0 {
			r.progress = float64(e.Done) / float64(e.Total)
		}
	case progress.Finish:
		r.progress = -1
		r.message = e.Message + " ✓"
	case progress.Info, progress.Warn:
		r.message = e.Message
	}
}

// View draws the console; the frame is memoised between changes.
func (m *Model) View() string {
	if m.quitting && m.active() == 0 {
		return ""
	}
	if m.dirty || m.frame == "" {
		m.frame = m.render()
		m.dirty = false
	}
	return m.frame
}

// Frame renders one frame of the console at w×h: `console --once`.
func Frame(cfg Config, fleet FleetView, met MetricsView, w, h int) string {
	m := New(cfg)
	m.w, m.h = w, h
	m.fleet, m.haveFleet, m.met = fleet, true, met
	return m.render()
}

func (m *Model) render() string {
	w, h := m.w, m.h
	if w < MinWidth || h < MinHeight {
		return fmt.Sprintf("GhostFleet needs a terminal of at least %d×%d; this one is %d×%d.", MinWidth, MinHeight, w, h)
	}
	header := m.header(w)
	footer := m.footer(w)
	bodyH := h - 2

	cols, plot := 2, 2
	switch {
	case h >= 44:
		plot = 7
	case h >= 32:
		plot = 5
	case h >= 28:
		plot = 3
	}
	if w >= 150 {
		cols = 4
		plot += 2
	}
	sparkPaneH := plot + 3 // title and border
	sparkH := (4 / cols) * sparkPaneH
	topH := bodyH - sparkH

	rw := min(max(w/3, 34), 52)
	mw := w - rw
	allocH := 7
	actH := topH - allocH

	left := m.mapPane(mw, topH)
	right := lipgloss.JoinVertical(lipgloss.Left,
		box(m.th, "Allocation", renderAllocation(m.th, m.fleet, m.met.GPUUtil, rw-4), rw, allocH),
		box(m.th, "Activity", m.activity(rw-4, actH-3), rw, actH))
	top := joinH(left, right)

	type sparkKey struct {
		at         time.Time
		class      int
		w, h, plot int
	}
	charts := m.sparks.get(sparkKey{m.met.At, m.class, w, h, plot}, func() string {
		var rows []string
		sp := sparks(m.met, m.class)
		for i := 0; i < len(sp); i += cols {
			var blocks []string
			for j := 0; j < cols; j++ {
				sw := w / cols
				if j == cols-1 {
					sw = w - (cols-1)*(w/cols)
				}
				title, body := renderSpark(m.th, sp[i+j], sw-4, plot)
				blocks = append(blocks, box(m.th, title, body, sw, sparkPaneH))
			}
			rows = append(rows, joinH(blocks...))
		}
		return lipgloss.JoinVertical(lipgloss.Left, rows...)
	})
	return lipgloss.JoinVertical(lipgloss.Left, header, top, charts, footer)
}

func (m *Model) header(w int) string {
	i := m.cfg.Info
	parts := []string{i.Cluster}
	if i.Kubernetes != "" {
		parts = append(parts, "k8s "+i.Kubernetes)
	}
	if i.Kwok != "" && w >= 100 {
		parts = append(parts, "kwok "+i.Kwok)
	}
	if i.Profile != "" {
		parts = append(parts, "profile "+i.Profile)
	}
	if !i.Created.IsZero() {
		parts = append(parts, "up "+duration(m.cfg.Now().Sub(i.Created)))
	}
	if i.Metrics != "" {
		parts = append(parts, "metrics: "+i.Metrics)
	}
	var active []string
	for _, r := range m.runs {
		if !r.finished {
			active = append(active, r.name)
		}
	}
	state := "idle"
	if len(active) > 0 {
		state = "running: " + strings.Join(active, ", ")
	}
	parts = append(parts, state)
	line := m.th.Title.Render("GhostFleet") + " " + m.th.Header.Render(strings.Join(parts, " · "))
	return lipgloss.NewStyle().MaxWidth(w).Render(line)
}

func (m *Model) footer(w int) string {
	line := m.help.ShortHelpView(m.keys.ShortHelp())
	if m.notice != "" {
		line = m.th.Warn.Render(m.notice)
	}
	return lipgloss.NewStyle().MaxWidth(w).Render(line)
}

// mapPane is the fleet map, or the form, help or question that takes its
// place while open.
func (m *Model) mapPane(w, h int) string {
	switch {
	case m.form != nil:
		return box(m.th, m.form.action.Name, m.form.view(m.th), w, h)
	case m.confirm != nil:
		return box(m.th, "Confirm", m.th.Warn.Width(w-4).Render(m.confirm.question), w, h)
	case m.note != "":
		return box(m.th, "Not available", m.th.Footer.Width(w-4).Render(m.note)+"\n\n"+m.th.Dim.Render("any key closes this"), w, h)
	case m.showHelp:
		m.help.ShowAll = true
		v := m.help.FullHelpView(m.keys.FullHelp())
		m.help.ShowAll = false
		return box(m.th, "Keys", v+"\n\n"+m.th.Dim.Render("any key closes this"), w, h)
	case !m.haveFleet:
		return box(m.th, "Fleet", m.th.Dim.Render("listing nodes and pods…"), w, h)
	}
	type mapKey struct {
		at   time.Time
		w, h int
	}
	return m.maps.get(mapKey{m.fleet.At, w, h}, func() string {
		cells, caption := renderMap(m.th, m.fleet, w-4, h-4)
		return box(m.th, "Fleet · "+caption, cells+"\n"+strings.Repeat("\n", max(0, h-5-strings.Count(cells, "\n")))+mapLegend(m.th), w, h)
	})
}

// wrap indents s by two and wraps it into at most three lines of w.
func wrap(style lipgloss.Style, s string, w int) []string {
	lines := strings.Split(lipgloss.NewStyle().Width(w-2).Render(s), "\n")
	if len(lines) > 3 {
		lines = lines[:3]
	}
	for i, l := range lines {
		lines[i] = "  " + style.Render(strings.TrimRight(l, " "))
	}
	return lines
}

// activity lists runs, active first then the latest finished, in w×h.
func (m *Model) activity(w, h int) string {
	if len(m.runs) == 0 {
		return m.th.Dim.Render("no runs yet: l starts a load, c a churn")
	}
	var lines []string
	now := m.cfg.Now()
	for i := len(m.runs) - 1; i >= 0 && len(lines) < h; i-- {
		r := m.runs[i]
		if r.finished {
			continue
		}
		label := fmt.Sprintf("▸ %s  %s", m.th.Bold.Render(r.name), duration(now.Sub(r.started)))
		if r.rate != nil {
			label += fmt.Sprintf("  %g pods/s", r.rate.Rate())
		}
		lines = append(lines, label)
		if r.progress >= 0 {
			lines = append(lines, "  "+bar(m.th, r.progress, w-8)+fmt.Sprintf(" %3.0f%%", 100*r.progress))
		}
		if r.message != "" {
			lines = append(lines, "  "+m.th.Dim.Render(r.message))
		}
	}
	for i := len(m.runs) - 1; i >= 0 && len(lines) < h; i-- {
		r := m.runs[i]
		if !r.finished {
			continue
		}
		mark, style := "✓", m.th.Good
		switch {
		case r.cancelled: // what a cancelled command says is its error
			mark, style = "■", m.th.Warn
		case r.err != nil:
			mark, style = "✗", m.th.Bad
		}
		lines = append(lines, style.Render(mark)+" "+r.name+m.th.Dim.Render(" · "+duration(r.ended.Sub(r.started))))
		switch {
		case r.err != nil:
			lines = append(lines, wrap(m.th.Bad, r.err.Error(), w)...)
		case r.outcome.Summary != "":
			lines = append(lines, wrap(m.th.Footer, r.outcome.Summary, w)...)
		}
		if r.outcome.Dir != "" {
			lines = append(lines, "  "+m.th.Dim.Render(r.outcome.Dir))
		}
	}
	return strings.Join(lines, "\n")
}
