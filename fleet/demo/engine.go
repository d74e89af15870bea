package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// Mode is how a demo goes from one step to the next.
type Mode int

const (
	// Presenter starts each step on a key (Player.Next).
	Presenter Mode = iota
	// Auto goes on by each step's Until, After, or its run's end.
	Auto
)

func (m Mode) String() string {
	if m == Auto {
		return "auto"
	}
	return "presenter"
}

// Phase is where a demo is.
type Phase string

const (
	// Waiting: presenter mode waits for the key to start step Step+1.
	Waiting Phase = "waiting"
	// Playing: step Step has started; auto mode waits to go on.
	Playing Phase = "playing"
	// Finishing: every step has started; runs are still going.
	Finishing Phase = "finishing"
	Done      Phase = "done"
	// Failed: a step failed; every run was cancelled and has recorded.
	Failed Phase = "failed"
	// Stopped: the demo was stopped (the console quit, or D again).
	Stopped Phase = "stopped"
)

// State is what the console's caption line shows.
type State struct {
	Script      string
	Step, Steps int // Step is 0 before the first starts
	Caption     string
	Mode        Mode
	Phase       Phase
	// Detail is what auto mode waits for ("5,120/8,000 pods running"),
	// or why the demo failed.
	Detail string
}

// Runner runs one step's run through the run API until it ends; live
// receives a churn's rate control once it runs.
type Runner interface {
	Run(ctx context.Context, step Step, live func(runs.RateControl)) (runs.Result, error)
}

// Player plays scripts: it starts each step's run with Runner and tells
// Show every change of the demo's state.
type Player struct {
	Runner Runner
	// Fleet is the latest picture of the fleet, for Until; false when
	// none has come yet.
	Fleet func() (watch.FleetView, bool)
	Show  func(State)
	// Next delivers the presenter's key.
	Next  <-chan struct{}
	Clock clock.WithTicker
	// Poll is how often Until and After are checked (default 1s).
	Poll time.Duration
}

