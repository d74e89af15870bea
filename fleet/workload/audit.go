package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// TeardownStages split the teardowns of whole-job restarts
// (TrainResult.Teardown) where the apiserver saw them, from its audit
// log. A teardown runs from the watch seeing a job's first worker lost
// (its break's start) to the watch seeing the last of its earlier workers
// stop; for every split one it is the sum of
//
//   - Notice: to the restarter's DELETE of the Job received by the
//     apiserver (its one-second poll and the request's way in);
//   - ToPodDeletes: to the first DELETE of one of the workers received
//     (the Job's foreground deletion and the reaction of whichever
//     controller deletes its pods, named in DeletedBy);
//   - PodDeletes: to the DELETE of the worker the watch saw stop last
//     received;
//   - LastDelete: to that DELETE answered (the apiserver's time on it);
//   - Seen: to the watch seeing that worker stop (below 0 when the
//     watch's event came before the DELETE's answer).
//
// ToPodDeletes is itself the sum of JobAnswered, to the Job's DELETE
// answered; ToDeleter, to the deleter's first request about the job
// received (see firstDeleterRequest; below 0 when it came before the
// Job's DELETE was answered); and DeleterWork, to that first worker's
// DELETE received.
//
// Means add up as the stages do: Total.Mean is the sum of theirs. The
// stages are absent when no teardown was split.
type TeardownStages struct {
	// Split is how many teardowns were split, Unsplit how many were not:
	// the log lacks the restarter's DELETE of their Job within the
	// teardown (from its first worker lost to its last stopped), or the
	// last worker to stop was not stopped by a DELETE (one received after
	// the Job's, before the watch saw it stop).
	Split   int `json:"split"`
	Unsplit int `json:"unsplit"`
	// StoppedOtherwise are workers of split teardowns that stopped before
	// any DELETE of them was received after their Job's (a fault failed
	// them too, their node went down): left out of the stages.
	StoppedOtherwise int `json:"stoppedOtherwise"`
	// Total is the split teardowns themselves.
	Total        *Stage `json:"total,omitempty"`
	Notice       *Stage `json:"notice,omitempty"`
	ToPodDeletes *Stage `json:"toPodDeletes,omitempty"`
	PodDeletes   *Stage `json:"podDeletes,omitempty"`
	LastDelete   *Stage `json:"lastDelete,omitempty"`
	Seen         *Stage `json:"seen,omitempty"`
	JobAnswered  *Stage `json:"jobAnswered,omitempty"`
	ToDeleter    *Stage `json:"toDeleter,omitempty"`
	DeleterWork  *Stage `json:"deleterWork,omitempty"`
	// DeletedBy counts the DELETEs that stopped the workers of split
	// teardowns by who sent them (see clientName); DeleterFirst counts
	// the deleter's first requests (ToDeleter's end) by verb and resource,
	// or as noneBefore.
	DeletedBy    map[string]int `json:"deletedBy,omitempty"`
	DeleterFirst map[string]int `json:"deleterFirst,omitempty"`
}

// Stage is how long a stage took, in seconds: its percentiles and mean.
type Stage struct {
	Percentiles
	Mean float64 `json:"mean"`
}

// summariseStage is samples' stage; nil when there are none.
func summariseStage(samples []time.Duration) *Stage {
	if len(samples) == 0 {
		return nil
	}
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return &Stage{Percentiles: Summarise(samples), Mean: sum.Seconds() / float64(len(samples))}
}

// teardownSpan is one teardown to split: its job, when its first worker
// was lost and its last earlier one stopped, the earlier workers that
// stopped meanwhile, and all the job's pods the watch saw.
type teardownSpan struct {
	job            string
	from, lastStop time.Time
	stopped, pods  []PodTimes
}

// auditKey names an object as an audit event's objectRef does.
type auditKey struct{ resource, namespace, name string }

// auditRequest is one request for an object: when the apiserver received
// and answered it, who sent it, its verb, and whether it succeeded.
type auditRequest struct {
	received, answered time.Time
	by, verb           string
	ok                 bool
}

// auditLog is what a run reads of an audit log: the requests for the
// run's pods and Jobs (not their subresources, but for pods' bindings,
// keyed as resource "pods/binding"), by object, in the log's order; the
// requests of each phase in the whole fleet counted by who asked what
// ("job-controller create pods"), their times, and the failed ones by
// who asked what and the answer ("kwok-controller patch pods/status
// 409"); every pod's status writes in the phases, by who sent them; the
// watches opened and ended in each phase, when the log holds watches;
// and how many lines were not events.
type auditLog struct {
	requests     map[auditKey][]auditRequest
	counts       map[string]map[string]int
	times        map[string]map[string]AuditedTimes
	failures     map[string]map[string]int
	statusWrites map[statusWriter][]statusWrite
	// podWrites are every write to a pod or its status or binding, in
	// the phases or not, by pod.
	podWrites map[podRef][]podWrite
	// watches are the phases' watches by who watched what, and how long
	// each that ended early had lived (see AuditedWatches); started, the
	// watches that started and have not ended yet, by audit ID.
	watches    map[string]map[string]*AuditedWatches
	earlyLived map[phaseKey][]time.Duration
	started    map[types.UID]bool
	// opened are each client's watches of each resource that started
	// ("kwok-controller pods"), in the phases or not.
	opened  map[string][]watchOpen
	skipped int
	// scheduler is when the apiserver received each request of the
	// scheduler's own client (schedulerClient), in or out of the phases.
	scheduler []time.Time
}

