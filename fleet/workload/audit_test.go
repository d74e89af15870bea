package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

func TestClientName(t *testing.T) {
	for agent, want := range map[string]string{
		"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/6ab7d43/generic-garbage-collector": "generic-garbage-collector",
		"kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/job-controller":             "job-controller",
		"kube-apiserver/v0.0.0 (linux/amd64) kubernetes/$Format":                                     "kube-apiserver",
		"kwok/v0.8.0 (linux/amd64)": "kwok",
		"ghostfleet-load":           "ghostfleet-load",
		"":                          "unknown",
	} {
		if got := clientName(agent); got != want {
			t.Errorf("clientName(%q) = %q, want %q", agent, got, want)
		}
	}
}

// auditLine is one audit event as kube-apiserver writes it.
// A resource "pods/status" is the pod's status subresource.
func auditLine(stage, verb, resource, name, agent string, code int, received, answered time.Time) string {
	resource, sub, _ := strings.Cut(resource, "/")
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":%q,"verb":%q,"userAgent":%q,"objectRef":{"resource":%q,"namespace":"ns","name":%q,"subresource":%q},"responseStatus":{"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		stage, verb, agent, resource, name, sub, code, received.Format(metav1.RFC3339Micro), answered.Format(metav1.RFC3339Micro))
}

const (
	gcAgent  = "kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/generic-garbage-collector"
	jobAgent = "kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/job-controller"
)

// A teardown splits into stages that add up to it, from the DELETEs that
// stopped its workers; one whose Job's DELETE is not within it, or whose
// last worker did not stop by a DELETE, is left unsplit.
func TestAuditTeardowns(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	kwok := "kwok/v0.8.0 (linux/amd64)"
	lines := []string{
		auditLine("ResponseComplete", "delete", "pods", "a-1", gcAgent, 200, at(-5000), at(-4990)), // before the run
		auditLine("ResponseComplete", "create", "pods", "a-0", jobAgent, 201, at(100), at(110)),
		auditLine("RequestReceived", "delete", "jobs", "a", "ghostfleet-load", 0, at(1500), at(1500)),
		auditLine("ResponseComplete", "get", "jobs", "a", gcAgent, 200, at(1400), at(1401)), // before the Job's DELETE
		auditLine("ResponseComplete", "delete", "jobs", "a", "ghostfleet-load", 200, at(1500), at(1520)),
		auditLine("ResponseComplete", "patch", "pods", "a-1", jobAgent, 200, at(1530), at(1540)),       // not the deleter's
		auditLine("ResponseComplete", "patch", "pods/status", "a-1", gcAgent, 200, at(1540), at(1545)), // a subresource
		auditLine("ResponseComplete", "get", "pods", "a-9", gcAgent, 200, at(1545), at(1546)),          // not the job's
		auditLine("ResponseComplete", "get", "pods", "a-0", gcAgent, 200, at(1550), at(1552)),          // the deleter's first
		auditLine("ResponseComplete", "delete", "pods", "a-1", gcAgent, 409, at(1600), at(1610)),       // a conflict deletes nothing
		auditLine("ResponseComplete", "delete", "pods", "a-1", gcAgent, 200, at(1700), at(1720)),
		auditLine("ResponseComplete", "delete", "pods", "a-3", gcAgent, 200, at(1800), at(1810)), // a-3 had stopped at 1200
		auditLine("ResponseComplete", "delete", "pods", "a-2", jobAgent, 200, at(2100), at(2180)),
		auditLine("ResponseComplete", "delete", "pods", "a-4", gcAgent, 200, at(2110), at(2115)), // received last, not the last seen
		auditLine("ResponseComplete", "delete", "pods", "a-2", kwok, 200, at(2300), at(2310)),    // kwok's own, once marked
		auditLine("ResponseComplete", "delete", "jobs", "b", "ghostfleet-load", 200, at(1500), at(1520)),
		auditLine("ResponseComplete", "delete", "pods", "b-1", kwok, 200, at(2500), at(2510)), // after b-1 stopped
		auditLine("ResponseComplete", "get", "jobs", "b", gcAgent, 200, at(2500), at(2501)),
		auditLine("ResponseComplete", "delete", "pods", "c-1", gcAgent, 200, at(1600), at(1610)),
		auditLine("ResponseComplete", "delete", "jobs", "c", "ghostfleet-load", 200, at(4000), at(4010)), // the next restart's
		auditLine("ResponseComplete", "get", "jobs", "c", gcAgent, 200, at(4000), at(4001)),              // after the hold
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	// What the log held before the run is not read; a line cut short is
	// skipped; the last line is one the apiserver is still writing.
	before := auditLine("ResponseComplete", "delete", "pods", "a-2", gcAgent, 200, at(1900), at(1910)) + "\n"
	if err := os.WriteFile(path, []byte(before+strings.Join(lines, "\n")+"\n{\"kind\":\"Ev\n{\"kind\":\"Ev"), 0o644); err != nil {
		t.Fatal(err)
	}
	spans := []teardownSpan{
		{job: "a", from: at(1000), lastStop: at(2150), stopped: []PodTimes{
			{Name: "a-1", Ended: at(1750)}, {Name: "a-2", Ended: at(2150)}, {Name: "a-3", Ended: at(1200)}, {Name: "a-4", Ended: at(2120)}},
			pods: []PodTimes{{Name: "a-0"}, {Name: "a-1"}, {Name: "a-2"}, {Name: "a-3"}, {Name: "a-4"}}},
		{job: "b", from: at(1000), lastStop: at(2000), stopped: []PodTimes{{Name: "b-1", Ended: at(2000)}}},
		{job: "c", from: at(1000), lastStop: at(2000), stopped: []PodTimes{{Name: "c-1", Ended: at(2000)}}},
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(1000)}, {Name: "hold", Start: at(1000), End: at(3000)}}
	var res TrainResult
	skipped, err := recordAudit(&res, path, int64(len(before)), "ns", auditSpans{teardowns: spans}, phases, TokenBucket{})
	if err != nil || skipped != 1 {
		t.Fatalf("skipped %d lines, %v; want 1", skipped, err)
	}
	st := res.TeardownStages
	if st == nil || st.Split != 1 || st.Unsplit != 2 || st.StoppedOtherwise != 1 {
		t.Fatalf("stages %+v", st)
	}
	for _, c := range []struct {
		name string
		got  *Stage
		want float64
	}{
		{"total", st.Total, 1.15}, {"notice", st.Notice, 0.5}, {"to pod deletes", st.ToPodDeletes, 0.2},
		{"pod deletes", st.PodDeletes, 0.4}, {"last delete", st.LastDelete, 0.08}, {"seen", st.Seen, -0.03},
		{"job answered", st.JobAnswered, 0.02}, {"to the deleter", st.ToDeleter, 0.03}, {"deleter's work", st.DeleterWork, 0.15},
	} {
		if math.Abs(c.got.Mean-c.want) > 1e-9 || c.got.Count != 1 {
			t.Errorf("%s: %+v, want a mean of %g s", c.name, c.got, c.want)
		}
	}
	if sum := st.Notice.Mean + st.ToPodDeletes.Mean + st.PodDeletes.Mean + st.LastDelete.Mean + st.Seen.Mean; math.Abs(sum-st.Total.Mean) > 1e-9 {
		t.Errorf("the stages add up to %g s, the teardowns to %g s", sum, st.Total.Mean)
	}
	if sum := st.JobAnswered.Mean + st.ToDeleter.Mean + st.DeleterWork.Mean; math.Abs(sum-st.ToPodDeletes.Mean) > 1e-9 {
		t.Errorf("the stages to the first worker's DELETE add up to %g s, not its %g s", sum, st.ToPodDeletes.Mean)
	}
	if fmt.Sprint(st.DeleterFirst) != "map[get pods:1]" {
		t.Errorf("the deleter's first requests %v, want its GET of a-0", st.DeleterFirst)
	}
	if st.DeletedBy["generic-garbage-collector"] != 2 || st.DeletedBy["job-controller"] != 1 || len(st.DeletedBy) != 2 {
		t.Errorf("deleted by %v", st.DeletedBy)
	}
	want := map[string]map[string]int{
		"train": {"job-controller create pods": 1},
		"hold": {"ghostfleet-load delete jobs": 2, "generic-garbage-collector delete pods": 5, "job-controller delete pods": 1,
			"kwok delete pods": 2, "generic-garbage-collector get jobs": 2, "job-controller patch pods": 1,
			"generic-garbage-collector get pods": 2, "generic-garbage-collector patch pods/status": 1},
	}
	if fmt.Sprint(res.AuditedRequests) != fmt.Sprint(want) {
		t.Errorf("requests by phase %v, want %v", res.AuditedRequests, want)
	}
	// A phase without a failure is there, empty: findings read a count
	// missing from it as none.
	failures := map[string]map[string]int{"train": {}, "hold": {"generic-garbage-collector delete pods 409": 1}}
	if fmt.Sprint(res.AuditedFailures) != fmt.Sprint(failures) {
		t.Errorf("failures by phase %v, want %v", res.AuditedFailures, failures)
	}
}

