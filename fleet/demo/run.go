package demo

import (
	"context"
	"fmt"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

// RunStep runs st's run through the run API in env, exactly as the
// subcommand or console key of its kind does, recorded the same way. A
// rate change or a caption has no run: RunStep refuses them.
func RunStep(ctx context.Context, env runs.Env, st Step) (runs.Result, error) {
	switch {
	case st.Nodes != nil:
		return runs.Nodes(ctx, env, *st.Nodes)
	case st.Load != nil:
		return runs.Load(ctx, env, *st.Load)
	case st.Churn != nil:
		return runs.Churn(ctx, env, *st.Churn)
	case st.Fault != nil:
		return runs.Fault(ctx, env, *st.Fault)
	case st.Clear != nil:
		return runs.Clear(ctx, env, *st.Clear)
	case st.Snapshot != nil:
		return runs.Snapshot(ctx, env, *st.Snapshot)
	case st.Report != nil:
		return runs.Report(ctx, env, *st.Report)
	case st.Train != nil:
		return runs.Train(ctx, env, *st.Train)
	case st.Unload != nil:
		return runs.Unload(ctx, env, *st.Unload)
	}
	return nil, fmt.Errorf("a %s step has no run", st.Kind())
}