// AuditedTimes is the apiserver's time on one client's requests of one
// verb and resource in a phase, from the audit log: Seconds, from each
// received to answered, summed (a mean is Seconds over the phase's
// count in TrainResult.AuditedRequests). Requests over half a second
// the apiserver annotates with its layers' times
// (apiserver.latency.k8s.io/*, k8s.io/apiserver's filters/audit.go):
// Slow of them, their SlowSeconds, and of those their time in etcd and
// in API Priority and Fairness's queues (SlowEtcdSeconds,
// SlowAPFSeconds: the wall time of its calls to etcd, retries
// included; its wait in a queue, 0 for exempt clients), and the other
// layers annotated, by layer (SlowOtherSeconds: "response-write",
// "authentication", …). A slow request the apiserver tracked no layer
// of is not counted as slow. Failed requests count with the rest.
type AuditedTimes struct {
	Seconds         float64 `json:"seconds"`
	Slow            int     `json:"slow"`
	SlowSeconds     float64 `json:"slowSeconds"`
	SlowEtcdSeconds float64 `json:"slowEtcdSeconds"`
	SlowAPFSeconds  float64 `json:"slowApfSeconds"`
	// The other layers' times of the slow requests, by the annotation's
	// name less latencyAnnotationPrefix.
	SlowOtherSeconds map[string]float64 `json:"slowOtherSeconds,omitempty"`
}

// The audit annotations of a slow request's layers, among them its time
// in etcd and in APF's queues, and of its whole time (set only when a
// layer is).
const (
	latencyAnnotationPrefix = "apiserver.latency.k8s.io/"
	etcdLatencyAnnotation   = latencyAnnotationPrefix + "etcd"
	apfLatencyAnnotation    = latencyAnnotationPrefix + "apf-queue-wait"
	totalLatencyAnnotation  = latencyAnnotationPrefix + "total"
)

// add counts one request's time: from received to answered, and the
// layers' times it was annotated with, if any.
func (t *AuditedTimes) add(received, answered time.Time, annotations map[string]string) {
	t.Seconds += answered.Sub(received).Seconds()
	if _, ok := annotations[totalLatencyAnnotation]; !ok {
		return
	}
	t.Slow++
	t.SlowSeconds += answered.Sub(received).Seconds()
	t.SlowEtcdSeconds += annotatedSeconds(annotations, etcdLatencyAnnotation)
	t.SlowAPFSeconds += annotatedSeconds(annotations, apfLatencyAnnotation)
	for key := range annotations {
		layer, ok := strings.CutPrefix(key, latencyAnnotationPrefix)
		if !ok || key == etcdLatencyAnnotation || key == apfLatencyAnnotation || key == totalLatencyAnnotation {
			continue
		}
		if t.SlowOtherSeconds == nil {
			t.SlowOtherSeconds = map[string]float64{}
		}
		t.SlowOtherSeconds[layer] += annotatedSeconds(annotations, key)
	}
}

// annotatedSeconds is the duration an annotation holds ("12.3ms"), in
// seconds; 0 when absent (a layer the request did not reach) or not a
// duration.
func annotatedSeconds(annotations map[string]string, key string) float64 {
	d, err := time.ParseDuration(annotations[key])
	if err != nil {
		return 0
	}
	return d.Seconds()
}

// AuditedWatches are one client's watches of one resource in a phase,
// from the audit log, when the fleet's audit policy logs watches (the
// built-in policies do not; see the profile of F's thirty-seventh
// sitting): Opened, received in the phase and started (a watch is
// logged as its response starts); Ended, whose response ended in the
// phase, whenever it was opened; and of those EndedEarly, more than a
// second before the timeout its request asked for (timeoutSeconds):
// closed by the apiserver (apiserver_terminated_watchers_total counts
// those it closed because their client fell behind) or by the client,
// EarlyLived, how long those had lived, in seconds, and
// EarlyWithinSecond, how many of them within a second of being opened
// (as does a watch from a resource version too old: the apiserver's
// cache answers it 200, with a 410 Gone error event in it). A watch
// refused before it started (its response's code 300 or more) is an
// ordinary request, in AuditedRequests, AuditedTimes and
// AuditedFailures; a watch that started is in none of those: its time
// is its life.
type AuditedWatches struct {
	Opened            int          `json:"opened"`
	FromCurrentState  int          `json:"fromCurrentState"`
	Ended             int          `json:"ended"`
	EndedEarly        int          `json:"endedEarly"`
	EarlyWithinSecond int          `json:"earlyWithinSecond"`
	EarlyLived        *Percentiles `json:"earlyLived,omitempty"`
}

// phaseKey is a key of a phase's counts ("kwok-controller pods").
type phaseKey struct{ phase, key string }

// watchOpen is a watch that started: when the apiserver received it,
// what it asked for (see watchStart): the changes after resource version
// from, or the current state first (current), and when its response
// started (see resendRule).
type watchOpen struct {
	at      time.Time
	from    uint64
	current bool
	started time.Time
}

// watchEvent counts a watch's start, or its end, by key (see
// AuditedWatches), and reports whether it did: a watch refused before
// it started is an ordinary request, left to the caller. Its start and
// end are paired by audit ID; an end whose start the log does not hold
// (a watch opened before the run) ended a watch that started if it is
// ResponseComplete with a code below 300 (a Panic of such a watch is an
// ordinary failed request).
func (l *auditLog) watchEvent(ev auditv1.Event, key string, phases []record.Phase) bool {
	refused := ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300
	switch {
	case ev.Stage == auditv1.StageResponseStarted && refused: // counted as it completes
		return true
	case ev.Stage == auditv1.StageResponseStarted:
		l.started[ev.AuditID] = true
		from, current := watchStart(ev.RequestURI)
		l.opened[key] = append(l.opened[key], watchOpen{ev.RequestReceivedTimestamp.Time, from, current, ev.StageTimestamp.Time})
		if phase := phaseAt(phases, ev.RequestReceivedTimestamp.Time); phase >= 0 {
			w := l.watchesOf(phases[phase].Name, key)
			w.Opened++
			if current {
				w.FromCurrentState++
			}
		}
		return true
	case l.started[ev.AuditID] || ev.Stage == auditv1.StageResponseComplete && !refused:
		delete(l.started, ev.AuditID)
		l.watchEnded(ev, key, phases)
		return true
	}
	return false
}