// Failed requests are counted by who asked what and the answer, the
// pods by how many status writes each client sent for each, failed ones
// too; a GET of a status is no write, and a request outside the phases
// is not counted.
func TestAuditFailuresAndStatusWrites(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	kwok := "kwok/v0.8.0 (linux/amd64)"
	lines := []string{
		// The log is in the order of answers: p-1's second write is
		// answered first.
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 200, at(200), at(210)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 409, at(100), at(250)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-2", kwok, 200, at(300), at(310)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-3", kwok, 200, at(400), at(410)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-3", kwok, 429, at(500), at(501)),
		auditLine("Panic", "patch", "pods/status", "p-3", kwok, 0, at(700), at(800)),
		auditLine("ResponseComplete", "get", "pods/status", "p-2", kwok, 200, at(700), at(701)),
		auditLine("ResponseComplete", "update", "pods/status", "p-2", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler", 200, at(800), at(810)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-4", kwok, 500, at(5000), at(5010)), // after the run
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(550)}, {Name: "hold", Start: at(550), End: at(3000)}}
	res := recordLines(t, lines, phases, auditSpans{}, TokenBucket{})
	failures := map[string]map[string]int{
		"train": {"kwok patch pods/status 409": 1, "kwok patch pods/status 429": 1},
		"hold":  {"kwok patch pods/status panic": 1},
	}
	if fmt.Sprint(res.AuditedFailures) != fmt.Sprint(failures) {
		t.Errorf("failures %v, want %v", res.AuditedFailures, failures)
	}
	if res.AuditedWatches != nil {
		t.Errorf("watches %v in a log without any", res.AuditedWatches)
	}
	writes := map[string]map[string]map[string]int{"kwok": {"ns": {"1": 1, "2": 1, "3": 1}}, "scheduler": {"ns": {"1": 1}}}
	if fmt.Sprint(res.PodStatusWrites) != fmt.Sprint(writes) {
		t.Errorf("pods by status writes %v, want %v", res.PodStatusWrites, writes)
	}
	// p-1's second write came 100 ms after its failed first; p-3's 100
	// and 200 ms after the one before, the second and third failing.
	// p-2's one write is no rewrite, nor is the scheduler's.
	re := res.StatusRewrites["kwok"]["ns"]
	if len(res.StatusRewrites) != 1 || len(res.StatusRewrites["kwok"]) != 1 || re == nil {
		t.Fatalf("rewrites %v; want kwok's in ns only", res.StatusRewrites)
	}
	want := StatusRewrites{Gap: Percentiles{Count: 3, P50: 0.1, P90: 0.2, P99: 0.2, Max: 0.2}, MinGap: 0.1, FailedFirst: 1, FailedLater: 2}
	if *re != want {
		t.Errorf("kwok's rewrites %+v, want %+v", *re, want)
	}
}

