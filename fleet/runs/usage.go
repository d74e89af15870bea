package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// UsageKind is the record kind of a usage change.
const UsageKind = "usage"

// UsageOptions change the emulated CPU and/or memory usage of the pods
// a label selector and/or namespace pick (see fleet.UsageChange).
type UsageOptions struct {
	fleet.UsageChange
}

// Validate checks the change without the cluster, each error naming the
// value and what is allowed.
func (o UsageOptions) Validate() error { return o.UsageChange.Validate() }

// UsageResult is what a usage change set, and its run (kind "usage").
type UsageResult struct {
	Run
	Change fleet.UsageChange `json:"change"`
	fleet.UsageSet
}

// Summary is the change in one line.
func (r UsageResult) Summary() string {
	var set []string
	if r.Change.CPU != "" {
		set = append(set, "cpu "+r.Change.CPU)
	}
	if r.Change.Memory != "" {
		set = append(set, "memory "+r.Change.Memory)
	}
	return fmt.Sprintf("usage %s on %d pods: %s", strings.Join(set, ", "), r.Pods, nameList(r.PodNames, 60))
}

// SetUsage changes the pods' emulated usage and records the change. A
// change refused before anything was set (bad values, a selector that
// matches no pod) returns the error and no run; one that failed part way
// is recorded with how many pods it set.
func SetUsage(ctx context.Context, env Env, o UsageOptions) (UsageResult, error) {
	if err := o.Validate(); err != nil {
		return UsageResult{}, err
	}
	s, err := open(env)
	if err != nil {
		return UsageResult{}, err
	}
	if err := attachedWrite(ctx, env, s.clients.Admin, "set the emulated usage of pods (annotations "+fleet.AnnotationUsageCPU+", "+fleet.AnnotationUsageMemory+")", false); err != nil {
		return UsageResult{}, err
	}
	started := time.Now().UTC()
	set, serr := fleet.SetUsage(ctx, s.clients.Admin, o.UsageChange, env.report)
	if set.Matched == 0 {
		return UsageResult{}, serr // refused: nothing was changed
	}
	ended := time.Now().UTC()
	rec := record.Record{Kind: UsageKind, Started: started, Ended: ended, Params: o.UsageChange, Result: set,
		Phases:  []record.Phase{{Name: UsageKind, Start: started, End: ended}},
		Outcome: record.Outcome(ctx, serr)}
	out := UsageResult{Change: o.UsageChange, UsageSet: set}
	out.Run, err = s.write(rec)
	if err != nil {
		return out, joinErr(serr, err)
	}
	if out.Outcome != Completed && set.Pods < set.Matched {
		out.Left = fmt.Sprintf("usage set on %d of %d pods; the same command again sets the rest", set.Pods, set.Matched)
	}
	if serr != nil && ctx.Err() == nil {
		return out, serr
	}
	return out, nil
}