// watchesOf is the phase's watches by key, made when first asked for.
func (l *auditLog) watchesOf(phase, key string) *AuditedWatches {
	m := inner(l.watches, phase)
	if m[key] == nil {
		m[key] = &AuditedWatches{}
	}
	return m[key]
}

// watchEnded counts a watch that ran and ended, by key, in the phase
// its response ended in, if any.
func (l *auditLog) watchEnded(ev auditv1.Event, key string, phases []record.Phase) {
	ended := ev.StageTimestamp.Time
	phase := phaseAt(phases, ended)
	if phase < 0 {
		return
	}
	k := phaseKey{phases[phase].Name, key}
	w := l.watchesOf(k.phase, key)
	w.Ended++
	lived := ended.Sub(ev.RequestReceivedTimestamp.Time)
	if timeout, ok := watchTimeout(ev.RequestURI); ok && lived < timeout-time.Second {
		w.EndedEarly++
		if lived < time.Second {
			w.EarlyWithinSecond++
		}
		l.earlyLived[k] = append(l.earlyLived[k], lived)
	}
}

// inner is m[k], made when missing.
func inner[K, K2 comparable, V any](m map[K]map[K2]V, k K) map[K2]V {
	if m[k] == nil {
		m[k] = map[K2]V{}
	}
	return m[k]
}