// A rewrite counts as after a watch opened when the client opened a
// watch of pods between it and the write before, and as after one since
// the binding when between the pod's last successful binding and it:
// another client's watch, or one of another resource, does not count.
func TestRewritesAfterWatchOpened(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	writes := map[statusWriter][]statusWrite{
		{"kwok", "ns", "p-1"}: {{at(1), true}, {at(3), false}, {at(5), true}},
		{"kwok", "ns", "p-2"}: {{at(6.5), true}, {at(7), true}},
		{"kwok", "ns", "p-3"}: {{at(1.5), true}, {at(2.5), true}},
		{"kwok", "ns", "p-4"}: {{at(1.5), true}, {at(2.5), true}},
	}
	binding := "create " + bindingResource
	pods := map[podRef][]podWrite{
		{"ns", "p-1"}: {{at(0.4), "scheduler", binding, false}, {at(0.5), "scheduler", binding, true}},
		{"ns", "p-2"}: {{at(6), "scheduler", binding, true}, {at(6.3), "scheduler", binding, true}, {at(7.5), "scheduler", binding, true}}, // the last before, 6.3, counts
		{"ns", "p-3"}: {{at(1.2), "scheduler", binding, false}},                                                                            // none succeeded
		{"ns", "p-4"}: {{at(1), "scheduler", binding, true}},
	}
	opened := map[string][]watchOpen{"kwok pods": {{at(2), 100, false, at(2)}, {at(2.2), 0, true, at(2.2)}, {at(6.2), 200, false, at(6.2)}, {at(8), 1, false, at(8)}},
		"kwok nodes": {{at(4.2), 1, false, at(4.2)}}, "scheduler pods": {{at(4.2), 1, false, at(4.2)}}}
	// The watch at 2.2 asked for no resource version: the latest; the one
	// at 8 came after every write. The run saw p-1 bound at 150 (after
	// the watch at 2 asked from 100), p-2 at 250 (its watch, from 200,
	// opened before its last binding), p-4 at 100 (the watch asked for
	// the changes after it), and not p-3.
	bound := map[podRef]uint64{{"ns", "p-1"}: 150, {"ns", "p-2"}: 250, {"ns", "p-4"}: 100}
	re := rewrites(writes, pods, opened, bound, nil)["kwok"]["ns"]
	if re == nil || re.Gap.Count != 5 || re.AfterWatchOpened != 3 || re.AfterWatchSinceBinding != 3 {
		t.Errorf("rewrites %+v; want 5, 3 of them (p-1's, p-3's and p-4's second) after kwok's pod watch opened since the write before, 3 (p-1's second and third, p-4's second) since the binding", re)
	}
	if re == nil || re.BindingVersionSeen != 4 || re.AfterWatchFromBeforeBinding != 2 {
		t.Errorf("rewrites %+v; want 4 of a pod seen bound (not p-3's), 2 of them (p-1's) after a watch since the binding asking from before the version it was bound at", re)
	}
	// From kwok's last pod watch opened before each: the later writes
	// 0.8, 2.8, 0.8, 0.3 and 0.3 s; the first writes only p-2's, 0.3 s
	// (p-1's, p-3's and p-4's came before any).
	near := func(p *Percentiles, count int, p50, most float64) bool {
		return p != nil && p.Count == count && math.Abs(p.P50-p50) < 1e-6 && math.Abs(p.Max-most) < 1e-6
	}
	if re == nil || !near(re.SinceWatchOpened, 5, 0.8, 2.8) || !near(re.FirstSinceWatchOpened, 1, 0.3, 0.3) {
		t.Errorf("since the watch opened: later %+v, first %+v; want 5 later (0.8 s at the median, 2.8 s at most), 1 first (0.3 s)", re.SinceWatchOpened, re.FirstSinceWatchOpened)
	}
}

// The reader hands the rewrites each watch's resource version, the
// versions the run saw the pods bound at and when it saw them running.
func TestAuditBoundVersions(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kwok, scheduler := "kwok/v0.8.0 (linux/amd64)", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler"
	lines := []string{
		auditLine("ResponseComplete", "create", "pods/binding", "p-1", scheduler, 201, at(1), at(1.01)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 200, at(2), at(2.01)),
		strings.Replace(watchLine("w1", "ResponseStarted", kwok, 200, 300, at(2.5), at(2.5)), "watch=true", "resourceVersion=5&watch=true", 1),
		watchLine("w2", "ResponseStarted", kwok, 200, 300, at(2.2), at(2.2)), // of the current state, after kwok's write
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 422, at(3), at(3.01)),
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(10)}}
	for version, want := range map[uint64]int{10: 1, 5: 0} {
		spans := auditSpans{boundVersions: map[string]uint64{"p-1": version}, runningSeen: map[string]time.Time{"p-1": at(2.3)}}
		re := recordLines(t, lines, phases, spans, TokenBucket{}).StatusRewrites["kwok"]["ns"]
		if re == nil || re.BindingVersionSeen != 1 || re.AfterWatchFromBeforeBinding != want || re.AfterCurrentStateWatch != 0 || re.AfterCurrentStateWatchBeforeRunningSeen != 1 {
			t.Errorf("bound at %d: rewrites %+v; want 1 seen bound, %d after the watch from 5, 1 after the watch of the current state before p-1 was seen running", version, re, want)
		}
	}
}

