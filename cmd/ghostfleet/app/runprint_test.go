package app

import (
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// The verdicts are columns; a note sits under its SLO's id without
// breaking them.
func TestPrintSnapshot(t *testing.T) {
	var b strings.Builder
	printSnapshot(&b, runs.SnapshotResult{Run: runs.Run{Dir: "results/snapshot-1"}, Source: report.SourcePrometheus, Verdicts: []report.Verdict{
		{ID: "sli-mutating-p99", Status: report.StatusPass, Threshold: 1, Value: 0.1234, Where: "POST pods"},
		{ID: "sli-list-namespace-p99", Status: report.StatusFail, Threshold: 5, Value: 7.2, Where: "LIST pods", Note: "CL2 would pass this"},
		{ID: "pod-startup-p99", Status: report.StatusNoData, Threshold: 5},
		{ID: "scheduling-p99", Status: report.StatusPass, Threshold: 5, Value: 1, Where: "x", Origin: "ghostfleet"},
	}})
	want := `snapshot of 0001-01-01T00:00:00Z to 0001-01-01T00:00:00Z written to results/snapshot-1
  pass     sli-mutating-p99        ≤ 1  worst 0.123 (POST pods)
  fail     sli-list-namespace-p99  ≤ 5  worst 7.2 (LIST pods)
           CL2 would pass this
  no data  pod-startup-p99         ≤ 5  worst —
  pass     scheduling-p99          ≤ 5  worst 1 (x)  (GhostFleet's own target, not an upstream SLO)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// topTallies puts the largest waits first (ties by name) and says the
// total of all, not only of those named.
func TestTopTallies(t *testing.T) {
	m := map[string]metrics.Tally{"GET": {Count: 700, Sum: 2}, "DELETE": {Count: 320, Sum: 9}, "PUT": {Count: 40, Sum: 2}, "POST": {Count: 1, Sum: 0.5}}
	want := "13.5s in all (DELETE 9.0s over 320 requests, GET 2.0s over 700 requests, PUT 2.0s over 40 requests)"
	if got := topTallies(m, "requests", 3); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := topTallies(nil, "items", 3); got != "0s" {
		t.Errorf("none: %q, want 0s", got)
	}
}

// counted puts the largest counts first (ties by name) and says the total
// of all, not only of those named.
func TestCounted(t *testing.T) {
	m := map[string]int{"kwok delete pods": 3, "generic-garbage-collector get jobs": 9, "job-controller create pods": 3, "scheduler create pods/binding": 1}
	want := "16 in all (generic-garbage-collector get jobs 9, job-controller create pods 3, kwok delete pods 3)"
	if got := counted(m, 3); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := counted(nil, 3); got != "none" {
		t.Errorf("none: %q", got)
	}
}

// auditedTimes puts the kinds the apiserver spent most on first, with
// their mean, and splits only the slow ones' time.
func TestAuditedTimes(t *testing.T) {
	counts := map[string]int{"generic-garbage-collector delete pods": 400, "kwok delete pods": 100, "job-controller create pods": 50, "scheduler create pods/binding": 1}
	times := map[string]workload.AuditedTimes{
		"generic-garbage-collector delete pods": {Seconds: 100, Slow: 40, SlowSeconds: 30, SlowEtcdSeconds: 3, SlowAPFSeconds: 0,
			SlowOtherSeconds: map[string]float64{"authentication": 0.3, "response-write": 12, "authorization": 0.3}},
		"kwok delete pods":              {Seconds: 5},
		"job-controller create pods":    {Seconds: 2},
		"scheduler create pods/binding": {Seconds: 0.01},
	}
	want := "generic-garbage-collector delete pods 100.0s, 250ms each over 400 (40 over 0.5s: 10% of their time in etcd, 0% in APF's queues, most of the other layers' in response-write, 40%); kwok delete pods 5.0s, 50ms each over 100"
	if got := auditedTimes(counts, times, 2); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := auditedTimes(nil, nil, 3); got != "none" {
		t.Errorf("none: %q", got)
	}
}

// byCount lists pods by their number of writes in numeric order, not the
// keys' text order ("10" after "2").
func TestByCount(t *testing.T) {
	if got, want := byCount(map[string]int{"10": 1, "2": 30, "1": 1869}), "1869 with 1, 30 with 2, 1 with 10"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// watches lists the clients' watches, the most ended first, and says
// how many ended early only where some did.
func TestWatches(t *testing.T) {
	ws := map[string]*workload.AuditedWatches{
		"scheduler pods":       {Ended: 1},
		"kwok-controller pods": {Opened: 9, FromCurrentState: 9, Ended: 9, EndedEarly: 9, EarlyLived: &workload.Percentiles{Count: 9, P50: 41.2}},
		"ghostfleet pods":      {Opened: 1},
	}
	want := "kwok-controller pods opened 9 (9 from the current state), ended 9 (9 before their timeout, 0 within a second, after 41.20s at the median); scheduler pods opened 0, ended 1; ghostfleet pods opened 1, ended 0"
	if got := watches(ws); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// train's summary says, under each namespace's pods by a client's
// status writes, the rewrites (after a watch opened only where the audit
// log holds watches) and the others' writes before the first, pods
// written once before those written again.
func TestPrintWritesBefore(t *testing.T) {
	var r runs.TrainResult
	r.PodStatusWrites = map[string]map[string]map[string]int{"kwok-controller": {"gf-train": {"1": 87, "2": 813}}}
	r.WritesBeforeFirst = map[string]map[string]map[string]*workload.WritesBefore{"kwok-controller": {"gf-train": {
		workload.WrittenAgain: {Pods: 813, ByPod: map[string]int{"1": 800, "2": 13}, Writes: map[string]int{"scheduler create pods/binding": 813, "ghostfleet patch pods": 13}, CurrentStateWatch: 790, CurrentStateWatchStarted: 795, CurrentStateWatchBeforeRunningSeen: 799},
		workload.WrittenOnce:  {Pods: 87, ByPod: map[string]int{"1": 87}, Writes: map[string]int{"scheduler create pods/binding": 87}, CurrentStateWatch: 40, CurrentStateWatchStarted: 41, CurrentStateWatchBeforeRunningSeen: 42},
	}}}
	r.StatusRewrites = map[string]map[string]*workload.StatusRewrites{"kwok-controller": {"gf-train": {
		Gap: workload.Percentiles{Count: 813, P50: 2.51, Max: 5.63}, MinGap: 0.61, FailedLater: 813, AfterWatchOpened: 800, AfterWatchSinceBinding: 810,
		BindingVersionSeen: 813, AfterWatchFromBeforeBinding: 5, AfterCurrentStateWatch: 790, AfterCurrentStateWatchStarted: 800, AfterCurrentStateWatchBeforeRunningSeen: 810,
		SinceWatchOpened: &workload.Percentiles{Count: 813, P50: 0.42, P90: 1.1}, FirstSinceWatchOpened: &workload.Percentiles{Count: 700, P50: 3.2, P90: 8}}}}
	var b strings.Builder
	printTrain(&b, r)
	if strings.Contains(b.String(), "opened a watch") || strings.Contains(b.String(), "watch opened") || strings.Contains(b.String(), "current state") {
		t.Errorf("summary counts rewrites after a watch opened on a fleet whose audit log holds no watch:\n%s", b.String())
	}
	r.AuditedWatches = map[string]map[string]*workload.AuditedWatches{"train": {"kwok-controller nodes": {Ended: 1}}}
	b.Reset()
	printTrain(&b, r)
	if strings.Contains(b.String(), "opened a watch") || strings.Contains(b.String(), "current state") {
		t.Errorf("summary counts rewrites after a pod watch opened where the audit log holds only node watches:\n%s", b.String())
	}
	r.AuditedWatches["hold"] = map[string]*workload.AuditedWatches{"kwok-controller pods": {Opened: 11, Ended: 11}}
	b.Reset()
	printTrain(&b, r)
	want := "  pods in gf-train by kwok-controller's status writes to each: 87 with 1, 813 with 2\n" +
		"    each write after a pod's first came 2.51s after the one before at the median (0.61s at the least, 5.63s at most); failed: 0 first writes, 813 later ones\n" +
		"    800 of those writes came after kwok-controller opened a watch of pods since the write before, 810 since the pod's binding\n" +
		"    of the 813 of pods the run saw bound, 5 came after kwok-controller opened, since the binding, a pod watch asking from before the bound version\n" +
		"    790 came after kwok-controller opened, between the pod's binding and the next write to it, a pod watch asking for the current state (which sent the binding's copy); 800 counting those received before the binding that started after it, 810 also those received after its own next write, before the run saw the pod running\n" +
		"    from kwok-controller's last pod watch opened before each: every later write 0.42s at the median (1.10s at p90, 813 with one), the same pods' first writes 3.20s at the median (8.00s at p90, 700 with one)\n" +
		"    the others' writes to each pod written once (87), since its binding or the write before, to the first: 87 with 1; 87 in all (scheduler create pods/binding 87)\n" +
		"      40 of those pods had kwok-controller open, between the binding and the next write to the pod, a pod watch asking for the current state; 41 counting those received before the binding that started after it, 42 also those received after its own next write, before the run saw the pod running\n" +
		"    the others' writes to each pod written again (813), since its binding or the write before, to the first: 800 with 1, 13 with 2; 826 in all (scheduler create pods/binding 813, ghostfleet patch pods 13)\n" +
		"      790 of those pods had kwok-controller open, between the binding and the next write to the pod, a pod watch asking for the current state; 795 counting those received before the binding that started after it, 799 also those received after its own next write, before the run saw the pod running\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// longWaits counts the waits of a millisecond or more from each such
// bucket up; with none that long it says so.
func TestLongWaits(t *testing.T) {
	w := &workload.Waits{Count: 1000, Buckets: []workload.Bucket{{AtLeast: 0, Count: 500}, {AtLeast: 6.4e-08, Count: 440}, {AtLeast: 0.0009175039999999999, Count: 50}, {AtLeast: 0.010485759999999998, Count: 10}, {AtLeast: 0.11744051199999998, Count: 0}}}
	want := "60 of 0.918ms or more, 10 of 10.5ms or more, 0 of 117ms or more"
	if got := longWaits(w); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := longWaits(&workload.Waits{Count: 3, Buckets: []workload.Bucket{{AtLeast: 0, Count: 3}}}); got != "no bucket starts at a millisecond or more" {
		t.Errorf("no bucket from a millisecond: %q", got)
	}
}

// train's summary says per phase how the apiserver's goroutines waited to
// run and its GC paused, etcd's busiest calls and its WAL syncs, and each
// process's wait for a core, the most first and equal ones by name.
func TestPrintTrainWaits(t *testing.T) {
	var r runs.TrainResult
	r.APIServer = map[string]workload.APIServerTimes{"hold": {
		GoSched:  &workload.Waits{Count: 100, Buckets: []workload.Bucket{{AtLeast: 0, Count: 90}, {AtLeast: 0.0009175039999999999, Count: 8}, {AtLeast: 0.010485759999999998, Count: 2}}},
		GCPauses: &metrics.Tally{Count: 3, Sum: 0.004},
	}}
	r.RunQueue = map[string]map[string]float64{"hold": {"kube-apiserver": 39.4, "etcd": 23.1, "kwok-controller": 2, "kube-scheduler": 2}}
	r.Etcd = map[string]workload.EtcdTimes{"hold": {
		RPCs:     map[string]metrics.Tally{"Txn": {Count: 4000, Sum: 12}, "Range": {Count: 2000, Sum: 3}, "LeaseGrant": {Count: 10, Sum: 0.02}},
		WALFsync: &metrics.Tally{Count: 500, Sum: 1.5},
	}}
	r.Etcd["train"] = workload.EtcdTimes{WALFsync: &metrics.Tally{}}
	var b strings.Builder
	printTrain(&b, r)
	for _, want := range []string{
		"  etcd during train: calls not timed (etcd runs without --metrics=extensive)\n",
		"  etcd during hold: calls took 15.0s in all (Txn 12.0s over 4000 calls, Range 3.0s over 2000 calls) inside etcd; WAL synced 500 times, mean 3.0ms\n",
		"    its goroutines' waits to run, one in eight sampled: 100 (10 of 0.918ms or more, 2 of 10.5ms or more); its GC stopped them 3 times for at least 0.00s\n",
		"  waiting for a core during hold: kube-apiserver 39.4s, etcd 23.1s, kube-scheduler 2.0s, kwok-controller 2.0s\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPrintAPIServerTrace: the trace's busiest verbs with their shares,
// DELETE's though it is not among them, the slow ones' too, and every
// kind of goroutine's waits to run.
func TestPrintAPIServerTrace(t *testing.T) {
	var r runs.TrainResult
	r.APIServerTrace = &workload.APIServerTrace{Seconds: 30, Bytes: 12_500_000,
		Requests: map[string]*workload.TracedRequests{
			"delete": {Count: 4, Seconds: 2, RunningSeconds: 0.5, WaitToRunSeconds: 0.8, EtcdSeconds: 0.4, Slow: 1, SlowSeconds: 1, SlowRunning: 0.2, SlowWaitToRun: 0.5, SlowEtcd: 0.1,
				EtcdWaits: &workload.TracedEtcdWaits{Count: 8, Requests: 4, Seconds: 0.4, HandOverAtMostSeconds: 0.2, HandOverAtLeastSeconds: 0.04,
					BeforeWakeSeconds: 0.3, ReaderWaitToRunSeconds: 0.06, ReaderRunningSeconds: 0.04, NoNetworkWait: 2, Other: 1, OtherSeconds: 0.01,
					SendSampled: 3, SendSampledSeconds: 0.15, SendAtLeastSeconds: 0.006, SendAtMostSeconds: 0.0096, SendWriterWaitToRunSeconds: 0.0045}},
			"get":    {Count: 10, Seconds: 0.1, RunningSeconds: 0.05},
			"patch":  {Count: 9, Seconds: 0.1},
			"create": {Count: 8, Seconds: 0.1},
			"update": {Count: 7, Seconds: 0.1},
		},
		WaitsToRun:  map[string]*workload.TracedWaits{"requests": {Count: 50, Seconds: 1.3, AtLeast10ms: 7}, "etcd client": {Count: 9, Seconds: 0.1}},
		EtcdReaders: &workload.TracedReaders{Readers: 68, NetworkWakes: 900, WokenWithoutAnP: 40},
	}
	var b strings.Builder
	printTrain(&b, r)
	for _, want := range []string{
		"  apiserver trace, the hold's first 30s (12.5 MB): requests received and answered in it, their time, and of it running / else waiting to run / else waiting for etcd:\n",
		"    get: 10, mean 10ms: 50% / 0% / 0%\n",
		"    delete: 4, mean 500ms: 25% / 40% / 20%; 1 of 0.5s or more, mean 1.00s: 20% / 50% / 10%\n",
		"    delete's waits for etcd: 8 ended by a reader, in 4 requests, 100.0ms a request; the answer's hand-over in the apiserver at most 50%, at least 10%; before the reader's wake 75%, then the reader 15% waiting to run / 10% running / 0% blocked; in 2 the reader was not woken by bytes; 1 not split (ended otherwise, or on a lock); 3 sampled (a call's first wait, begun just after its request woke the connection's idle writer), mean 50.0ms, the call's send 2.00–3.20ms (the writer's wait to run from the wake to its first write 1.50ms)\n",
		"    etcd connections: 68 readers, woken 900 times by bytes to read, 40 of them by a thread without a P\n",
		"    goroutines' waits to run, every one: requests 50, 1.3s (7 of 10ms or more); etcd client 9, 0.1s (0 of 10ms or more)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPrintEtcdTrace: etcd's busiest methods with their parts a call,
// the lags at a connection's two ends, and the waits to run by kind.
func TestPrintEtcdTrace(t *testing.T) {
	var r runs.TrainResult
	r.EtcdTrace = &workload.EtcdTrace{Seconds: 180, Bytes: 40_000_000,
		Calls: map[string]*workload.TracedCalls{
			"Txn": {Count: 1000, Seconds: 4, FirstWaitToRunSeconds: 0.5, WaitToRunSeconds: 1, RunningSeconds: 0.5, ReceivingSeconds: 0.1,
				SendingSeconds: 0.2, BlockedSeconds: 2.2, AfterReadSeconds: 0.3, AfterRequestReadSeconds: 3.5, ReadBeforeHandler: 40},
			"Range": {Count: 500, Seconds: 0.5, RunningSeconds: 0.5},
		},
		Arrivals:    &workload.TracedWaits{Count: 1200, Seconds: 2.4, AtLeast10ms: 30},
		AnswerSends: &workload.TracedWaits{},
		WaitsToRun:  map[string]*workload.TracedWaits{"calls": {Count: 3000, Seconds: 1.2, AtLeast10ms: 5}, "grpc writer": {Count: 10, Seconds: 0.1}},
	}
	var b strings.Builder
	printTrain(&b, r)
	for _, want := range []string{
		"  etcd trace, the hold's first 180s (40.0 MB): calls begun and ended in it, a call's time in its goroutine, and of it waiting to run (first) / running / receiving the request / waiting to send / blocked else; then its least time with its whole request read:\n",
		"    Txn: 1000, mean 4.00ms: 1.00ms (0.50ms) / 0.50ms / 0.10ms / 0.20ms / 2.20ms; 3.50ms (40 read again before the handler)\n",
		"    Range: 500, mean 1.00ms: 0.00ms (0.00ms) / 1.00ms / 0.00ms / 0.00ms / 0.00ms; 0.00ms (0 read again before the handler)\n",
		"    from a reader's wake by bytes to the call it starts: 1200, mean 2.00ms (30 of 10ms or more); from the end of a call that woke a writer to its write: none seen\n",
		"    goroutines' waits to run, every one: calls 3000, 1.2s (5 of 10ms or more); grpc writer 10, 0.1s (0 of 10ms or more)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// train's summary says over how long the admitted jobs were admitted when
// there were several, and says nothing of it for one.
func TestPrintAdmittedSpan(t *testing.T) {
	at := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	var r runs.TrainResult
	r.Admission = &workload.AdmissionResult{Mode: workload.AdmissionQuota, By: workload.AdmitBySuspend, JobsAdmitted: 3,
		AdmittedAt: []time.Time{at, at.Add(time.Second), at.Add(1500 * time.Millisecond)}, AdmittedSpan: 1.5}
	var b strings.Builder
	printTrain(&b, r)
	if want := "  the 3 admitted, first to last, over 1.50s\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	r.Admission.AdmittedAt, r.Admission.AdmittedSpan = r.Admission.AdmittedAt[:1], 0
	b.Reset()
	printTrain(&b, r)
	if strings.Contains(b.String(), "first to last") {
		t.Errorf("one job admitted, yet a span is printed:\n%s", b.String())
	}
}

// With several jobs' own figures the summary names the slowest to run
// whole after its fit, with its parts and its bindings' split; with one
// it names none.
func TestPrintSlowestAdmitted(t *testing.T) {
	var r runs.TrainResult
	// Four admitted, three of which ran whole: its place is among the four.
	r.Admission = &workload.AdmissionResult{Mode: workload.AdmissionQuota, By: workload.AdmitBySuspend, JobsAdmitted: 4, Jobs: []workload.AdmittedJob{
		{Job: "t-0", Order: 1, StartAfterFit: 1.5},
		{Job: "t-2", Order: 3, StartAfterFit: 6.75, AdmitAfterFit: 0.25, Ungate: 0.5, PodsCreated: 1, PodsBound: 4, PodsRunning: 1,
			BindSplit: &workload.JobBinds{ToFirstBind: 0.5, Binds: 3.25, BindsSeen: 0.25, Sent: 3.2, ServedMax: 0.012}},
		{Job: "t-1", Order: 2, StartAfterFit: 3},
	}}
	var b strings.Builder
	printTrain(&b, r)
	for _, want := range []string{
		"  the slowest, t-2 (admitted 3 of 4): 6.75s = to admission 0.25s + release 0.50s + pods seen created 1.00s, bound 4.00s, running 1.00s\n",
		"    its bound part: to the first binding 0.50s, the bindings 3.25s (sent over 3.20s, the slowest answered in 0.012s), seen 0.25s\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	r.Admission.Jobs = r.Admission.Jobs[:1]
	b.Reset()
	printTrain(&b, r)
	if strings.Contains(b.String(), "the slowest") {
		t.Errorf("one job, yet a slowest is named:\n%s", b.String())
	}
}