// watchTimeout is the timeout a watch's request asked for, from its
// timeoutSeconds; false when it asked none.
func watchTimeout(requestURI string) (time.Duration, bool) {
	seconds, err := strconv.Atoi(queryParam(requestURI, "timeoutSeconds"))
	if err != nil || seconds <= 0 {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

// watchStart is what a watch's request asked for: the changes after a
// resource version (from, as a number; see boundVersions), or the
// current state first (current): every object as it is as the watch
// starts, then the changes, as a watch asking no resourceVersion, or
// "0", or sendInitialEvents does. from is 0 when it is neither.
func watchStart(requestURI string) (from uint64, current bool) {
	rv := queryParam(requestURI, "resourceVersion")
	if rv == "" || rv == "0" || queryParam(requestURI, "sendInitialEvents") == "true" {
		return 0, true
	}
	from, _ = strconv.ParseUint(rv, 10, 64)
	return from, false
}

// queryParam is the request URI's query parameter name; empty when it
// has none or the URI does not parse.
func queryParam(requestURI, name string) string {
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get(name)
}

// auditLogSize is how far the audit log at path reaches now: a run reads
// it from there, as every request received later is written after it (an
// event is written once its request is answered). 0 when it cannot tell.
func auditLogSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readAuditLog reads the requests in the audit log at path, from offset
// on, each once (at the stage that ends it): those received in phases,
// counted, timed and, if they failed, counted by their answer; those for
// pods and Jobs in namespace by object too, every pod's status writes by
// client, and every write to a pod in the phases or not; the
// scheduler's own client's, in phases or not, by when received, but for
// its watches, which draw no token (client-go draws one only for a
// watch it retries, which the replay leaves out). A watch that started
// is counted in AuditedWatches as it starts and as it ends (watchEvent).
// A line that is not an event (a write cut short) is skipped and
// counted; a last line without its newline is one the apiserver is
// still writing, and is left out.
func readAuditLog(path string, offset int64, namespace string, phases []record.Phase) (auditLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return auditLog{}, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return auditLog{}, fmt.Errorf("%s: %w", path, err)
	}
	out := auditLog{requests: map[auditKey][]auditRequest{}, counts: map[string]map[string]int{}, times: map[string]map[string]AuditedTimes{}, failures: map[string]map[string]int{},
		statusWrites: map[statusWriter][]statusWrite{}, podWrites: map[podRef][]podWrite{},
		watches: map[string]map[string]*AuditedWatches{}, earlyLived: map[phaseKey][]time.Duration{}, started: map[types.UID]bool{}, opened: map[string][]watchOpen{}}
	for _, ph := range phases {
		out.counts[ph.Name] = map[string]int{}
		out.times[ph.Name] = map[string]AuditedTimes{}
		out.failures[ph.Name] = map[string]int{}
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		text, err := r.ReadBytes('\n')
		if err == io.EOF {
			for k, lived := range out.earlyLived {
				out.watches[k.phase][k.key].EarlyLived = new(Summarise(lived))
			}
			return out, nil
		}
		if err != nil {
			return auditLog{}, fmt.Errorf("%s: %w", path, err)
		}
		var ev auditv1.Event
		if err := json.Unmarshal(text, &ev); err != nil {
			out.skipped++
			continue
		}
		received := ev.RequestReceivedTimestamp.Time
		watch := ev.Verb == "watch"
		switch ev.Stage {
		case auditv1.StageResponseComplete, auditv1.StagePanic:
		case auditv1.StageResponseStarted:
			if !watch {
				continue
			}
		default:
			continue
		}
		resource, _, _ := strings.Cut(ev.RequestURI, "?")
		if o := ev.ObjectRef; o != nil {
			resource = o.Resource
			if o.Subresource != "" {
				resource += "/" + o.Subresource
			}
		}
		by := clientName(ev.UserAgent)
		key := by + " " + ev.Verb + " " + resource
		ok := ev.Stage == auditv1.StageResponseComplete && (ev.ResponseStatus == nil || ev.ResponseStatus.Code < 300)
		if by == schedulerClient && !watch {
			out.scheduler = append(out.scheduler, received)
		}
		if watch && out.watchEvent(ev, by+" "+resource, phases) {
			continue
		}
		if o := ev.ObjectRef; o != nil && isPodWrite(ev.Verb, resource) {
			p := podRef{o.Namespace, o.Name}
			out.podWrites[p] = append(out.podWrites[p], podWrite{received, by, ev.Verb + " " + resource, ok})
		}
		phase := phaseAt(phases, received)
		if phase < 0 {
			continue
		}
		name := phases[phase].Name
		out.counts[name][key]++
		t := out.times[name][key]
		t.add(received, ev.StageTimestamp.Time, ev.Annotations)
		out.times[name][key] = t
		if !ok {
			out.failures[name][key+" "+answer(ev)]++
		}
		if o := ev.ObjectRef; o != nil && resource == statusResource && (ev.Verb == "patch" || ev.Verb == "update") {
			w := statusWriter{by, o.Namespace, o.Name}
			out.statusWrites[w] = append(out.statusWrites[w], statusWrite{received, ok})
		}
		if o := ev.ObjectRef; o == nil || o.Namespace != namespace || resource != "pods" && resource != "jobs" && resource != bindingResource {
			continue
		}
		k := auditKey{resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}
		out.requests[k] = append(out.requests[k], auditRequest{received: received, answered: ev.StageTimestamp.Time, by: by, verb: ev.Verb, ok: ok})
	}
}

// answer is how the apiserver answered a failed request: its code
// ("409"), or "panic" for a handler that panicked.
func answer(ev auditv1.Event) string {
	if ev.Stage == auditv1.StagePanic || ev.ResponseStatus == nil {
		return "panic"
	}
	return strconv.Itoa(int(ev.ResponseStatus.Code))
}

// clientName is who a user agent names: the name a client appends to its
// program's ("kube-controller-manager/v1.36.3 (linux/amd64)
// kubernetes/abc/job-controller": the controller-manager's controllers
// do, kube-scheduler's client is "scheduler"), or else the program.
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

// lastRequest is the last of requests received no later than to that
// keep accepts.
func lastRequest(requests []auditRequest, to time.Time, keep func(auditRequest) bool) (auditRequest, bool) {
	var last auditRequest
	for _, r := range requests {
		if !r.received.After(to) && keep(r) && r.received.After(last.received) {
			last = r
		}
	}
	return last, !last.received.IsZero()
}

// firstRequest is the first of requests received within [from, to] that
// keep accepts.
func firstRequest(requests []auditRequest, from, to time.Time, keep func(auditRequest) bool) (auditRequest, bool) {
	var first auditRequest
	for _, r := range requests {
		if !r.received.Before(from) && !r.received.After(to) && keep(r) && (first.received.IsZero() || r.received.Before(first.received)) {
			first = r
		}
	}
	return first, !first.received.IsZero()
}

// deleted accepts a successful DELETE.
func deleted(r auditRequest) bool { return r.verb == "delete" && r.ok }

// splitTeardowns splits each span by the DELETEs of its Job and its
// workers in namespace (see TeardownStages). A worker was stopped by the
// first DELETE of it received after the Job's and before the watch saw it
// stop: the garbage collector deletes a Job's pods that had stopped
// already too, and kwok deletes each pod again once it is marked.
func splitTeardowns(spans []teardownSpan, namespace string, requests map[auditKey][]auditRequest) *TeardownStages {
	st := &TeardownStages{DeletedBy: map[string]int{}, DeleterFirst: map[string]int{}}
	var total, notice, toPods, jobAnswered, toDeleter, deleterWork, podDeletes, lastDelete, seen []time.Duration
	for _, s := range spans {
		job, ok := firstRequest(requests[auditKey{"jobs", namespace, s.job}], s.from, s.lastStop, deleted)
		if !ok {
			st.Unsplit++
			continue
		}
		var first, last auditRequest
		otherwise := 0
		by := map[string]int{}
		for _, p := range s.stopped {
			d, found := firstRequest(requests[auditKey{"pods", namespace, p.Name}], job.received, p.Ended, deleted)
			if !found {
				otherwise++
				continue
			}
			by[d.by]++
			if first.received.IsZero() || d.received.Before(first.received) {
				first = d
			}
			if p.Ended.Equal(s.lastStop) && (last.received.IsZero() || d.received.After(last.received)) {
				last = d
			}
		}
		if last.received.IsZero() { // the last to stop was not stopped by a DELETE
			st.Unsplit++
			continue
		}
		st.Split++
		st.StoppedOtherwise += otherwise
		for k, n := range by {
			st.DeletedBy[k] += n
		}
		deleter, what := firstDeleterRequest(s, namespace, requests, job, first)
		st.DeleterFirst[what]++
		total = append(total, s.lastStop.Sub(s.from))
		notice = append(notice, job.received.Sub(s.from))
		toPods = append(toPods, first.received.Sub(job.received))
		jobAnswered = append(jobAnswered, job.answered.Sub(job.received))
		toDeleter = append(toDeleter, deleter.received.Sub(job.answered))
		deleterWork = append(deleterWork, first.received.Sub(deleter.received))
		podDeletes = append(podDeletes, last.received.Sub(first.received))
		lastDelete = append(lastDelete, last.answered.Sub(last.received))
		seen = append(seen, s.lastStop.Sub(last.answered))
	}
	st.Total, st.Notice, st.ToPodDeletes = summariseStage(total), summariseStage(notice), summariseStage(toPods)
	st.JobAnswered, st.ToDeleter, st.DeleterWork = summariseStage(jobAnswered), summariseStage(toDeleter), summariseStage(deleterWork)
	st.PodDeletes, st.LastDelete, st.Seen = summariseStage(podDeletes), summariseStage(lastDelete), summariseStage(seen)
	return st
}

// noneBefore is what the deleter's first request was when it sent nothing
// about the job before the first worker's DELETE.
const noneBefore = "none before that DELETE"

// firstDeleterRequest is the deleter's first request about the job: from
// the client that sent the first worker's DELETE (first), about span's
// Job or one of the job's pods still there at the break (not an earlier
// run's), received after the Job's DELETE and before first; and what it
// was ("get pods"). Failed ones count (a GET answered 404 is the deleter
// at work too); subresources are not looked up (a status is not in
// requests, a binding is under its own key). With nothing before it,
// it is first itself, and noneBefore.
func firstDeleterRequest(s teardownSpan, namespace string, requests map[auditKey][]auditRequest, job, first auditRequest) (auditRequest, string) {
	out, what := first, noneBefore
	keep := func(r auditRequest) bool { return r.by == first.by && r.received.After(job.received) }
	consider := func(resource, name string) {
		if r, ok := firstRequest(requests[auditKey{resource, namespace, name}], job.received, first.received, keep); ok && r.received.Before(out.received) {
			out, what = r, r.verb+" "+resource
		}
	}
	consider("jobs", s.job)
	for _, p := range s.pods {
		if p.Ended.IsZero() || !p.Ended.Before(s.from) {
			consider("pods", p.Name)
		}
	}
	return out, what
}

// auditSpans are what a run's accounting hands the audit log to split:
// the teardowns of whole-job restarts and the admitted jobs' binds; and
// the resource version the run's watch saw each pod bound at (see
// boundVersions), and when it first saw each running (see runningSeen),
// by name.
type auditSpans struct {
	teardowns     []teardownSpan
	binds         []bindSpan
	boundVersions map[string]uint64
	runningSeen   map[string]time.Time
}

// runningSeen is when the run's watch first saw each pod running (or
// succeeded), by name; a pod it never saw so is left out.
func runningSeen(pods []PodTimes) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range pods {
		if !p.Running.IsZero() {
			out[p.Name] = p.Running
		}
	}
	return out
}