// A watch asks for the changes after a resource version, or for the
// current state first: no version, "0", or sendInitialEvents.
func TestWatchStart(t *testing.T) {
	type start struct {
		from    uint64
		current bool
	}
	for uri, want := range map[string]start{
		"/api/v1/pods?allowWatchBookmarks=true&resourceVersion=4711&timeoutSeconds=300&watch=true":              {4711, false},
		"/api/v1/pods?resourceVersion=0&watch=true":                                                             {0, true},
		"/api/v1/pods?watch=true":                                                                               {0, true},
		"/api/v1/pods?resourceVersion=abc&watch=true":                                                           {0, false},
		"/api/v1/pods?resourceVersion=4711&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true": {0, true},
	} {
		if from, current := watchStart(uri); (start{from, current}) != want {
			t.Errorf("watchStart(%q) = %d, %t; want %+v", uri, from, current, want)
		}
	}
}

// A rewrite counts as after a watch of the current state when the
// client opened one after the pod's binding and before the next write to
// it: the watch then sent the binding's copy; with the watches started
// after the binding, also when one received before it started after it;
// and counting those received before the run's own watch saw the pod
// running, also when one received after the next write came before.
func TestRewritesAfterCurrentStateWatch(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	writes := map[statusWriter][]statusWrite{{"kwok", "ns", "p"}: {{at(2), true}, {at(4), false}}}
	pods := map[podRef][]podWrite{{"ns", "p"}: {
		{at(1), "scheduler", "create " + bindingResource, true},
		{at(2), "kwok", "patch " + statusResource, true},
		{at(4), "kwok", "patch " + statusResource, false},
	}}
	// The run's own watch saw the pod running at 3 s, after kwok's first
	// write, or (where 0) never.
	for _, tt := range []struct {
		name                             string
		watch                            watchOpen
		seenRunning                      float64
		want, started, beforeSeenRunning int
	}{
		{"of the current state, between the binding and the next write", watchOpen{at(1.5), 0, true, at(1.5)}, 3, 1, 1, 1},
		{"after the next write, before the pod was seen running", watchOpen{at(2.5), 0, true, at(2.5)}, 3, 0, 0, 1},
		{"after the next write, the pod never seen running", watchOpen{at(2.5), 0, true, at(2.5)}, 0, 0, 0, 0},
		{"after the next write, the pod seen running before it", watchOpen{at(2.5), 0, true, at(2.5)}, 1.8, 0, 0, 0},
		{"after the pod was seen running", watchOpen{at(3.5), 0, true, at(3.5)}, 3, 0, 0, 0},
		{"before the binding", watchOpen{at(0.5), 0, true, at(0.5)}, 3, 0, 0, 0},
		{"received before the binding, started after it", watchOpen{at(0.5), 0, true, at(1.1)}, 3, 0, 1, 1},
		{"from a resource version", watchOpen{at(1.5), 5, false, at(1.5)}, 3, 0, 0, 0},
	} {
		running := map[podRef]time.Time{}
		if tt.seenRunning > 0 {
			running[podRef{"ns", "p"}] = at(tt.seenRunning)
		}
		re := rewrites(writes, pods, map[string][]watchOpen{"kwok pods": {tt.watch}}, nil, running)["kwok"]["ns"]
		if re == nil || re.AfterCurrentStateWatch != tt.want || re.AfterCurrentStateWatchStarted != tt.started || re.AfterCurrentStateWatchBeforeRunningSeen != tt.beforeSeenRunning {
			t.Errorf("%s: rewrites %+v, want %d after a watch of the current state, %d counting those started after the binding, %d those received before the pod was seen running",
				tt.name, re, tt.want, tt.started, tt.beforeSeenRunning)
		}
	}
}

