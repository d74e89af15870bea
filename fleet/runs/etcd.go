package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// KindEtcdRecover is the record kind of an etcd recovery.
const KindEtcdRecover = "etcd-recover"

// EtcdRecoverOptions configure a recovery; there is nothing to choose
// yet: it compacts, defragments and disarms, in that order.
type EtcdRecoverOptions struct{}

// NewEtcdRecoverOptions are a recovery's defaults.
func NewEtcdRecoverOptions() EtcdRecoverOptions { return EtcdRecoverOptions{} }

// EtcdRecoverResult is a recovery's run and what it did.
type EtcdRecoverResult struct {
	Run
	fleet.EtcdRecovery
}

// Summary says what etcd had, what was done and the database's size
// before and after.
func (r EtcdRecoverResult) Summary() string {
	b, a := r.Before, r.After
	if len(b.Alarms) == 0 {
		return fmt.Sprintf("etcd has no alarm raised: nothing to do (database %s, %s in use, of its %s quota)", fleet.MiB(b.DBSize), fleet.MiB(b.DBSizeInUse), fleet.MiB(b.Quota))
	}
	s := fmt.Sprintf("etcd %s: database %s → %s of its %s quota in %.1fs", strings.Join(b.Alarms, ", "), fleet.MiB(b.DBSize), fleet.MiB(a.DBSize), fleet.MiB(a.Quota), r.Seconds)
	var did []string
	if r.CompactedTo > 0 {
		did = append(did, fmt.Sprintf("compacted to revision %d", r.CompactedTo))
	}
	if r.Defragmented {
		did = append(did, "defragmented")
	}
	if len(r.Disarmed) > 0 {
		did = append(did, "disarmed "+strings.Join(r.Disarmed, ", "))
	}
	if len(did) > 0 {
		s += " (" + strings.Join(did, ", ") + ")"
	}
	if len(a.Alarms) > 0 {
		s += "; still raised: " + strings.Join(a.Alarms, ", ")
	}
	return s
}

// Advice says what is left to do after the recovery, one line each.
func (r EtcdRecoverResult) Advice() []string {
	var out []string
	if r.StillFull {
		out = append(out, fmt.Sprintf("the live data alone (%s) nearly fills the %s quota: the alarm comes back at the next writes; delete objects (`ghostfleet unload` removes GhostFleet's workloads) and run `%s` again, or up a fleet with a larger etcd.quotaBackendBytes",
			fleet.MiB(r.After.DBSizeInUse), fleet.MiB(r.After.Quota), fleet.EtcdRecoverCommand))
	}
	for _, c := range r.Down {
		out = append(out, fmt.Sprintf("%s is not running (it may have exited while etcd refused its writes): `ghostfleet restart %s`", c, c))
	}
	return out
}

// EtcdRecover brings the fleet's etcd back from an alarm (see
// fleet.RecoverEtcd) and records the run; with no alarm raised it does
// nothing and records nothing. An interrupted recovery stops between
// etcd's steps, each safe to run again.
func EtcdRecover(ctx context.Context, env Env, _ EtcdRecoverOptions) (EtcdRecoverResult, error) {
	if env.Target.Attached() {
		return EtcdRecoverResult{}, fmt.Errorf("etcd recover works on GhostFleet's own fleet's etcd; an attached cluster's etcd is its operators' (etcdctl defrag, alarm disarm)")
	}
	s, err := recorder(env) // a recovery needs no cluster clients
	if err != nil {
		return EtcdRecoverResult{}, err
	}
	rec := record.Record{ID: NewID(KindEtcdRecover), Kind: KindEtcdRecover, Params: struct{}{}, Started: time.Now().UTC()}
	var done func()
	res, err := fleet.RecoverEtcd(ctx, env.Target.Name, func(step, message string) {
		if done != nil {
			done()
		}
		done = progress.Step(env.reporter().Report, step, message, 0)
	})
	if done != nil {
		done()
	}
	out := EtcdRecoverResult{EtcdRecovery: res}
	if res.Before.Revision == 0 && err != nil {
		return out, err // etcd did not answer: nothing was touched
	}
	if len(res.Before.Alarms) == 0 {
		out.Run = Run{Kind: KindEtcdRecover, Outcome: Completed}
		return out, err
	}
	rec.Outcome = record.Outcome(ctx, err)
	rec.Ended, rec.Result = time.Now().UTC(), res
	rec.Phases = []record.Phase{{Name: "etcd recover", Start: rec.Started, End: rec.Ended}}
	rec.Warnings = out.Advice()
	run, werr := s.write(rec)
	out.Run = run
	if out.Outcome == Interrupted {
		out.Left = fmt.Sprintf("stopped before it finished (done: compacted %t, defragmented %t, disarmed %v); `%s` again finishes it", res.CompactedTo > 0, res.Defragmented, res.Disarmed, fleet.EtcdRecoverCommand)
	}
	if werr != nil {
		return out, werr
	}
	return out, err
}
