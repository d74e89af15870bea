package demo

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

type fakeResult struct{ runs.Run }

func (r fakeResult) Summary() string { return r.Kind + " " + r.Outcome }

// fakeRunner runs steps with fn and notes what it started and saw.
type fakeRunner struct {
	mu      sync.Mutex
	started []string
	fn      func(ctx context.Context, st Step, live func(runs.RateControl)) (runs.Result, error)
}

func (f *fakeRunner) Run(ctx context.Context, st Step, live func(runs.RateControl)) (runs.Result, error) {
	f.mu.Lock()
	f.started = append(f.started, st.Describe())
	f.mu.Unlock()
	return f.fn(ctx, st, live)
}

func (f *fakeRunner) names() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.started, ", ")
}

type fakeRate struct{ rate atomic.Value }

func (r *fakeRate) SetRate(v float64) error { r.rate.Store(v); return nil }
func (r *fakeRate) Rate() float64           { return r.rate.Load().(float64) }

// done is a run that ended as outcome, in folder dir.
func done(st Step, outcome, dir string) runs.Result {
	return fakeResult{runs.Run{ID: st.Kind(), Kind: st.Kind(), Outcome: outcome, Dir: dir}}
}

// untilCancelled is a run that goes on until the demo cancels it, then
// records itself as interrupted.
func untilCancelled(ctx context.Context, st Step) (runs.Result, error) {
	<-ctx.Done()
	return done(st, runs.Interrupted, "/results/"+st.Kind()), nil
}

func ptr[T any](v T) *T { return &v }

// states collects what the player shows.
type states struct {
	mu sync.Mutex
	s  []State
}

func (s *states) show(st State) { s.mu.Lock(); s.s = append(s.s, st); s.mu.Unlock() }

func (s *states) captions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.s {
		if st.Caption != "" && (len(out) == 0 || out[len(out)-1] != st.Caption) {
			out = append(out, st.Caption)
		}
	}
	return out
}

func TestPlayAuto(t *testing.T) {
	rate := &fakeRate{}
	rate.rate.Store(10.0)
	var running atomic.Int64
	var reported string
	r := &fakeRunner{fn: func(ctx context.Context, st Step, live func(runs.RateControl)) (runs.Result, error) {
		switch st.Kind() {
		case "load":
			running.Store(40) // the fleet shows them running a little later
			return done(st, runs.Completed, "/results/load"), nil
		case "churn":
			live(rate)
			select { // runs until its duration, or is cancelled
			case <-time.After(300 * time.Millisecond):
				return done(st, runs.Completed, "/results/churn"), nil
			case <-ctx.Done():
				return done(st, runs.Interrupted, "/results/churn"), nil
			}
		case "report":
			reported = st.Report.Snapshot
		}
		return done(st, runs.Completed, "/results/"+st.Kind()), nil
	}}
	script := &Script{Name: "t", Steps: []Step{
		{Caption: "load", Load: &runs.LoadOptions{}, Until: &Until{PodsRunning: ptr(40)}, Timeout: time.Minute},
		{Caption: "churn", Churn: &runs.ChurnOptions{}, After: 50 * time.Millisecond},
		{Caption: "faster", Rate: ptr(20.0)},
		{Caption: "snapshot", Snapshot: &runs.SnapshotOptions{}},
		{Caption: "report", Report: &runs.ReportOptions{}},
	}}
	var seen states
	p := &Player{Runner: r, Show: seen.show, Poll: 10 * time.Millisecond,
		Fleet: func() (watch.FleetView, bool) { return watch.FleetView{Running: int(running.Load())}, true }}
	res := p.Play(context.Background(), script, Auto)

	if res.State.Phase != Done || res.State.Step != 5 {
		t.Fatalf("final state %+v", res.State)
	}
	if got := strings.Join(seen.captions(), " | "); got != "load | churn | faster | snapshot | report" {
		t.Errorf("captions shown: %s", got)
	}
	if rate.Rate() != 20 {
		t.Errorf("churn rate %g after the rate step, want 20", rate.Rate())
	}
	if reported != "/results/snapshot" {
		t.Errorf("report of %q, want the demo's own snapshot", reported)
	}
	if res.Steps[1].Run.Outcome != runs.Completed || res.Steps[2].Summary != "churn rate 10 → 20 pods/s" {
		t.Errorf("steps: %+v", res.Steps)
	}
}