// Before each client's first status write of a pod in the phases, the
// other clients' successful writes to the pod are counted from its last
// successful binding or the client's own last successful write before,
// whichever is later, or from the log's start when it holds neither;
// and, apart, the pods a watch of the current state sent as their
// binding left them.
func TestWritesBefore(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kwok, scheduler, gf := "kwok/v0.8.0 (linux/amd64)", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler", "ghostfleet"
	write := func(verb, resource, name, agent string, code int, s float64) string {
		return auditLine("ResponseComplete", verb, resource, name, agent, code, at(s), at(s+0.01))
	}
	lines := []string{
		write("create", "pods", "p-1", jobAgent, 201, 0.2), // before its binding
		write("create", "pods/binding", "p-1", scheduler, 201, 1),
		write("patch", "pods/status", "p-1", scheduler, 200, 1.5),
		write("patch", "pods", "p-1", gf, 200, 1.8),
		write("patch", "pods", "p-1", gf, 409, 1.85), // failed: no copy
		write("get", "pods", "p-1", gf, 200, 1.9),    // not a write
		write("patch", "pods/status", "p-1", kwok, 200, 2),
		write("patch", "pods/status", "p-1", kwok, 422, 4),
		write("create", "pods/binding", "p-2", scheduler, 409, 0.5),
		write("create", "pods/binding", "p-2", scheduler, 201, 1),
		write("patch", "pods/status", "p-2", kwok, 200, 2),
		write("patch", "pods", "p-3", gf, 200, -1),            // no binding in the log
		write("patch", "pods/status", "p-3", kwok, 200, -0.5), // kwok's own, before the phase
		write("patch", "pods", "p-3", gf, 200, 2.5),
		write("patch", "pods/status", "p-3", kwok, 200, 3),
		write("patch", "pods", "p-4", gf, 200, -1), // neither in the log: from its start
		write("patch", "pods/status", "p-4", kwok, 200, 3),
		write("patch", "pods/status", "p-5", kwok, 200, 3), // no binding in the log
		write("create", "pods/binding", "p-6", scheduler, 201, 1),
		write("patch", "pods/status", "p-6", kwok, 422, 1.6), // failed: the pod still as bound
		write("patch", "pods/status", "p-6", kwok, 200, 2.5),
		write("patch", "pods/status", "p-7", kwok, 200, -0.5), // kwok's own, after its binding
		write("create", "pods/binding", "p-7", scheduler, 201, -1),
		write("patch", "pods/status", "p-7", kwok, 200, 2),
		// kwok's watches of pods: from a version, after p-1's binding;
		// of the current state after p-1's next write (the scheduler's)
		// and before p-2's and p-6's (its first, failed, does not count),
		// and before kwok's own write of p-7 before the phase: only p-2
		// and p-6 were sent as their bindings left them before the first.
		strings.Replace(watchLine("w1", "ResponseStarted", kwok, 200, 300, at(1.2), at(1.2)), "watch=true", "resourceVersion=5&watch=true", 1),
		watchLine("w2", "ResponseStarted", kwok, 200, 300, at(1.7), at(1.7)),
		watchLine("w3", "ResponseStarted", kwok, 200, 300, at(-0.7), at(-0.7)),
		// Received before p-8's binding, started after it: counted only
		// with the watches that started after the binding.
		write("create", "pods/binding", "p-8", scheduler, 201, 3),
		write("patch", "pods/status", "p-8", kwok, 200, 3.5),
		watchLine("w4", "ResponseStarted", kwok, 200, 300, at(2.9), at(3.1)),
		// Received after kwok's first write of p-9, before the run saw it
		// running: counted only with those; and, for p-10, whose only
		// write failed, after the run saw it running: still counted.
		write("create", "pods/binding", "p-9", scheduler, 201, 4),
		write("patch", "pods/status", "p-9", kwok, 200, 4.2),
		watchLine("w5", "ResponseStarted", kwok, 200, 300, at(4.3), at(4.3)),
		write("create", "pods/binding", "p-10", scheduler, 201, 5),
		write("patch", "pods/status", "p-10", kwok, 422, 5.2),
		watchLine("w6", "ResponseStarted", kwok, 200, 300, at(5.5), at(5.5)),
	}
	phases := []record.Phase{{Name: "train", Start: at(0.1), End: at(10)}}
	// The run saw p-1 running at 1.8 s, after w2 opened, but its next
	// write was the scheduler's; p-9 at 4.4 s, p-10 at 5.4 s.
	seen := map[string]time.Time{"p-1": at(1.8), "p-9": at(4.4), "p-10": at(5.4)}
	res := recordLines(t, lines, phases, auditSpans{runningSeen: seen}, TokenBucket{})
	want := map[string]map[string]map[string]*WritesBefore{
		"kwok": {"ns": {
			WrittenOnce:  {Pods: 8, ByPod: map[string]int{"1": 6, "0": 2}, Writes: map[string]int{"scheduler create pods/binding": 4, "ghostfleet patch pods": 2}, CurrentStateWatch: 2, CurrentStateWatchStarted: 3, CurrentStateWatchBeforeRunningSeen: 4},
			WrittenAgain: {Pods: 2, ByPod: map[string]int{"3": 1, "1": 1}, Writes: map[string]int{"scheduler create pods/binding": 2, "scheduler patch pods/status": 1, "ghostfleet patch pods": 1}, CurrentStateWatch: 1, CurrentStateWatchStarted: 1, CurrentStateWatchBeforeRunningSeen: 1},
		}},
		"scheduler": {"ns": {WrittenOnce: {Pods: 1, ByPod: map[string]int{"0": 1}, Writes: map[string]int{}}}},
	}
	if got, want := dump(res.WritesBeforeFirst), dump(want); got != want {
		t.Errorf("writes before the first:\n%s\nwant\n%s", got, want)
	}
}

