package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/state"
)

// RestoreOptions name the saved state to return the fleet to: its run
// folder's name (state-<time>) or the name given to save.
type RestoreOptions struct {
	State    string   `json:"state"`
	Binaries Binaries `json:"binaries"`
}

// Validate checks that a state is named.
func (o RestoreOptions) Validate() error {
	if o.State == "" {
		return fmt.Errorf("no saved state named: give its folder's name (state-<time>) or the name given to save")
	}
	return nil
}

// RestoreResult is a restore's run and the fleet's counts before it, in
// the saved state and after it.
type RestoreResult struct {
	Run
	// Cluster is the fleet restored; State the saved state's folder name.
	Cluster string `json:"cluster"`
	State   string `json:"state"`
	state.RestoreResult
	DurationSeconds float64 `json:"durationSeconds"`
}

// Summary is the state restored and the counts it brought back.
func (r RestoreResult) Summary() string {
	return fmt.Sprintf("restored %s: %d→%d nodes, %d→%d pods in %s", r.State, r.Before.Nodes, r.After.Nodes, r.Before.Pods, r.After.Pods,
		(time.Duration(r.DurationSeconds * float64(time.Second))).Round(time.Second))
}

// Restore returns the fleet to a saved state and records the restore.
// Once the control plane is stopped the restore runs to its end, even
// when ctx is cancelled. A restore refused before anything changed
// returns only the error; one that failed is recorded and returned with
// its error.
func Restore(ctx context.Context, env Env, o RestoreOptions) (RestoreResult, error) {
	if err := ownFleet(env, "restore"); err != nil {
		return RestoreResult{}, err
	}
	if err := o.Validate(); err != nil {
		return RestoreResult{}, err
	}
	if _, _, err := state.Find(env.ResultsDir, o.State); err != nil {
		return RestoreResult{}, err // before the tools are resolved: a typo is told at once
	}
	tools, err := snapshotTools(ctx, env, o.Binaries, true)
	if err != nil {
		return RestoreResult{}, err
	}
	s, err := recorder(env)
	if err != nil {
		return RestoreResult{}, err
	}
	rec, rerr := state.Restore(ctx, env.Target.Name, env.ResultsDir, o.State, tools, env.reporter().Report)
	if rec.Kind == "" {
		return RestoreResult{}, rerr
	}
	res, _ := rec.Result.(state.RestoreResult)
	params, _ := rec.Params.(map[string]string)
	out := RestoreResult{Cluster: rec.Cluster, State: params["state"], RestoreResult: res, DurationSeconds: rec.Ended.Sub(rec.Started).Seconds()}
	out.Run, err = s.write(rec)
	return out, joinErr(rerr, err)
}