// A step that fails stops the demo: the other runs are cancelled and
// record, the steps after it never start, and the failure is shown.
func TestPlayStepFails(t *testing.T) {
	var cancelled atomic.Bool
	r := &fakeRunner{fn: func(ctx context.Context, st Step, _ func(runs.RateControl)) (runs.Result, error) {
		switch st.Kind() {
		case "churn":
			res, err := untilCancelled(ctx, st)
			cancelled.Store(true)
			return res, err
		case "fault":
			return fakeResult{}, errors.New("no GPU nodes to fault")
		}
		return done(st, runs.Completed, ""), nil
	}}
	script := &Script{Name: "t", Steps: []Step{
		{Caption: "churn", Churn: &runs.ChurnOptions{}, After: 10 * time.Millisecond},
		{Caption: "xid", Fault: &runs.FaultOptions{Spec: fault.Spec{Kind: fault.GPUXid, Nodes: 5}}},
		{Caption: "never", Snapshot: &runs.SnapshotOptions{}},
	}}
	var seen states
	res := (&Player{Runner: r, Show: seen.show, Poll: 5 * time.Millisecond}).Play(context.Background(), script, Auto)

	want := "step 2 (fault gpu-xid 5) failed: no GPU nodes to fault; 1 run cancelled and recorded as interrupted"
	if res.State.Phase != Failed || res.State.Detail != want {
		t.Errorf("final state %s: %q\nwant %q", res.State.Phase, res.State.Detail, want)
	}
	if !cancelled.Load() || res.Steps[0].Run.Outcome != runs.Interrupted {
		t.Errorf("the running churn was not cancelled and recorded: %+v", res.Steps[0])
	}
	if got := r.names(); got != "churn 0/s, fault gpu-xid 5" {
		t.Errorf("started %s", got)
	}
	if last := seen.s[len(seen.s)-1]; last.Phase != Failed {
		t.Errorf("last state shown %+v", last)
	}
}

// A run that ends without completing (timed out, or cancelled by esc in
// the console) stops the demo as a failure too.
func TestPlayRunTimesOut(t *testing.T) {
	r := &fakeRunner{fn: func(_ context.Context, st Step, _ func(runs.RateControl)) (runs.Result, error) {
		return done(st, runs.TimedOut, "/results/load"), nil
	}}
	script := &Script{Name: "t", Steps: []Step{{Caption: "load", Load: loadOf(10, 1)}, {Caption: "x", After: time.Second}}}
	res := (&Player{Runner: r}).Play(context.Background(), script, Auto)
	if res.State.Phase != Failed || res.State.Detail != "step 1 (load 10×1) timed out" {
		t.Errorf("final state %+v", res.State)
	}
}

func TestPlayUntilTimeout(t *testing.T) {
	r := &fakeRunner{fn: func(ctx context.Context, st Step, _ func(runs.RateControl)) (runs.Result, error) {
		return untilCancelled(ctx, st)
	}}
	script := &Script{Name: "t", Steps: []Step{{Caption: "load", Load: loadOf(10, 1),
		Until: &Until{PodsRunning: ptr(10)}, Timeout: 30 * time.Millisecond}}}
	p := &Player{Runner: r, Poll: 5 * time.Millisecond, Fleet: func() (watch.FleetView, bool) { return watch.FleetView{Running: 3}, true }}
	res := p.Play(context.Background(), script, Auto)
	want := "step 1 (load 10×1): still 3/10 pods running after 30ms; 1 run cancelled and recorded as interrupted"
	if res.State.Phase != Failed || res.State.Detail != want {
		t.Errorf("final state %s %q\nwant %q", res.State.Phase, res.State.Detail, want)
	}
}

// In presenter mode each step starts on a key, and not before.
func TestPlayPresenter(t *testing.T) {
	r := &fakeRunner{fn: func(_ context.Context, st Step, _ func(runs.RateControl)) (runs.Result, error) {
		return done(st, runs.Completed, ""), nil
	}}
	script := &Script{Name: "t", Steps: []Step{
		{Caption: "one", Unload: &runs.UnloadOptions{}},
		{Caption: "two", Snapshot: &runs.SnapshotOptions{Since: time.Minute}},
	}}
	next := make(chan struct{})
	var seen states
	res := make(chan Result)
	go func() {
		res <- (&Player{Runner: r, Show: seen.show, Next: next}).Play(context.Background(), script, Presenter)
	}()
	time.Sleep(20 * time.Millisecond)
	if got := r.names(); got != "" {
		t.Fatalf("started %q before any key", got)
	}
	next <- struct{}{}
	time.Sleep(20 * time.Millisecond)
	if got := r.names(); got != "unload" {
		t.Fatalf("after one key: started %q", got)
	}
	next <- struct{}{}
	if got := <-res; got.State.Phase != Done || r.names() != "unload, snapshot 1m0s" {
		t.Errorf("final %+v, started %s", got.State, r.names())
	}
	if s := seen.s[0]; s.Phase != Waiting || s.Step != 0 || s.Steps != 2 {
		t.Errorf("first state %+v: waiting for the key to start step 1", s)
	}
}

// Cancelling the demo's context (the console quitting) stops it: its
// runs are cancelled and record.
func TestPlayStopped(t *testing.T) {
	r := &fakeRunner{fn: func(ctx context.Context, st Step, _ func(runs.RateControl)) (runs.Result, error) {
		return untilCancelled(ctx, st)
	}}
	script := &Script{Name: "t", Steps: []Step{{Caption: "load", Load: loadOf(1, 1)}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	res := (&Player{Runner: r}).Play(ctx, script, Auto)
	if res.State.Phase != Stopped || res.State.Detail != "1 run cancelled and recorded as interrupted" || res.Steps[0].Run.Outcome != runs.Interrupted {
		t.Errorf("final %+v, step %+v", res.State, res.Steps[0])
	}
}

func loadOf(pods, gpus int) *runs.LoadOptions {
	o := runs.NewLoadOptions()
	o.Pods, o.GPUs = pods, gpus
	return &o
}
