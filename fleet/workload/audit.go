package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// TeardownStages split the teardowns of whole-job restarts
// (TrainResult.Teardown) where the apiserver saw them, from its audit
// log: how long each took from the watch seeing a job's first worker lost
// (its break's start) to the watch seeing the last of its earlier workers
// stop is, for every split teardown, the sum of
//
//   - Notice: to the restarter's DELETE of the Job received by the
//     apiserver (its one-second poll and the request's way in);
//   - ToPodDeletes: to the first DELETE of one of those workers received
//     (the Job's foreground deletion and the reaction of whichever
//     controller deletes its pods, named in DeletedBy);
//   - PodDeletes: to the last of those DELETEs received;
//   - LastDelete: to that DELETE answered (the apiserver's time on it);
//   - Seen: to the watch seeing the last worker stop (below 0 when the
//     watch's event came before the DELETE's answer).
//
// Means add up as the stages do: Total.Mean is the sum of theirs.
type TeardownStages struct {
	// Split is how many teardowns were split, Unsplit how many were not:
	// the log lacks their Job's DELETE or a worker's (a policy that does
	// not select them; a worker that stopped otherwise, its node gone).
	Split   int `json:"split"`
	Unsplit int `json:"unsplit"`
	// Total is the split teardowns themselves.
	Total        Stage `json:"total"`
	Notice       Stage `json:"notice"`
	ToPodDeletes Stage `json:"toPodDeletes"`
	PodDeletes   Stage `json:"podDeletes"`
	LastDelete   Stage `json:"lastDelete"`
	Seen         Stage `json:"seen"`
	// DeletedBy counts the workers' first DELETEs by who sent them: the
	// controller-manager's controller (e.g. generic-garbage-collector,
	// job-controller), or else the client program.
	DeletedBy map[string]int `json:"deletedBy,omitempty"`
}

// Stage is how long a stage took, in seconds: its percentiles and mean.
type Stage struct {
	Percentiles
	Mean float64 `json:"mean"`
}

func summariseStage(samples []time.Duration) Stage {
	s := Stage{Percentiles: Summarise(samples)}
	if len(samples) > 0 {
		var sum time.Duration
		for _, d := range samples {
			sum += d
		}
		s.Mean = sum.Seconds() / float64(len(samples))
	}
	return s
}

// teardownSpan is one teardown to split: its job, when its first worker
// was lost and its last earlier one stopped, and the earlier workers that
// stopped meanwhile.
type teardownSpan struct {
	job            string
	from, lastStop time.Time
	stopped        []PodTimes
}

// auditKey names an object as an audit event's objectRef does.
type auditKey struct{ resource, namespace, name string }

// auditDelete is one DELETE the apiserver answered with success.
type auditDelete struct {
	received, answered time.Time
	by                 string
}

// auditRequest is one request the log holds: when it was received, and
// who asked what ("job-controller create pods").
type auditRequest struct {
	received time.Time
	what     string
}

// auditLog is what a run reads of an audit log: the successful DELETEs
// by object, and every request, in the log's order.
type auditLog struct {
	deletes  map[auditKey][]auditDelete
	requests []auditRequest
}