// dump is writes before the first, a line per client, namespace and
// group, in order.
func dump(m map[string]map[string]map[string]*WritesBefore) string {
	var lines []string
	for by, nss := range m {
		for ns, groups := range nss {
			for group, w := range groups {
				lines = append(lines, fmt.Sprintf("%s %s %s: %+v", by, ns, group, *w))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// recordLines is the record of an audit log holding lines, over phases,
// given what to split and the scheduler's bucket.
func recordLines(t *testing.T, lines []string, phases []record.Phase, spans auditSpans, scheduler TokenBucket) TrainResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var res TrainResult
	if _, err := recordAudit(&res, path, 0, "ns", spans, phases, scheduler); err != nil {
		t.Fatal(err)
	}
	return res
}

// watchLine is one audit event of the watch id of pods in every
// namespace, asking timeoutSeconds (none when 0).
func watchLine(id, stage, agent string, code, timeoutSeconds int, received, at time.Time) string {
	uri := "/api/v1/pods?watch=true"
	if timeoutSeconds > 0 {
		uri += fmt.Sprintf("&timeoutSeconds=%d", timeoutSeconds)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":%q,"verb":"watch","requestURI":%q,"userAgent":%q,"objectRef":{"resource":"pods"},"responseStatus":{"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		id, stage, uri, agent, code, received.Format(metav1.RFC3339Micro), at.Format(metav1.RFC3339Micro))
}

// Watches count as opened in the phase they were received in, and as
// ended (early, before their own timeout, or not) in the phase they
// ended in, whenever opened; a refused one is an ordinary failed request,
// and one that started is not a request at all.
func TestAuditWatches(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kwok, scheduler := "kwok/v0.8.0 (linux/amd64)", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler"
	lines := []string{
		watchLine("w1", "ResponseComplete", kwok, 200, 300, at(-100), at(2)), // closed 102 s into its 300
		watchLine("w2", "ResponseStarted", kwok, 200, 300, at(2.1), at(2.1)), // opened again, still open
		watchLine("w3", "ResponseComplete", scheduler, 200, 300, at(-300), at(0.5)),
		watchLine("w4", "ResponseStarted", kwok, 403, 300, at(3), at(3.01)), // refused
		watchLine("w4", "ResponseComplete", kwok, 403, 300, at(3), at(3.01)),
		auditLine("ResponseComplete", "list", "pods", "", kwok, 200, at(4), at(4.5)),
		auditLine("ResponseComplete", "list", "pods", "", scheduler, 200, at(5), at(5.1)),
		watchLine("w6", "ResponseStarted", scheduler, 429, 300, at(6), at(6.01)), // refused
		watchLine("w6", "ResponseComplete", scheduler, 429, 300, at(6), at(6.01)),
		strings.Replace(watchLine("w7", "ResponseStarted", kwok, 200, 300, at(7), at(7)), "watch=true", "resourceVersion=7&watch=true", 1), // ended at once
		watchLine("w7", "ResponseComplete", kwok, 200, 300, at(7), at(7.005)),
		watchLine("w8", "ResponseStarted", kwok, 200, 300, at(8), at(8)), // panicked after a second
		watchLine("w8", "Panic", kwok, 500, 300, at(8), at(9)),
		watchLine("w9", "ResponseComplete", scheduler, 200, 300, at(-298), at(1)), // a second short of its timeout
		watchLine("w10", "ResponseComplete", kwok, 200, 0, at(11), at(12)),        // asked no timeout
		watchLine("w11", "ResponseStarted", kwok, 200, 300, at(40), at(40)),       // after the run
		// p-1, bound, written again after the refused watch, and again after w7.
		auditLine("ResponseComplete", "create", "pods/binding", "p-1", scheduler, 201, at(-1), at(-0.99)), // before the phase
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 200, at(2.5), at(2.51)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 200, at(3.5), at(3.51)),
		auditLine("ResponseComplete", "patch", "pods/status", "p-1", kwok, 422, at(7.5), at(7.51)),
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(10)}, {Name: "hold", Start: at(10), End: at(30)}}
	res := recordLines(t, lines, phases, auditSpans{}, TokenBucket{QPS: 50, Burst: 100})
	want := map[string]map[string]AuditedWatches{
		"train": {"kwok pods": {Opened: 3, FromCurrentState: 2, Ended: 3, EndedEarly: 3, EarlyWithinSecond: 1}, "scheduler pods": {Ended: 2}},
		"hold":  {"kwok pods": {Ended: 1}},
	}
	if len(res.AuditedWatches) != len(want) {
		t.Fatalf("watches in %d phases, want %d: %v", len(res.AuditedWatches), len(want), res.AuditedWatches)
	}
	for phase, keys := range want {
		if len(res.AuditedWatches[phase]) != len(keys) {
			t.Errorf("%s: watches of %d keys, want %d", phase, len(res.AuditedWatches[phase]), len(keys))
		}
		for key, w := range keys {
			got := res.AuditedWatches[phase][key]
			if got == nil {
				t.Errorf("%s %s: no watches, want %+v", phase, key, w)
				continue
			}
			lived := got.EarlyLived
			got2 := *got
			got2.EarlyLived = nil
			if got2 != w {
				t.Errorf("%s %s: watches %+v, want %+v", phase, key, got2, w)
			}
			if (lived != nil) != (w.EndedEarly > 0) || lived != nil && (lived.Count != w.EndedEarly || lived.Max != 102) {
				t.Errorf("%s %s: early ones lived %+v; want %d, the longest 102 s", phase, key, lived, w.EndedEarly)
			}
		}
	}
	if re := res.StatusRewrites["kwok"]["ns"]; re == nil || re.Gap.Count != 2 || re.AfterWatchOpened != 1 || re.AfterWatchSinceBinding != 2 || re.AfterCurrentStateWatch != 2 {
		t.Errorf("kwok's rewrites %+v; want 2, the second after w7 opened (not the first, after a refused watch), both after w2 opened since the binding, of the current state before the first write", re)
	}
	counts := map[string]int{"kwok watch pods": 1, "kwok list pods": 1, "kwok patch pods/status": 3, "scheduler list pods": 1, "scheduler watch pods": 1}
	if fmt.Sprint(res.AuditedRequests["train"]) != fmt.Sprint(counts) {
		t.Errorf("train's requests %v, want %v (the refused watches, not those that started)", res.AuditedRequests["train"], counts)
	}
	if got := res.AuditedTimes["train"]["kwok watch pods"].Seconds; math.Abs(got-0.01) > 1e-9 {
		t.Errorf("time on kwok's watches %v s, want the refused one's 0.01 s only", got)
	}
	if f := res.AuditedFailures["train"]; fmt.Sprint(f) != fmt.Sprint(map[string]int{"kwok patch pods/status 422": 1, "kwok watch pods 403": 1, "scheduler watch pods 429": 1}) {
		t.Errorf("train's failures %v, want the refused watches' 403 and 429 (not the panic after a start)", f)
	}
	// The scheduler's watches draw no token from its client's limiter.
	if tok := res.SchedulerTokens["train"]; tok == nil || tok.Requests != 1 {
		t.Errorf("scheduler's tokens %+v, want its list's only", tok)
	}
}

// The apiserver's time on each client's requests is summed by phase,
// verb and resource; a slow request's layers only where it annotated
// them.
func TestAuditedTimes(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	annotated := func(line, annotations string) string {
		return strings.TrimSuffix(line, "}") + `,"annotations":{` + annotations + `}}`
	}
	lines := []string{
		auditLine("ResponseComplete", "delete", "pods", "a-1", gcAgent, 200, at(100), at(200)),
		annotated(auditLine("ResponseComplete", "delete", "pods", "a-2", gcAgent, 200, at(300), at(1100)),
			`"apiserver.latency.k8s.io/etcd":"300ms","apiserver.latency.k8s.io/apf-queue-wait":"50ms","apiserver.latency.k8s.io/total":"800ms","apiserver.latency.k8s.io/response-write":"200ms","apiserver.latency.k8s.io/authentication":"1ms","mutation.webhook.admission.k8s.io/round_0":"{}"`),
		auditLine("ResponseComplete", "delete", "pods", "a-3", gcAgent, 200, at(400), at(1000)), // slow, no layer tracked
		annotated(auditLine("ResponseComplete", "delete", "pods", "a-4", gcAgent, 200, at(500), at(1200)),
			`"apiserver.latency.k8s.io/total":"700ms","apiserver.latency.k8s.io/etcd":"soon","apiserver.latency.k8s.io/response-write":"100ms"`), // a layer's time unreadable
		auditLine("ResponseComplete", "delete", "pods", "a-1", "kwok/v0.8.0 (linux/amd64)", 200, at(600), at(620)),
		auditLine("ResponseComplete", "get", "pods", "a-1", gcAgent, 404, at(2100), at(2130)),
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(2000)}, {Name: "hold", Start: at(2000), End: at(3000)}}
	res := recordLines(t, lines, phases, auditSpans{}, TokenBucket{})
	want := map[string]map[string]AuditedTimes{
		"train": {
			"generic-garbage-collector delete pods": {Seconds: 2.2, Slow: 2, SlowSeconds: 1.5, SlowEtcdSeconds: 0.3, SlowAPFSeconds: 0.05,
				SlowOtherSeconds: map[string]float64{"response-write": 0.3, "authentication": 0.001}},
			"kwok delete pods": {Seconds: 0.02},
		},
		"hold": {"generic-garbage-collector get pods": {Seconds: 0.03}},
	}
	if len(res.AuditedTimes) != len(want) {
		t.Fatalf("times by phase %+v, want %+v", res.AuditedTimes, want)
	}
	for phase, byKey := range want {
		got := res.AuditedTimes[phase]
		for k, w := range byKey {
			g := got[k]
			if len(got) != len(byKey) || g.Slow != w.Slow || math.Abs(g.Seconds-w.Seconds) > 1e-9 || math.Abs(g.SlowSeconds-w.SlowSeconds) > 1e-9 ||
				math.Abs(g.SlowEtcdSeconds-w.SlowEtcdSeconds) > 1e-9 || math.Abs(g.SlowAPFSeconds-w.SlowAPFSeconds) > 1e-9 || len(g.SlowOtherSeconds) != len(w.SlowOtherSeconds) {
				t.Errorf("%s %s: %+v of %+v, want %+v", phase, k, g, got, w)
			}
			for layer, s := range w.SlowOtherSeconds {
				if math.Abs(g.SlowOtherSeconds[layer]-s) > 1e-9 {
					t.Errorf("%s %s, %s: %+v, want %+v", phase, k, layer, g.SlowOtherSeconds, w.SlowOtherSeconds)
				}
			}
		}
	}
}