// boundVersions are the pods' BoundVersions by name, as numbers
// (docs/measurements.md says why they compare); a pod without one, or
// with one that is not a number, is left out.
func boundVersions(pods []PodTimes) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range pods {
		if v, err := strconv.ParseUint(p.BoundVersion, 10, 64); err == nil {
			out[p.Name] = v
		}
	}
	return out
}

// bindSpan is one admitted job's AdmissionResult.PodsBound: from the
// watch having seen its pods (those that ran it whole) all created to it
// having seen them all bound, the job's name and the pods'.
type bindSpan struct {
	job         string
	seen, bound time.Time
	pods        []string
}

// bindingResource keys pods' bindings among an auditLog's requests;
// statusResource is a pod's status, as an audit event names it.
const (
	bindingResource = "pods/binding"
	statusResource  = "pods/status"
)

// recordAudit reads the audit log at path, from offset, over the run's
// phases: the requests of each phase by who asked what, their times and
// the failed ones by answer, the watches, the pods by their status
// writes, the rewrites' gaps and the others' writes before each pod's
// first, the scheduler's client's tokens drawn (given its limits), the
// teardowns split and, for an admitted run, its jobs' binds. It returns
// how many lines were not events.
func recordAudit(res *TrainResult, path string, offset int64, namespace string, spans auditSpans, phases []record.Phase, scheduler TokenBucket) (skipped int, err error) {
	l, err := readAuditLog(path, offset, namespace, phases)
	if err != nil {
		return 0, err
	}
	res.AuditedRequests, res.AuditedTimes, res.AuditedFailures = l.counts, l.times, l.failures
	res.AuditedWatches = nilIfEmpty(l.watches)
	res.PodStatusWrites, res.StatusRewrites = podsByWrites(l.statusWrites), rewrites(l.statusWrites, l.podWrites, l.opened, byPod(namespace, spans.boundVersions), byPod(namespace, spans.runningSeen))
	res.WritesBeforeFirst = writesBefore(l.statusWrites, l.podWrites, l.opened, byPod(namespace, spans.runningSeen))
	if scheduler.QPS > 0 && scheduler.Burst > 0 {
		res.SchedulerTokens = drawTokens(l.scheduler, scheduler, phases)
	}
	if len(spans.teardowns) > 0 {
		res.TeardownStages = splitTeardowns(spans.teardowns, namespace, l.requests)
	}
	if a := res.Admission; a != nil && len(spans.binds) > 0 {
		splitBinds(a, spans.binds, namespace, l.requests)
	}
	return l.skipped, nil
}