// StepResult is how one step ended.
type StepResult struct {
	Step    int    `json:"step"`
	Caption string `json:"caption"`
	Kind    string `json:"kind"`
	// Run is the step's run; zero for a rate change or a caption.
	Run     runs.Run `json:"run"`
	Summary string   `json:"summary,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Result is a played demo: its final state and each step's run.
type Result struct {
	State State        `json:"state"`
	Steps []StepResult `json:"steps"`
}

// errStopped ends a demo whose context was cancelled.
var errStopped = errors.New("stopped")

// rateWait bounds how long a rate step waits for a starting churn to
// hand over its rate control.
const rateWait = 30 * time.Second

type stepDone struct {
	k   int
	res runs.Result
	err error
}

// play is one playing of a script.
type play struct {
	*Player
	ctx     context.Context
	runCtx  context.Context
	state   State
	done    chan stepDone
	running map[int]Step // steps whose run has not ended, by number
	mu      sync.Mutex
	rates   map[int]runs.RateControl // running churns' controls, by step
	res     Result
	snap    string // the latest snapshot folder this demo wrote
}

// Play plays s in mode until its last run ends, a step fails, or ctx is
// cancelled. A failure cancels every run the demo started and waits for
// them to record (as interrupted) before it returns.
func (p *Player) Play(ctx context.Context, s *Script, mode Mode) Result {
	if p.Clock == nil {
		p.Clock = clock.RealClock{}
	}
	if p.Poll <= 0 {
		p.Poll = time.Second
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pl := &play{Player: p, ctx: ctx, runCtx: runCtx, done: make(chan stepDone, len(s.Steps)),
		running: map[int]Step{}, rates: map[int]runs.RateControl{},
		state: State{Script: s.Name, Steps: len(s.Steps), Mode: mode, Phase: Waiting}}
	pl.res.Steps = make([]StepResult, len(s.Steps))
	for i, st := range s.Steps {
		pl.res.Steps[i] = StepResult{Step: i + 1, Caption: st.Caption, Kind: st.Kind()}
	}
	err := pl.steps(s, mode)
	if err == nil {
		pl.state.Phase, pl.state.Detail = Finishing, ""
		pl.show()
		err = pl.wait(nil, func() (bool, string, error) {
			return len(pl.running) == 0, fmt.Sprintf("%d run%s still going", len(pl.running), plural(len(pl.running))), nil
		})
	}
	switch {
	case err == nil:
		pl.state.Phase, pl.state.Detail = Done, fmt.Sprintf("%d steps played", len(s.Steps))
	case errors.Is(err, errStopped):
		pl.state.Phase, pl.state.Detail = Stopped, pl.stop(cancel)
	default:
		why := err.Error()
		if left := pl.stop(cancel); left != "" {
			why += "; " + left
		}
		pl.state.Phase, pl.state.Detail = Failed, why
	}
	pl.show()
	pl.res.State = pl.state
	return pl.res
}

// steps starts each step in turn and waits to go on.
func (pl *play) steps(s *Script, mode Mode) error {
	for i, st := range s.Steps {
		k := i + 1
		if mode == Presenter {
			pl.state.Phase, pl.state.Detail = Waiting, ""
			pl.show()
			if err := pl.wait(pl.Next, nil); err != nil {
				return err
			}
		}
		pl.state.Step, pl.state.Caption, pl.state.Phase, pl.state.Detail = k, st.Caption, Playing, ""
		pl.show()
		if err := pl.begin(k, st); err != nil {
			return fmt.Errorf("step %d (%s): %w", k, st.Describe(), err)
		}
		if mode == Auto {
			if err := pl.wait(nil, pl.advance(k, st)); err != nil {
				return err
			}
		}
	}
	return nil
}

// begin starts step k's run, or changes a churn's rate.
func (pl *play) begin(k int, st Step) error {
	switch {
	case st.Rate != nil:
		var rc runs.RateControl
		deadline := pl.Clock.Now().Add(rateWait)
		err := pl.wait(nil, func() (bool, string, error) {
			rc = pl.latestRate()
			switch {
			case rc != nil:
				return true, "", nil
			case !pl.churnRunning():
				return false, "", errors.New("no churn is running: the churn step before it has ended (give it a longer duration)")
			case pl.Clock.Now().After(deadline):
				return false, "", fmt.Errorf("the running churn gave no rate control in %s", rateWait)
			}
			return false, "waiting for the churn to start", nil
		})
		if err != nil {
			return err
		}
		old := rc.Rate()
		if err := rc.SetRate(*st.Rate); err != nil {
			return err
		}
		pl.res.Steps[k-1].Summary = fmt.Sprintf("churn rate %g → %g pods/s", old, *st.Rate)
		return nil
	case st.Kind() == "caption":
		return nil
	case st.Report != nil && st.Report.Snapshot == "":
		// The report is of this demo's snapshot: let a running one end.
		if err := pl.wait(nil, func() (bool, string, error) {
			return !pl.kindRunning("snapshot"), "waiting for the snapshot", nil
		}); err != nil {
			return err
		}
		if pl.snap != "" {
			o := *st.Report
			o.Snapshot = pl.snap
			st.Report = &o
		}
	}
	pl.running[k] = st
	go func() {
		res, err := pl.Runner.Run(pl.runCtx, st, func(rc runs.RateControl) {
			pl.mu.Lock()
			pl.rates[k] = rc
			pl.mu.Unlock()
		})
		pl.done <- stepDone{k, res, err}
	}()
	return nil
}

// advance is when auto mode goes on from step k: Until, After, or the
// run's end.
func (pl *play) advance(k int, st Step) func() (bool, string, error) {
	start := pl.Clock.Now()
	switch {
	case st.Until != nil:
		return func() (bool, string, error) {
			var v watch.FleetView
			ok := false
			if pl.Fleet != nil {
				v, ok = pl.Fleet()
			}
			met, detail := st.Until.Met(v, ok)
			if !met && pl.Clock.Since(start) > st.Timeout {
				return false, "", fmt.Errorf("step %d (%s): still %s after %s", k, st.Describe(), detail, st.Timeout)
			}
			return met, "until " + detail, nil
		}
	case st.After > 0:
		return func() (bool, string, error) {
			left := st.After - pl.Clock.Since(start)
			return left <= 0, fmt.Sprintf("next in %s", left.Round(time.Second)), nil
		}
	}
	return func() (bool, string, error) {
		_, running := pl.running[k]
		return !running, "", nil
	}
}

// wait blocks until ready says go (checked at once, after every event
// and every Poll), or a key arrives on keys; a run ending meanwhile is
// collected, and one that failed ends the wait with its error.
func (pl *play) wait(keys <-chan struct{}, ready func() (bool, string, error)) error {
	var tick <-chan time.Time
	if ready != nil {
		t := pl.Clock.NewTicker(pl.Poll)
		defer t.Stop()
		tick = t.C()
	}
	for {
		if ready != nil {
			ok, detail, err := ready()
			if err != nil || ok {
				return err
			}
			if detail != pl.state.Detail {
				pl.state.Detail = detail
				pl.show()
			}
		}
		select {
		case <-pl.ctx.Done():
			return errStopped
		case d := <-pl.done:
			if err := pl.collect(d); err != nil {
				return err
			}
		case <-keys:
			return nil
		case <-tick:
		}
	}
}

// collect records a step's ended run; a run that did not complete is the
// demo's failure.
func (pl *play) collect(d stepDone) error {
	st := pl.running[d.k]
	delete(pl.running, d.k)
	pl.mu.Lock()
	delete(pl.rates, d.k)
	pl.mu.Unlock()
	r := &pl.res.Steps[d.k-1]
	if d.res != nil {
		r.Run, r.Summary = d.res.Header(), d.res.Summary()
	}
	if d.err != nil {
		r.Error = d.err.Error()
	}
	switch {
	case d.err != nil:
		return fmt.Errorf("step %d (%s) failed: %w", d.k, st.Describe(), d.err)
	case d.res == nil:
		return fmt.Errorf("step %d (%s) returned no result", d.k, st.Describe())
	case !completed(r.Run.Outcome):
		return fmt.Errorf("step %d (%s) %s", d.k, st.Describe(), r.Run.Outcome)
	}
	if st.Snapshot != nil {
		pl.snap = r.Run.Dir
	}
	return nil
}

// completed tells the outcomes a demo goes on after.
func completed(outcome string) bool { return outcome == runs.Completed || outcome == runs.AllStarted }

// stop cancels every running step and waits for each to end and record;
// it says how many were cancelled.
func (pl *play) stop(cancel context.CancelFunc) string {
	n := len(pl.running)
	if n == 0 {
		return ""
	}
	cancel()
	pl.state.Detail = fmt.Sprintf("cancelling %d run%s…", n, plural(n))
	pl.show()
	interrupted := 0
	for len(pl.running) > 0 {
		d := <-pl.done
		_ = pl.collect(d) // each cancelled run says so in its own record
		if d.res != nil && d.res.Header().Outcome == runs.Interrupted {
			interrupted++
		}
	}
	if interrupted == n {
		return fmt.Sprintf("%d run%s cancelled and recorded as interrupted", n, plural(n))
	}
	// A run past its work (a churn removing its pods) finishes as it was.
	return fmt.Sprintf("%d run%s cancelled, %d recorded as interrupted", n, plural(n), interrupted)
}

func (pl *play) latestRate() runs.RateControl {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	best := 0
	for k := range pl.rates {
		best = max(best, k)
	}
	return pl.rates[best]
}

func (pl *play) churnRunning() bool {
	for _, st := range pl.running {
		if st.Churn != nil {
			return true
		}
	}
	return false
}

func (pl *play) kindRunning(kind string) bool {
	for _, st := range pl.running {
		if st.Kind() == kind {
			return true
		}
	}
	return false
}

func (pl *play) show() {
	if pl.Show != nil {
		pl.Show(pl.state)
	}
}

// Met says whether the fleet v (ok: one has come) meets u, and what it
// has of u's figures ("5120/8000 pods running").
func (u *Until) Met(v watch.FleetView, ok bool) (bool, string) {
	met := ok
	var parts []string
	check := func(have, want int64, what string) {
		parts = append(parts, fmt.Sprintf("%d/%d %s", have, want, what))
		if have < want {
			met = false
		}
	}
	if u.PodsRunning != nil {
		check(int64(v.Running), int64(*u.PodsRunning), "pods running")
	}
	if u.NodesReady != nil {
		check(int64(v.Ready), int64(*u.NodesReady), "nodes ready")
	}
	if u.NodesFaulted != nil {
		check(int64(v.Faulted), int64(*u.NodesFaulted), "nodes faulted")
	}
	if u.GPUsAllocated != nil {
		check(v.GPUsUsed, *u.GPUsAllocated, "GPUs allocated")
	}
	detail := strings.Join(parts, ", ")
	if !ok {
		detail = "no picture of the fleet yet"
	}
	return met, detail
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
