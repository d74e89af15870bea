package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// RestartOptions name the component to bring back.
type RestartOptions struct {
	Component string        `json:"component"`
	Timeout   time.Duration `json:"timeout"`
}

// NewRestartOptions are the defaults: a minute to answer again.
func NewRestartOptions() RestartOptions { return RestartOptions{Timeout: time.Minute} }

// Validate checks what needs no cluster.
func (o RestartOptions) Validate() error {
	switch {
	case o.Component == "":
		return fmt.Errorf("restart needs a component: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok-controller or prometheus")
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s is out of range: it must be more than 0", o.Timeout)
	}
	return nil
}

// RestartResult is a restart's run and what it did.
type RestartResult struct {
	Run
	fleet.Restart
}

// Summary says what came back and how fast.
func (r RestartResult) Summary() string {
	was := "was running"
	if !r.WasRunning {
		was = "was down"
	}
	return fmt.Sprintf("%s back in %.1fs (%s)", r.Component, r.Seconds, was)
}

// Restart brings a component of GhostFleet's own fleet back (or restarts
// it) through kwokctl, and records the run, so that reports mark the
// outage's end beside the runs it hit.
func Restart(ctx context.Context, env Env, o RestartOptions) (RestartResult, error) {
	if err := o.Validate(); err != nil {
		return RestartResult{}, err
	}
	if env.Target.Attached() {
		return RestartResult{}, fmt.Errorf("restart manages GhostFleet's own fleet's processes, not an attached cluster's")
	}
	// recorder, not open(): a restart needs no cluster clients (the
	// apiserver may be the component that is down). Like every run it
	// does not start when it could not be recorded.
	s, err := recorder(env)
	if err != nil {
		return RestartResult{}, err
	}
	rec := record.Record{ID: NewID("restart"), Kind: "restart", Params: o, Started: time.Now().UTC()}
	done := progress.Step(env.reporter().Report, "restart", fmt.Sprintf("restarting %s", o.Component), 0)
	res, err := fleet.RestartComponent(ctx, env.Target.Name, o.Component, o.Timeout)
	done()
	if rec.Outcome = record.Outcome(ctx, err); res.Seconds == 0 && err != nil {
		return RestartResult{}, err // refused before it touched anything
	}
	rec.Ended, rec.Result = time.Now().UTC(), res
	rec.Phases = []record.Phase{{Name: "restart " + o.Component, Start: rec.Started, End: rec.Ended}}
	run, werr := s.write(rec)
	out := RestartResult{Run: run, Restart: res}
	if werr != nil {
		return out, werr
	}
	return out, err
}
