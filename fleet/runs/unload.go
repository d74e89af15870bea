package runs

import (
	"context"
	"fmt"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// UnloadOptions ask for every GhostFleet workload to be removed; there is
// nothing to choose.
type UnloadOptions struct{}

// UnloadResult is what an unload removed. An unload writes no run folder:
// Dir is empty.
type UnloadResult struct {
	Run
	// Namespaces is how many workload namespaces were removed.
	Namespaces int `json:"namespaces"`
}

// Summary is the unload in one line.
func (r UnloadResult) Summary() string {
	switch {
	case r.Outcome == Interrupted:
		return "unload interrupted: workload namespaces may be left"
	case r.Outcome != Completed:
		return "unload " + r.Outcome
	}
	return fmt.Sprintf("removed %d workload namespaces", r.Namespaces)
}

// Unload deletes every namespace labelled as a GhostFleet workload's (and
// so their pods, Deployments and Jobs) and waits until they are gone;
// nothing is recorded. Interrupted while they terminate, it returns its
// result and a nil error.
func Unload(ctx context.Context, env Env, _ UnloadOptions) (UnloadResult, error) {
	cs, err := env.Target.Clientset(true)
	if err != nil {
		return UnloadResult{}, err
	}
	if err := attachedWrite(ctx, env, cs, "delete every GhostFleet workload namespace", false); err != nil {
		return UnloadResult{}, err
	}
	out := UnloadResult{Run: Run{ID: NewID("unload"), Kind: "unload", Outcome: Completed}}
	done := progress.Step(env.reporter().Report, "unload", "removing every GhostFleet workload namespace", 0)
	n, err := workload.DeleteAll(ctx, cs)
	done()
	switch {
	case err != nil && ctx.Err() != nil:
		out.Outcome = Interrupted
		out.Left = "workload namespaces may be left, deleted but still terminating or not yet deleted; `ghostfleet unload` again finishes"
		return out, nil
	case err != nil:
		out.Outcome = "failed: " + err.Error()
		return out, err
	}
	out.Namespaces = n
	return out, nil
}
