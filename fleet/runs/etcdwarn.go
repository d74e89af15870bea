package runs

import (
	"fmt"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// etcdWarnings names etcd's NOSPACE alarm in a workload's record when
// its writes met it: without it the run reads as a pile of server errors
// or a slow scheduler, when etcd refused every write.
func etcdWarnings(result any) []string {
	n := requestErrors(result)[requests.ErrEtcdNoSpace]
	if n == 0 {
		return nil
	}
	return []string{NoSpaceWarning(n)}
}

// NoSpaceWarning is the warning for n writes etcd refused.
func NoSpaceWarning(n int) string {
	return fmt.Sprintf("etcd refused %d write%s with its NOSPACE alarm (mvcc: database space exceeded): the database reached its quota; `ghostfleet status` shows it, `%s` compacts, defragments and disarms it",
		n, plural(n), fleet.EtcdRecoverCommand)
}

// requestErrors are the error counts by kind a workload's result holds.
// A churn counts its own calls and the transport's; the larger count of
// each kind is taken, not their sum (they are the same requests).
func requestErrors(result any) map[string]int {
	switch r := result.(type) {
	case workload.LoadResult:
		return r.Requests.Errors
	case workload.BinpackResult:
		return r.Requests.Errors
	case workload.TrainResult:
		return r.Requests.Errors
	case workload.ChurnResult:
		if r.Requests != nil {
			return maxCounts(r.Errors, r.Requests.Errors)
		}
		return r.Errors
	}
	return nil
}

func maxCounts(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		out[k] = max(out[k], v)
	}
	for k, v := range b {
		out[k] = max(out[k], v)
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ExplainEtcd adds what to do to an error that is etcd's NOSPACE: a run
// that failed before it began (its namespace could not be created)
// otherwise ends on etcd's bare message.
func ExplainEtcd(err error) error {
	if err == nil || !requests.IsEtcdNoSpace(err.Error()) {
		return err
	}
	return fmt.Errorf("%w\netcd's NOSPACE alarm is raised and it refuses every write: delete what filled it, then `%s`", err, fleet.EtcdRecoverCommand)
}