// splitBinds splits each admitted job's PodsBound at its pods' bindings
// (see AdmissionResult.ToFirstBind): a pod's is the last successful
// binding of it received before the watch saw the job's pods all bound
// (a binding is only ever created; one for an earlier pod of the same
// name would name that pod's UID and be refused). A job one of whose
// pods has none is counted in BindsUnsplit.
func splitBinds(a *AdmissionResult, spans []bindSpan, namespace string, requests map[auditKey][]auditRequest) {
	var toFirst, binds, seen []time.Duration
	ok := func(r auditRequest) bool { return r.ok }
	for _, s := range spans {
		var first, lastIn, last time.Time
		var served time.Duration
		split := true
		for _, name := range s.pods {
			bind, found := lastRequest(requests[auditKey{bindingResource, namespace, name}], s.bound, ok)
			if !found {
				split = false
				break
			}
			if first.IsZero() || bind.received.Before(first) {
				first = bind.received
			}
			lastIn, last = maxTime(lastIn, bind.received), maxTime(last, bind.answered)
			served = max(served, bind.answered.Sub(bind.received))
		}
		if !split || len(s.pods) == 0 {
			a.BindsUnsplit++
			continue
		}
		parts := [3]time.Duration{first.Sub(s.seen), last.Sub(first), s.bound.Sub(last)}
		toFirst, binds, seen = append(toFirst, parts[0]), append(binds, parts[1]), append(seen, parts[2])
		if i := slices.IndexFunc(a.Jobs, func(j AdmittedJob) bool { return j.Job == s.job }); i >= 0 {
			a.Jobs[i].BindSplit = &JobBinds{ToFirstBind: parts[0].Seconds(), Binds: parts[1].Seconds(), BindsSeen: parts[2].Seconds(),
				Sent: lastIn.Sub(first).Seconds(), ServedMax: served.Seconds()}
		}
	}
	if len(toFirst) > 0 {
		a.ToFirstBind, a.Binds, a.BindsSeen = new(Summarise(toFirst)), new(Summarise(binds)), new(Summarise(seen))
	}
}

// statusWriter is one client's status writes to one pod; statusWrite
// is one of them: when the apiserver received it, and whether it
// succeeded.
type (
	statusWriter struct{ by, namespace, pod string }
	statusWrite  struct {
		received time.Time
		ok       bool
	}
)

// podsByWrites counts the pods by how many status writes each client
// sent for each: by client, namespace, then the count (see
// TrainResult.PodStatusWrites); nil when there are none.
func podsByWrites(writes map[statusWriter][]statusWrite) map[string]map[string]map[string]int {
	out := map[string]map[string]map[string]int{}
	for w, sent := range writes {
		inner(inner(out, w.by), w.namespace)[strconv.Itoa(len(sent))]++
	}
	return nilIfEmpty(out)
}