// readAuditLog reads the requests in the audit log at path received from
// since on, each once (at the stage that ends it).
func readAuditLog(path string, since time.Time) (auditLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return auditLog{}, err
	}
	defer f.Close()
	out := auditLog{deletes: map[auditKey][]auditDelete{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return auditLog{}, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		if (ev.Stage != auditv1.StageResponseComplete && ev.Stage != auditv1.StagePanic) || ev.RequestReceivedTimestamp.Time.Before(since) {
			continue
		}
		resource := ev.RequestURI
		if r := ev.ObjectRef; r != nil {
			resource = r.Resource
			if r.Subresource != "" {
				resource += "/" + r.Subresource
			}
		}
		by := clientName(ev.UserAgent)
		out.requests = append(out.requests, auditRequest{received: ev.RequestReceivedTimestamp.Time, what: by + " " + ev.Verb + " " + resource})
		ok := ev.Stage == auditv1.StageResponseComplete && (ev.ResponseStatus == nil || ev.ResponseStatus.Code < 300)
		if ev.Verb != "delete" || ev.ObjectRef == nil || ev.ObjectRef.Subresource != "" || !ok {
			continue
		}
		k := auditKey{ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}
		out.deletes[k] = append(out.deletes[k], auditDelete{received: ev.RequestReceivedTimestamp.Time, answered: ev.StageTimestamp.Time, by: by})
	}
	if err := sc.Err(); err != nil {
		return auditLog{}, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// countByPhase counts the requests received in each phase, by who asked
// what.
func (l auditLog) countByPhase(phases []record.Phase) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, ph := range phases {
		counts := map[string]int{}
		for _, r := range l.requests {
			if !r.received.Before(ph.Start) && r.received.Before(ph.End) {
				counts[r.what]++
			}
		}
		out[ph.Name] = counts
	}
	return out
}

// clientName is who a user agent names: the controller-manager's
// controller, which its clients append
// ("kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/job-controller"),
// or else the program.
func clientName(agent string) string {
	fields := strings.Fields(agent)
	if len(fields) == 0 {
		return "unknown"
	}
	if parts := strings.Split(fields[len(fields)-1], "/"); len(fields) > 1 && len(parts) == 3 && parts[0] == "kubernetes" {
		return parts[2]
	}
	program, _, _ := strings.Cut(fields[0], "/")
	return program
}

// firstDelete is the first of deletes received from since on.
func firstDelete(deletes []auditDelete, since time.Time) (auditDelete, bool) {
	var first auditDelete
	for _, d := range deletes {
		if !d.received.Before(since) && (first.received.IsZero() || d.received.Before(first.received)) {
			first = d
		}
	}
	return first, !first.received.IsZero()
}

// splitTeardowns splits each span by the DELETEs of its Job and its
// workers in namespace (see TeardownStages).
func splitTeardowns(spans []teardownSpan, namespace string, deletes map[auditKey][]auditDelete) *TeardownStages {
	st := &TeardownStages{DeletedBy: map[string]int{}}
	var total, notice, toPods, podDeletes, lastDelete, seen []time.Duration
	for _, s := range spans {
		job, ok := firstDelete(deletes[auditKey{"jobs", namespace, s.job}], s.from)
		if !ok || len(s.stopped) == 0 {
			st.Unsplit++
			continue
		}
		var first, last auditDelete
		by := map[string]int{}
		for _, p := range s.stopped {
			d, found := firstDelete(deletes[auditKey{"pods", namespace, p.Name}], s.from)
			if !found {
				ok = false
				break
			}
			by[d.by]++
			if first.received.IsZero() || d.received.Before(first.received) {
				first = d
			}
			if d.received.After(last.received) {
				last = d
			}
		}
		if !ok {
			st.Unsplit++
			continue
		}
		st.Split++
		for k, n := range by {
			st.DeletedBy[k] += n
		}
		total = append(total, s.lastStop.Sub(s.from))
		notice = append(notice, job.received.Sub(s.from))
		toPods = append(toPods, first.received.Sub(job.received))
		podDeletes = append(podDeletes, last.received.Sub(first.received))
		lastDelete = append(lastDelete, last.answered.Sub(last.received))
		seen = append(seen, s.lastStop.Sub(last.answered))
	}
	st.Total, st.Notice, st.ToPodDeletes = summariseStage(total), summariseStage(notice), summariseStage(toPods)
	st.PodDeletes, st.LastDelete, st.Seen = summariseStage(podDeletes), summariseStage(lastDelete), summariseStage(seen)
	return st
}

// recordAudit reads the audit log at path from the run's start: the
// requests of each phase by who asked what, and the teardowns split.
func recordAudit(res *TrainResult, path, namespace string, spans []teardownSpan, phases []record.Phase) error {
	if len(phases) == 0 {
		return nil
	}
	l, err := readAuditLog(path, phases[0].Start)
	if err != nil {
		return err
	}
	res.AuditedRequests = l.countByPhase(phases)
	if len(spans) > 0 {
		res.TeardownStages = splitTeardowns(spans, namespace, l.deletes)
	}
	return nil
}