// An admitted job's PodsBound splits at its pods' bindings, into parts
// that add up to it: a pod's binding is its last successful one received
// before the watch saw the job bound. A job with a pod the log holds no
// binding of is left unsplit.
func TestAuditBinds(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sched := "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler"
	lines := []string{
		auditLine("ResponseComplete", "create", "pods/binding", "j1-0", sched, 409, at(1500), at(1510)), // refused: not its binding
		auditLine("ResponseComplete", "patch", "pods/status", "j1-0", sched, 200, at(1150), at(1160)),   // not a binding
		auditLine("ResponseComplete", "create", "pods/binding", "j1-1", sched, 201, at(1350), at(1400)),
		auditLine("ResponseComplete", "create", "pods/binding", "j1-0", sched, 201, at(1200), at(1280)),
		auditLine("ResponseComplete", "create", "pods/binding", "j1-0", sched, 201, at(2500), at(2510)), // after the watch saw it bound
		auditLine("ResponseComplete", "create", "pods/binding", "j2-0", sched, 201, at(1200), at(1300)),
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	phases := []record.Phase{{Name: "train", Start: at(0), End: at(3000)}}
	spans := auditSpans{binds: []bindSpan{
		{job: "j1", seen: at(1000), bound: at(2000), pods: []string{"j1-0", "j1-1"}},
		{job: "j2", seen: at(1000), bound: at(2000), pods: []string{"j2-0", "j2-1"}}, // j2-1 has no binding
	}}
	res := TrainResult{Admission: &AdmissionResult{Jobs: []AdmittedJob{{Job: "j2", Order: 1}, {Job: "j1", Order: 2}}}}
	if _, err := recordAudit(&res, path, 0, "ns", spans, phases, TokenBucket{}); err != nil {
		t.Fatal(err)
	}
	a := res.Admission
	if a.BindsUnsplit != 1 || a.ToFirstBind == nil || a.Binds == nil || a.BindsSeen == nil || a.ToFirstBind.Count != 1 {
		t.Fatalf("admission %+v; want one job split, one not", a)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{{"to the first bind", a.ToFirstBind.P50, 0.2}, {"binds", a.Binds.P50, 0.2}, {"binds seen", a.BindsSeen.P50, 0.6}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: %g s, want %g s", c.name, c.got, c.want)
		}
	}
	// The same parts for j1 alone, and its bindings sent over 0.15 s (the
	// first received at 1.2 s, the last at 1.35 s), the slowest answered
	// in 0.08 s (j1-0's); j2 is not split.
	if j2, j1 := a.Jobs[0].BindSplit, a.Jobs[1].BindSplit; j1 == nil || j2 != nil {
		t.Errorf("jobs' splits %+v, %+v; want j1's alone", j1, j2)
	} else {
		got := []float64{j1.ToFirstBind, j1.Binds, j1.BindsSeen, j1.Sent, j1.ServedMax}
		for i, want := range []float64{0.2, 0.2, 0.6, 0.15, 0.08} {
			if math.Abs(got[i]-want) > 1e-9 {
				t.Errorf("j1's to the first, binds, seen, sent, slowest served %v; want 0.2, 0.2, 0.6, 0.15, 0.08", got)
				break
			}
		}
	}
	if got := res.AuditedRequests["train"]["scheduler create pods/binding"]; got != 5 {
		t.Errorf("the scheduler's bindings counted %d, want 5", got)
	}
	// Without an admission result (not an admitted run) nothing is split.
	res = TrainResult{}
	if _, err := recordAudit(&res, path, 0, "ns", spans, phases, TokenBucket{}); err != nil || res.Admission != nil {
		t.Errorf("a run without admission: %v, %+v", err, res.Admission)
	}
}

// The first binding can come before the watch saw the last pod created,
// and the watch can see the last bind before its answer: parts below 0,
// still adding up. A binding received as the watch saw them bound counts;
// another namespace's pod of the same name does not.
func TestSplitBindsEdges(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	bound := func(from, to int) auditRequest {
		return auditRequest{received: at(from), answered: at(to), by: "scheduler", verb: "create", ok: true}
	}
	requests := map[auditKey][]auditRequest{
		{bindingResource, "ns", "p-0"}:    {bound(900, 950)},
		{bindingResource, "ns", "p-1"}:    {bound(1500, 1600)}, // received as the watch saw it
		{bindingResource, "other", "q-0"}: {bound(1000, 1010)},
	}
	a := &AdmissionResult{}
	splitBinds(a, []bindSpan{
		{seen: at(1000), bound: at(1500), pods: []string{"p-0", "p-1"}},
		{seen: at(1000), bound: at(1500), pods: []string{"q-0"}},
	}, "ns", requests)
	if a.BindsUnsplit != 1 || a.ToFirstBind == nil || a.ToFirstBind.Count != 1 {
		t.Fatalf("admission %+v; want one job split, the other's pod in another namespace", a)
	}
	got := []float64{a.ToFirstBind.P50, a.Binds.P50, a.BindsSeen.P50}
	for i, want := range []float64{-0.1, 0.7, -0.1} {
		if math.Abs(got[i]-want) > 1e-9 {
			t.Errorf("parts %v; want -0.1, 0.7, -0.1", got)
			break
		}
	}
}

// Without a teardown split there are no stages, rather than stages of 0 s.
func TestAuditNothingSplit(t *testing.T) {
	st := splitTeardowns([]teardownSpan{{job: "a", from: time.Now(), lastStop: time.Now()}}, "ns", nil)
	if st.Split != 0 || st.Unsplit != 1 || st.Total != nil || st.Notice != nil || st.Seen != nil {
		t.Errorf("stages %+v", st)
	}
}

func TestAuditLogErrors(t *testing.T) {
	phases := []record.Phase{{Name: "hold", Start: time.Now(), End: time.Now()}}
	if _, err := recordAudit(&TrainResult{}, filepath.Join(t.TempDir(), "none"), 0, "ns", auditSpans{}, phases, TokenBucket{}); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing log: %v", err)
	}
}