// nilIfEmpty is m, or nil when it is empty, for a record field that is
// left out when there is nothing in it.
func nilIfEmpty[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// StatusRewrites are one client's status writes to pods of one namespace
// that it had written to before in the phases: Gap, from each such
// write's previous one to the same pod to it, both as the apiserver
// received them (seconds), and the shortest (MinGap); and, of the pods
// written more than once, how many first writes failed (FailedFirst)
// and how many later ones (FailedLater). AfterWatchOpened counts the
// later writes received after the client opened a watch of pods since
// the write before: a watch opened again from a resource version is
// sent the changes since (one asking for initial events, every object).
// AfterWatchSinceBinding counts those received after the client opened
// a watch of pods since the pod's last successful binding before them
// (none when the log holds no such binding): a later write with none
// cannot have come of the binding's copy sent again by a watch opened
// again. Both are 0 when the audit policy logs no pod watch. A watch
// opened at the very instant of the binding or of either write does not
// count. SinceWatchOpened is, over every later write, the time from the
// client's last pod watch opened before it (those with one in the log),
// and FirstSinceWatchOpened the same over the same pods' first writes:
// a client that plays each copy as soon as it takes it (kwok's pod-ready
// stage has no delay) would write copies sent again by a watch opened
// again soon after the watch opened, and first plays need not. Each is
// absent when no such write had a watch before it in the log.
type StatusRewrites struct {
	Gap                    Percentiles  `json:"gap"`
	MinGap                 float64      `json:"minGap"`
	FailedFirst            int          `json:"failedFirst"`
	FailedLater            int          `json:"failedLater"`
	AfterWatchOpened       int          `json:"afterWatchOpened"`
	AfterWatchSinceBinding int          `json:"afterWatchSinceBinding"`
	SinceWatchOpened       *Percentiles `json:"sinceWatchOpened,omitempty"`
	FirstSinceWatchOpened  *Percentiles `json:"firstSinceWatchOpened,omitempty"`
	// A watch sends a pod's copy from its binding in two ways (see
	// watchStart): asking for the changes after a resource version before
	// the binding's, or asking for the current state while the pod is as
	// its binding left it. BindingVersionSeen counts the later writes
	// whose pod's binding the log holds and the run's own watch saw
	// bound, at a resource version (BoundVersion), and
	// AfterWatchFromBeforeBinding those of them received after the client
	// opened a watch of pods, since the binding, asking for the changes
	// after a version before that one. AfterCurrentStateWatch counts the
	// later writes received after the client opened a watch of pods
	// asking for the current state, after the pod's binding and before
	// the next successful write to the pod; AfterCurrentStateWatchStarted
	// and AfterCurrentStateWatchBeforeRunningSeen count them by the wider
	// rules of resendRule. docs/measurements.md says what they show.
	BindingVersionSeen                      int `json:"bindingVersionSeen"`
	AfterWatchFromBeforeBinding             int `json:"afterWatchFromBeforeBinding"`
	AfterCurrentStateWatch                  int `json:"afterCurrentStateWatch"`
	AfterCurrentStateWatchStarted           int `json:"afterCurrentStateWatchStarted"`
	AfterCurrentStateWatchBeforeRunningSeen int `json:"afterCurrentStateWatchBeforeRunningSeen"`
}

// byReceived orders status writes as the apiserver received them.
func byReceived(a, b statusWrite) int { return a.received.Compare(b.received) }

// rewrites are the StatusRewrites of every client and namespace with a
// pod written to more than once, by client then namespace, given every
// write to each pod (for its bindings and next writes), each client's
// watches that started (opened, by "client resource"), the resource
// versions pods were seen bound at (bound) and when they were first seen
// running (running); nil when there are none.
func rewrites(writes map[statusWriter][]statusWrite, pods map[podRef][]podWrite, opened map[string][]watchOpen, bound map[podRef]uint64, running map[podRef]time.Time) map[string]map[string]*StatusRewrites {
	type group struct{ by, namespace string }
	gaps := map[group][]time.Duration{}
	failed := map[group][2]int{}
	afterWatch, sinceBinding := map[group]int{}, map[group]int{}
	versionKnown, fromBefore := map[group]int{}, map[group]int{}
	var resent [numResendRules]map[group]int // by resendRule
	for r := range resent {
		resent[r] = map[group]int{}
	}
	firstSinceWatch, laterSinceWatch := map[group][]time.Duration{}, map[group][]time.Duration{}
	for w, sent := range writes {
		if len(sent) < 2 {
			continue
		}
		g := group{w.by, w.namespace}
		sent = slices.Clone(sent)
		slices.SortFunc(sent, byReceived)
		f := failed[g]
		ref := podRef{w.namespace, w.pod}
		watches, pod := opened[w.by+" pods"], pods[ref]
		version, versionSeen := bound[ref]
		for i, s := range sent {
			// The client's last pod watch opened before this write.
			watched := lastBefore(watches, s.received)
			if i == 0 && !watched.IsZero() {
				firstSinceWatch[g] = append(firstSinceWatch[g], s.received.Sub(watched))
			}
			if i > 0 {
				gaps[g] = append(gaps[g], s.received.Sub(sent[i-1].received))
				if !watched.IsZero() {
					laterSinceWatch[g] = append(laterSinceWatch[g], s.received.Sub(watched))
				}
				if watched.After(sent[i-1].received) {
					afterWatch[g]++
				}
				if binding := lastWrite(pod, s.received, isBinding); !binding.IsZero() {
					if watched.After(binding) {
						sinceBinding[g]++
					}
					if versionSeen {
						versionKnown[g]++
						if slices.ContainsFunc(watches, func(o watchOpen) bool {
							return o.at.After(binding) && o.at.Before(s.received) && o.from > 0 && o.from < version
						}) {
							fromBefore[g]++
						}
					}
					for r := range numResendRules {
						if resentBound(watches, pod, w.by, binding, s.received, running[ref], r) {
							resent[r][g]++
						}
					}
				}
			}
			if !s.ok {
				f[min(i, 1)]++
			}
		}
		failed[g] = f
	}
	out := map[string]map[string]*StatusRewrites{}
	for g, d := range gaps {
		inner(out, g.by)[g.namespace] = &StatusRewrites{Gap: Summarise(d), MinGap: slices.Min(d).Seconds(),
			FailedFirst: failed[g][0], FailedLater: failed[g][1],
			AfterWatchOpened: afterWatch[g], AfterWatchSinceBinding: sinceBinding[g],
			BindingVersionSeen: versionKnown[g], AfterWatchFromBeforeBinding: fromBefore[g],
			AfterCurrentStateWatch: resent[receivedAfterBinding][g], AfterCurrentStateWatchStarted: resent[startedAfterBinding][g], AfterCurrentStateWatchBeforeRunningSeen: resent[beforeRunningSeen][g],
			SinceWatchOpened: summariseOrNil(laterSinceWatch[g]), FirstSinceWatchOpened: summariseOrNil(firstSinceWatch[g])}
	}
	return nilIfEmpty(out)
}

// resendRule is which watches of the current state resentBound takes as
// having sent a pod's binding's copy again, from the narrowest (see
// docs/measurements.md): those received after the binding and before
// the pod's next successful write; those too received before the binding
// whose response started after it; and those too received after that
// write, where it was the client's own status write, but before the
// run's own watch first saw the pod running (see runningSeen), if later.
type resendRule int

const (
	receivedAfterBinding resendRule = iota
	startedAfterBinding
	beforeRunningSeen
	numResendRules
)

// resentBound is whether watches of client by hold one asking for the
// current state that, by rule, sent the pod's binding's copy again,
// received before to unless it is zero; running is when the run's watch
// first saw the pod running (zero if it did not).
func resentBound(watches []watchOpen, pod []podWrite, by string, binding, to, running time.Time, rule resendRule) bool {
	next := firstWrite(pod, binding)
	until := next.received
	if rule == beforeRunningSeen && next.by == by && strings.HasSuffix(next.what, " "+statusResource) && running.After(until) {
		until = running
	}
	return slices.ContainsFunc(watches, func(o watchOpen) bool {
		since := o.at
		if rule != receivedAfterBinding && o.started.After(since) {
			since = o.started
		}
		return o.current && since.After(binding) && (to.IsZero() || o.at.Before(to)) && (until.IsZero() || o.at.Before(until))
	})
}

// lastBefore is when the last of watches opened before to was; zero
// when none was.
func lastBefore(watches []watchOpen, to time.Time) time.Time {
	var last time.Time
	for _, o := range watches {
		if o.at.Before(to) && o.at.After(last) {
			last = o.at
		}
	}
	return last
}

// byPod is what the run's watch saw of pods of namespace (by name), by
// pod.
func byPod[V any](namespace string, byName map[string]V) map[podRef]V {
	out := make(map[podRef]V, len(byName))
	for name, v := range byName {
		out[podRef{namespace, name}] = v
	}
	return out
}

// summariseOrNil is Summarise of samples, nil when there are none.
func summariseOrNil(samples []time.Duration) *Percentiles {
	if len(samples) == 0 {
		return nil
	}
	return new(Summarise(samples))
}

// podRef is a pod; podWrite is one write to it, its status or its
// binding: when the apiserver received it, who sent it, what it was
// ("create pods/binding") and whether it succeeded.
type (
	podRef   struct{ namespace, name string }
	podWrite struct {
		received time.Time
		by, what string
		ok       bool
	}
)

// isPodWrite is whether a request of verb for resource (as readAuditLog
// keys it) writes a pod, its status or its binding.
func isPodWrite(verb, resource string) bool {
	switch resource {
	case "pods", statusResource, bindingResource:
		return verb == "create" || verb == "update" || verb == "patch" || verb == "delete"
	}
	return false
}

// isBinding accepts a write that binds a pod.
func isBinding(x podWrite) bool { return x.what == "create "+bindingResource }

// lastWrite is when the apiserver received the last successful write of
// pod before to that keep accepts; zero when none was.
func lastWrite(pod []podWrite, to time.Time, keep func(podWrite) bool) time.Time {
	var last time.Time
	for _, x := range pod {
		if x.ok && x.received.Before(to) && x.received.After(last) && keep(x) {
			last = x.received
		}
	}
	return last
}

// firstWrite is the first successful write of pod the apiserver
// received after from; zero when none was.
func firstWrite(pod []podWrite, from time.Time) podWrite {
	var first podWrite
	for _, x := range pod {
		if x.ok && x.received.After(from) && (first.received.IsZero() || x.received.Before(first.received)) {
			first = x
		}
	}
	return first
}

// WritesBefore are the other clients' writes to the pods one client
// wrote the status of once in the phases (WrittenOnce), or more than
// once (WrittenAgain): Pods, how many; for each pod, the successful
// writes by any other client to it, its status or its binding, received
// from the later of its binding (the last successful one) and the
// client's own last successful status write of it, both before the
// client's first status write of it in the phases (from the run's start
// when the log holds neither), to that first write, the binding
// included. Each such write changed the pod without the client's write,
// and a watch of bound pods (kwok's) delivers each as a copy of the pod
// before the copy with that write: ByPod counts the pods by how many
// they had, Writes the writes by who sent what ("scheduler create
// pods/binding"). CurrentStateWatch counts the pods whose binding (the
// last successful one before the first write, with no successful status
// write of the client's own after it) the log holds and for which the
// client opened a pod watch asking for the current state after that
// binding and before the pod's next successful write, the client's
// first or, if that failed, a later one: that watch sent the binding's
// copy again (see resentBound). Of pods written once, those are copies
// sent again that the client did not play again; it is 0 when the audit
// policy logs no pod watch. CurrentStateWatchStarted and
// CurrentStateWatchBeforeRunningSeen count them by the wider rules of
// resendRule.
type WritesBefore struct {
	Pods                               int            `json:"pods"`
	ByPod                              map[string]int `json:"byPod"`
	Writes                             map[string]int `json:"writes"`
	CurrentStateWatch                  int            `json:"currentStateWatch"`
	CurrentStateWatchStarted           int            `json:"currentStateWatchStarted"`
	CurrentStateWatchBeforeRunningSeen int            `json:"currentStateWatchBeforeRunningSeen"`
}

// The groups of WritesBefore: pods a client wrote the status of once in
// the phases, and more than once.
const (
	WrittenOnce  = "once"
	WrittenAgain = "again"
)

// writesBefore are, by client, namespace and WrittenOnce or
// WrittenAgain, the WritesBefore of the pods each client wrote the
// status of in the phases (status), given every write to each pod,
// each client's watches that started (opened, by "client resource") and
// when the pods were first seen running (running); nil when none was.
func writesBefore(status map[statusWriter][]statusWrite, writes map[podRef][]podWrite, opened map[string][]watchOpen, running map[podRef]time.Time) map[string]map[string]map[string]*WritesBefore {
	out := map[string]map[string]map[string]*WritesBefore{}
	for w, sent := range status {
		first := slices.MinFunc(sent, byReceived).received
		ref := podRef{w.namespace, w.pod}
		pod := writes[ref]
		from := lastWrite(pod, first, func(x podWrite) bool {
			return isBinding(x) || x.by == w.by && strings.HasSuffix(x.what, " "+statusResource)
		})
		group := WrittenOnce
		if len(sent) > 1 {
			group = WrittenAgain
		}
		groups := inner(inner(out, w.by), w.namespace)
		b := groups[group]
		if b == nil {
			b = &WritesBefore{ByPod: map[string]int{}, Writes: map[string]int{}}
			groups[group] = b
		}
		n := 0
		for _, x := range pod {
			if x.by != w.by && x.ok && !x.received.Before(from) && x.received.Before(first) {
				n++
				b.Writes[x.by+" "+x.what]++
			}
		}
		b.Pods++
		b.ByPod[strconv.Itoa(n)]++
		if binding := lastWrite(pod, first, isBinding); !binding.IsZero() && !from.After(binding) {
			resent := func(r resendRule) int {
				if resentBound(opened[w.by+" pods"], pod, w.by, binding, time.Time{}, running[ref], r) {
					return 1
				}
				return 0
			}
			b.CurrentStateWatch += resent(receivedAfterBinding)
			b.CurrentStateWatchStarted += resent(startedAfterBinding)
			b.CurrentStateWatchBeforeRunningSeen += resent(beforeRunningSeen)
		}
	}
	return nilIfEmpty(out)
}
