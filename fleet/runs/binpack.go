package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// BinpackOptions ask for a bin-packing fill (see workload.BinpackOptions,
// whose Validate checks them against the fleet). Mix is read from text by
// workload.ParseMix.
type BinpackOptions struct {
	workload.BinpackOptions
}

// DefaultMix is the bin-packing mix as typed: 1-, 2-, 4- and 8-GPU pods
// by count.
const DefaultMix = "1:40,2:30,4:20,8:10"

// NewBinpackOptions are a bin-packing run's defaults, the same for the
// flags and the console's form: fill 95% of the GPUs with DefaultMix at
// 20 pods/s (seed 1) in gf-binpack, giving up at 15 minutes.
func NewBinpackOptions() BinpackOptions {
	mix, _ := workload.ParseMix(DefaultMix)
	return BinpackOptions{workload.BinpackOptions{
		Fill: 0.95, Mix: mix, Rate: 20, Seed: 1, Namespace: "gf-binpack", Timeout: 15 * time.Minute,
	}}
}

// AllScheduled is a bin-packing run's outcome when every pod was bound;
// it may also stall (Stalled), time out or be interrupted.
const AllScheduled = "all scheduled"

// BinpackResult is a bin-packing run's figures and its run; how it ended
// is the run's Outcome.
type BinpackResult struct {
	Run
	workload.BinpackResult
}

// Summary is the fill in one line: the occupancy reached, what did not
// fit, and the GPUs left stranded for whole-node pods.
func (r BinpackResult) Summary() string {
	unschedulable := 0
	for _, n := range r.UnschedulableBySize {
		unschedulable += n
	}
	return fmt.Sprintf("%s: %d pods, occupancy %.1f%% of %.0f%%, %d unschedulable, %d GPUs stranded",
		r.Outcome, r.Pods, 100*r.Occupancy, 100*r.Fill, unschedulable, r.StrandedForWholeNode)
}

// Binpack fills the fleet, measures the scheduler as it gets tight and
// records the run; the pods stay until `ghostfleet unload`. A run that
// stalls, times out or is interrupted returns its result and a nil error.
func Binpack(ctx context.Context, env Env, o BinpackOptions) (BinpackResult, error) {
	if err := o.Check(); err != nil {
		return BinpackResult{}, err // before the cluster: the same answer up or not
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return BinpackResult{}, err
	}
	o.RunID, o.Report = NewID("binpack"), env.reporter().Report
	if err := o.Validate(capacity); err != nil {
		return BinpackResult{}, err
	}
	res, rec, err := workload.Binpack(ctx, s.clients, o.BinpackOptions, capacity)
	if err != nil {
		return BinpackResult{BinpackResult: res}, err
	}
	run, err := s.write(rec)
	out := BinpackResult{Run: run, BinpackResult: res}
	if err != nil {
		return out, err
	}
	if out.Outcome == Interrupted {
		out.Left = fmt.Sprintf("the run's pods are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.Namespace)
	}
	return out, nil
}