// The deleter's first request is its first about the Job or one of the
// job's pods after the Job's DELETE was received, or else the DELETE
// itself.
func TestFirstDeleterRequest(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	gc := clientName(gcAgent)
	job := auditRequest{received: at(0), answered: at(20), by: "ghostfleet-load", verb: "delete", ok: true}
	first := auditRequest{received: at(900), answered: at(910), by: gc, verb: "delete", ok: true}
	span := teardownSpan{job: "a", from: at(-500), pods: []PodTimes{{Name: "a-0"}, {Name: "a-1"}, {Name: "a-old", Ended: at(-1000)}}}
	jobGet := auditRequest{received: at(400), by: gc, verb: "get", ok: true}
	for _, c := range []struct {
		name     string
		requests map[auditKey][]auditRequest
		want     string
		at       time.Time
	}{
		{"nothing before the DELETE", map[auditKey][]auditRequest{
			{"pods", "ns", "a-1"}: {first},
		}, noneBefore, at(900)},
		{"a GET of the Job", map[auditKey][]auditRequest{
			{"jobs", "ns", "a"}:     {{received: at(-10), by: gc, verb: "get"}, job, {received: at(0), by: gc, verb: "get"}, jobGet},
			{"pods", "ns", "a-0"}:   {{received: at(300), by: "job-controller", verb: "patch", ok: true}},
			{"pods", "ns", "b-0"}:   {{received: at(100), by: gc, verb: "get", ok: true}},        // another job's
			{"pods", "ns", "a-old"}: {{received: at(200), by: gc, verb: "get"}},                  // an earlier run's
			{"pods", "ns", "a-1"}:   {first, {received: at(950), by: gc, verb: "get", ok: true}}, // after the DELETE
		}, "get jobs", at(400)},
		{"a failed GET of a pod", map[auditKey][]auditRequest{
			{"jobs", "ns", "a"}:   {job, jobGet},
			{"pods", "ns", "a-0"}: {{received: at(350), by: gc, verb: "get"}},
		}, "get pods", at(350)},
	} {
		got, what := firstDeleterRequest(span, "ns", c.requests, job, first)
		if what != c.want || !got.received.Equal(c.at) {
			t.Errorf("%s: %s at %s, want %s at %s", c.name, what, got.received, c.want, c.at)
		}
	}
}
