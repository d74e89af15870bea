package tui

import (
	"context"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// run is one action started from the console. Its work runs on its own
// goroutine and talks back only through msgs, relayed as tea.Msgs: the
// model is changed on the UI goroutine alone.
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

type (
	runEvent struct {
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
)

// start runs a in the background; its reports come back as messages
// through relay.
func (p *activity) start(a Action, values []string) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	p.nextID++
	name := a.Name
	if a.Describe != nil {
		name = a.Describe(values)
	}
	r := &run{id: p.nextID, name: name, started: p.now(), cancel: cancel,
		msgs: make(chan tea.Msg, 64), done: make(chan struct{}), progress: -1}
	p.runs = append(p.runs, r)
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

func (p *activity) run(id int) *run {
	for _, r := range p.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

// current is the run esc cancels: the latest one still active.
func (p *activity) current() *run {
	for i := len(p.runs) - 1; i >= 0; i-- {
		if !p.runs[i].finished {
			return p.runs[i]
		}
	}
	return nil
}

func (p *activity) active() int { return len(p.activeNames()) }

// activeNames names the active runs, oldest first: the header's state.
func (p *activity) activeNames() []string {
	var names []string
	for _, r := range p.runs {
		if !r.finished {
			names = append(names, r.name)
		}
	}
	return names
}

// stopAll cancels every active run and says how many.
func (p *activity) stopAll() int {
	n := 0
	for _, r := range p.runs {
		if !r.finished {
			r.cancelled = true
			r.cancel()
			n++
		}
	}
	return n
}

func (p *activity) cancelCurrent() tea.Cmd {
	r := p.current()
	if r == nil {
		return notify("no run to cancel")
	}
	r.cancelled = true
	r.cancel()
	return notify("cancelling %s: it cleans up and records what it did", r.name)
}

// changeRate steps the rate of the latest active run that has one.
func (p *activity) changeRate(up bool) tea.Cmd {
	var r *run
	for i := len(p.runs) - 1; i >= 0 && r == nil; i-- {
		if !p.runs[i].finished && p.runs[i].rate != nil {
			r = p.runs[i]
		}
	}
	if r == nil {
		return notify("+/- change a running churn's rate: start one with c")
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
		return notify("rate %g: %v", next, err)
	}
	return notify("churn rate %g → %g pods/s", old, next)
}

// marks are the runs for the charts to mark: each run's span, and the
// fault runs (named "fault <kind>" by their action; "fault clear" clears
// them) as faults.
func (p *activity) marks() []mark {
	out := make([]mark, 0, len(p.runs))
	for _, r := range p.runs {
		fault := strings.HasPrefix(r.name, "fault ") && r.name != "fault clear"
		out = append(out, mark{start: r.started, end: r.ended, fault: fault})
	}
	return out
}
