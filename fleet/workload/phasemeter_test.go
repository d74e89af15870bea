package workload

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// cmText is a controller-manager /metrics with the three histograms the
// meter reads, at the given totals.
func cmText(deleteCount, deleteSum, gcCount, gcSum float64) []byte {
	return []byte(fmt.Sprintf(`# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="DELETE",le="+Inf"} %[1]g
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="DELETE"} %[2]g
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="DELETE"} %[1]g
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="GET",le="+Inf"} 10
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="GET"} 1
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="GET"} 10
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="garbage_collector_attempt_to_delete",le="+Inf"} %[3]g
workqueue_work_duration_seconds_sum{name="garbage_collector_attempt_to_delete"} %[4]g
workqueue_work_duration_seconds_count{name="garbage_collector_attempt_to_delete"} %[3]g
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="job",le="+Inf"} 4
workqueue_queue_duration_seconds_sum{name="job"} 0.5
workqueue_queue_duration_seconds_count{name="job"} 4
`, deleteCount, deleteSum, gcCount, gcSum))
}

// endpointOf serves readings in turn, counting the reads in n.
func endpointOf(job string, n *int, readings ...[]byte) *metrics.Endpoint {
	return &metrics.Endpoint{Job: job, Fetch: func(context.Context) ([]byte, error) {
		*n++
		return readings[*n-1], nil
	}}
}

// The meter records, per phase, what each histogram added since the last
// reading, and leaves out what did not move (GET, the job queue).
func TestControllerManagerMeterPhases(t *testing.T) {
	n := 0
	e := endpointOf("kube-controller-manager", &n, cmText(0, 0, 0, 0), cmText(100, 4, 50, 2), cmText(420, 20, 370, 18))
	var warned []string
	report := func(ev progress.Event) { warned = append(warned, ev.Message) }
	m := startControlPlaneMeters(context.Background(), MeterSources{ControllerManager: e}, report)
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	want := map[string]ControllerManagerWaits{
		"train": {RateLimiter: map[string]metrics.Tally{"DELETE": {Count: 100, Sum: 4}}, Queued: map[string]metrics.Tally{}, Work: map[string]metrics.Tally{"garbage_collector_attempt_to_delete": {Count: 50, Sum: 2}}},
		"hold":  {RateLimiter: map[string]metrics.Tally{"DELETE": {Count: 320, Sum: 16}}, Queued: map[string]metrics.Tally{}, Work: map[string]metrics.Tally{"garbage_collector_attempt_to_delete": {Count: 320, Sum: 16}}},
	}
	if !reflect.DeepEqual(res.ControllerManager, want) || res.APIServer != nil || res.CPU != nil || len(warned) != 0 {
		t.Errorf("controller-manager %+v, apiserver %+v, CPU %+v, warnings %q; want %+v, nothing unmetered, no warning", res.ControllerManager, res.APIServer, res.CPU, warned, want)
	}
}

// apiserverText is an apiserver /metrics with DELETE pods, a watch,
// APF's waits and etcd's updates of pods (two per DELETE) at the given
// totals, and etcd's gets of jobs, which do not move.
func apiserverText(deletes, deleteSum, watchSum, apfSum float64) []byte {
	return []byte(fmt.Sprintf(`# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="DELETE",le="+Inf"} %[1]g
apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="DELETE"} %[2]g
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="DELETE"} %[1]g
apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="WATCH",le="+Inf"} %[1]g
apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="WATCH"} %[3]g
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="WATCH"} %[1]g
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="kube-controller-manager",priority_level="workload-high",le="+Inf"} %[1]g
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="kube-controller-manager",priority_level="workload-high"} %[4]g
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="kube-controller-manager",priority_level="workload-high"} %[1]g
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{group="",operation="update",resource="pods",le="+Inf"} %[5]g
etcd_request_duration_seconds_sum{group="",operation="update",resource="pods"} %[6]g
etcd_request_duration_seconds_count{group="",operation="update",resource="pods"} %[5]g
etcd_request_duration_seconds_bucket{group="batch",operation="get",resource="jobs",le="+Inf"} 3
etcd_request_duration_seconds_sum{group="batch",operation="get",resource="jobs"} 0.01
etcd_request_duration_seconds_count{group="batch",operation="get",resource="jobs"} 3
# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="6.399999999999999e-08"} 50
go_sched_latencies_seconds_bucket{le="0.0009175039999999999"} %[7]g
go_sched_latencies_seconds_bucket{le="0.010485759999999998"} %[8]g
go_sched_latencies_seconds_bucket{le="+Inf"} %[8]g
go_sched_latencies_seconds_sum %[9]g
go_sched_latencies_seconds_count %[8]g
# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{resource="pods"} %[11]g
apiserver_terminated_watchers_total{group="coordination.k8s.io",resource="leases"} 3
# TYPE go_sched_pauses_total_gc_seconds histogram
go_sched_pauses_total_gc_seconds_bucket{le="+Inf"} %[1]g
go_sched_pauses_total_gc_seconds_sum %[10]g
go_sched_pauses_total_gc_seconds_count %[1]g
`, deletes, deleteSum, watchSum, apfSum, 2*deletes, deleteSum/8, 10*deletes, 11*deletes, deletes/1024, deletes/8192, deletes/10))
}

// The apiserver's requests are recorded by verb and resource, APF's waits
// by priority level, its calls to etcd by operation and resource, its
// goroutines' waits to run by bucket (every bucket, one that did not move
// too), its GC pauses and the watches it closed for falling behind (the
// leases' did not move), and watches (a connection's life) not at all;
// the scheduler's attempts by result.
func TestAPIServerMeterPhases(t *testing.T) {
	n := 0
	e := endpointOf("kube-apiserver", &n, apiserverText(10, 1, 100, 0), apiserverText(30, 1.5, 900, 0.25))
	s := 0
	sched := endpointOf("kube-scheduler", &s, schedulerText(5, 2, 1), schedulerText(45, 2, 3))
	m := startControlPlaneMeters(context.Background(), MeterSources{APIServer: e, Scheduler: sched}, func(ev progress.Event) { t.Errorf("warning %q", ev.Message) })
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	want := map[string]APIServerTimes{"hold": {
		Requests:        map[string]metrics.Tally{"DELETE pods": {Count: 20, Sum: 0.5}},
		APFWait:         map[string]metrics.Tally{"workload-high": {Count: 20, Sum: 0.25}},
		Etcd:            map[string]metrics.Tally{"update pods": {Count: 40, Sum: 0.0625}},
		EtcdByOperation: map[string]metrics.Tally{"create": {}, "update": {Count: 40, Sum: 0.0625}, "delete": {}, "get": {}, "list": {}, "listWithCount": {}, "listOnlyKeys": {}},
		GoSched: &Waits{Count: 220, Seconds: 20.0 / 1024, Buckets: []Bucket{
			{AtLeast: 0, Count: 0}, {AtLeast: 6.399999999999999e-08, Count: 200}, {AtLeast: 0.0009175039999999999, Count: 20}, {AtLeast: 0.010485759999999998, Count: 0},
		}},
		GCPauses:           &metrics.Tally{Count: 20, Sum: 20.0 / 8192},
		TerminatedWatchers: map[string]float64{"pods": 2},
	}}
	if !reflect.DeepEqual(res.APIServer, want) {
		t.Errorf("apiserver %+v, want %+v", res.APIServer, want)
		if got := res.APIServer["hold"]; got.GoSched != nil && got.GCPauses != nil {
			t.Errorf("goroutines' waits %+v, GC pauses %+v; want %+v, %+v", *got.GoSched, *got.GCPauses, *want["hold"].GoSched, *want["hold"].GCPauses)
		}
	}
	wantSched := map[string]SchedulerAttempts{"hold": {
		Attempts:          map[string]metrics.Tally{"unschedulable": {Count: 40, Sum: 4}},
		PodGroupAttempts:  map[string]metrics.Tally{"unschedulable": {Count: 2, Sum: 1}},
		PodGroupAlgorithm: &metrics.Tally{Count: 2, Sum: 0.5},
		RateLimiter:       map[string]metrics.Tally{"PATCH": {Count: 40, Sum: 0.4}},
	}}
	if !reflect.DeepEqual(res.Scheduler, wantSched) {
		t.Errorf("scheduler %+v, want %+v (the scheduled attempts and the POSTs did not move)", res.Scheduler, wantSched)
	}
}

// schedulerText is a scheduler /metrics with its attempts (scheduled
// ones, and unschedulable ones at 0.1 s each), its unschedulable pod-group
// cycles at 0.5 s each, 0.25 s of it placing, and its client's waits, a
// POST per scheduled pod and a PATCH per unschedulable one, 0.01 s each.
func schedulerText(unschedulable, scheduled, groups float64) []byte {
	return []byte(fmt.Sprintf(`# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="+Inf"} %[1]g
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="unschedulable"} %[3]g
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="unschedulable"} %[1]g
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} %[2]g
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.5
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} %[2]g
# TYPE scheduler_podgroup_scheduling_attempt_duration_seconds histogram
scheduler_podgroup_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="+Inf"} %[4]g
scheduler_podgroup_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="unschedulable"} %[5]g
scheduler_podgroup_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="unschedulable"} %[4]g
# TYPE scheduler_podgroup_scheduling_algorithm_duration_seconds histogram
scheduler_podgroup_scheduling_algorithm_duration_seconds_bucket{le="+Inf"} %[4]g
scheduler_podgroup_scheduling_algorithm_duration_seconds_sum %[6]g
scheduler_podgroup_scheduling_algorithm_duration_seconds_count %[4]g
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="POST",le="+Inf"} %[2]g
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="POST"} %[7]g
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="POST"} %[2]g
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="PATCH",le="+Inf"} %[1]g
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="PATCH"} %[8]g
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="PATCH"} %[1]g
`, unschedulable, scheduled, unschedulable/10, groups, groups*0.5, groups*0.25, scheduled/100, unschedulable/100))
}

// etcdText is an etcd /metrics (--metrics=extensive) with txns Txns of
// 5 ms each, a Range that does not move, a Watch stream living watchSum
// seconds, an apply per Txn and a WAL sync per 4.
func etcdText(txns, watchSum float64) []byte {
	return []byte(fmt.Sprintf(`# TYPE grpc_server_handling_seconds histogram
grpc_server_handling_seconds_bucket{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary",le="+Inf"} %[1]g
grpc_server_handling_seconds_sum{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} %[2]g
grpc_server_handling_seconds_count{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} %[1]g
grpc_server_handling_seconds_bucket{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary",le="+Inf"} 7
grpc_server_handling_seconds_sum{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 0.07
grpc_server_handling_seconds_count{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 7
grpc_server_handling_seconds_bucket{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream",le="+Inf"} %[1]g
grpc_server_handling_seconds_sum{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} %[3]g
grpc_server_handling_seconds_count{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} %[1]g
# TYPE etcd_server_apply_duration_seconds histogram
etcd_server_apply_duration_seconds_bucket{op="Txn",success="true",version="v3",le="+Inf"} %[1]g
etcd_server_apply_duration_seconds_sum{op="Txn",success="true",version="v3"} %[4]g
etcd_server_apply_duration_seconds_count{op="Txn",success="true",version="v3"} %[1]g
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} %[5]g
etcd_disk_wal_fsync_duration_seconds_sum %[4]g
etcd_disk_wal_fsync_duration_seconds_count %[5]g
# TYPE etcd_disk_backend_commit_duration_seconds histogram
etcd_disk_backend_commit_duration_seconds_bucket{le="+Inf"} 2
etcd_disk_backend_commit_duration_seconds_sum 0.01
etcd_disk_backend_commit_duration_seconds_count 2
`, txns, txns/200, watchSum, txns/1000, txns/4))
}

// etcd's unary calls are recorded by method, its streams not at all, its
// applies by operation, and its disk's syncs and commits whether they
// moved or not.
func TestEtcdMeterPhases(t *testing.T) {
	n := 0
	e := endpointOf("etcd", &n, etcdText(100, 50), etcdText(500, 900))
	m := startControlPlaneMeters(context.Background(), MeterSources{Etcd: e}, func(ev progress.Event) { t.Errorf("warning %q", ev.Message) })
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	want := map[string]EtcdTimes{"hold": {
		RPCs:          map[string]metrics.Tally{"Txn": {Count: 400, Sum: 2}},
		Apply:         map[string]metrics.Tally{"Txn": {Count: 400, Sum: 0.4}},
		WALFsync:      &metrics.Tally{Count: 100, Sum: 0.4},
		BackendCommit: &metrics.Tally{},
	}}
	if !reflect.DeepEqual(res.Etcd, want) || res.APIServer != nil {
		t.Errorf("etcd %+v, apiserver %+v; want %+v and no apiserver", res.Etcd, res.APIServer, want)
	}
}

// An etcd that does not time its calls (--metrics=basic) gets a warning
// and no calls, not calls of 0 seconds; its disk is still read.
func TestEtcdMeterUntimed(t *testing.T) {
	basic := func(syncs int) []byte {
		return []byte(fmt.Sprintf("# TYPE etcd_disk_wal_fsync_duration_seconds histogram\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} %[1]d\netcd_disk_wal_fsync_duration_seconds_sum 0.5\netcd_disk_wal_fsync_duration_seconds_count %[1]d\n", syncs))
	}
	n := 0
	e := endpointOf("etcd", &n, basic(10), basic(30))
	var warned []string
	m := startControlPlaneMeters(context.Background(), MeterSources{Etcd: e}, func(ev progress.Event) { warned = append(warned, ev.Message) })
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	if got := res.Etcd["hold"]; got.RPCs != nil || got.WALFsync == nil || got.WALFsync.Count != 20 || len(warned) != 1 || warned[0] != EtcdCallsUntimed {
		t.Errorf("etcd %+v, warnings %q; want no calls, 20 WAL syncs and the one warning", got, warned)
	}
}

// CPU readings are tallies with no count: what grew is kept, what did not
// is left out, and a process whose time went down (a new one) or that is
// gone is a reset.
func TestBetweenCPU(t *testing.T) {
	before := reading{cpuSource: {"kube-apiserver": {Sum: 10}, "etcd": {Sum: 4}}}
	after := reading{cpuSource: {"kube-apiserver": {Sum: 12.5}, "etcd": {Sum: 4}, "kwok-controller": {Sum: 1}}}
	got, err := between(before, after)
	want := reading{cpuSource: {"kube-apiserver": {Sum: 2.5}, "kwok-controller": {Sum: 1}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("between: %v, %v; want %v", got, err, want)
	}
	if _, err := between(after, before); err == nil || !strings.Contains(err.Error(), "went down between two readings") {
		t.Errorf("a process restarted: %v", err)
	}
	gone := reading{cpuSource: {"kube-apiserver": {Sum: 13}}}
	if _, err := between(after, gone); err == nil || !strings.Contains(err.Error(), "is gone from the later reading") {
		t.Errorf("a process stopped: %v", err)
	}
}

// A reading that fails is said once and ends that source's metering: no
// phase gets figures from readings on either side of a gap, and the other
// sources go on.
func TestMeterStopsOnAFailedRead(t *testing.T) {
	n := 0
	e := &metrics.Endpoint{Job: "kube-controller-manager", Fetch: func(context.Context) ([]byte, error) {
		n++
		if n == 2 {
			return nil, errors.New("connection refused")
		}
		return cmText(float64(n), 1, 1, 1), nil
	}}
	a := 0
	api := endpointOf("kube-apiserver", &a, apiserverText(1, 1, 1, 1), apiserverText(2, 2, 2, 2), apiserverText(3, 3, 3, 3))
	var warned []string
	m := startControlPlaneMeters(context.Background(), MeterSources{ControllerManager: e, APIServer: api}, func(ev progress.Event) { warned = append(warned, ev.Message) })
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	if res.ControllerManager != nil || n != 2 || len(warned) != 1 || !strings.Contains(warned[0], ControllerManagerUnrecorded+" from here on: kube-controller-manager /metrics: connection refused") {
		t.Errorf("phases %+v after %d reads, warnings %q; want none after 2, one naming the failure", res.ControllerManager, n, warned)
	}
	if len(res.APIServer) != 2 {
		t.Errorf("apiserver phases %+v: want train and hold, its reads did not fail", res.APIServer)
	}
	off := startControlPlaneMeters(context.Background(), MeterSources{}, nil)
	off.phase(context.Background(), "train")
	off.record(&res)
	if res.ControllerManager != nil || res.APIServer != nil || res.CPU != nil {
		t.Errorf("no sources: %+v %+v %+v, want none", res.ControllerManager, res.APIServer, res.CPU)
	}
}

// A reading whose totals went down (the controller-manager restarted) is
// not a difference: the phases before it keep their figures, it and the
// rest get none.
func TestMeterStopsOnAReset(t *testing.T) {
	n := 0
	e := endpointOf("kube-controller-manager", &n, cmText(0, 0, 0, 0), cmText(100, 4, 50, 2), cmText(20, 1, 5, 1))
	var warned []string
	m := startControlPlaneMeters(context.Background(), MeterSources{ControllerManager: e}, func(ev progress.Event) { warned = append(warned, ev.Message) })
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	_, hold := res.ControllerManager["hold"]
	if res.ControllerManager["train"].RateLimiter["DELETE"] != (metrics.Tally{Count: 100, Sum: 4}) || hold || len(warned) != 1 || !strings.Contains(warned[0], "went down between two readings") {
		t.Errorf("phases %+v, warnings %q; want train's figures, no hold, one warning of the reset", res.ControllerManager, warned)
	}
}

// A process's wait for a core adds up its threads' growth between
// readings: a thread that ends keeps what it had added, a new thread (or
// a thread id reused with less wait) counts in full; a process that
// stopped or restarted, or a read that fails, is an error.
func TestRunQueueTotals(t *testing.T) {
	ms := time.Millisecond
	api := func(threads map[int]time.Duration) fleet.ProcessWaits {
		return fleet.ProcessWaits{PID: 10, Threads: threads}
	}
	etcd := fleet.ProcessWaits{PID: 20, Threads: map[int]time.Duration{20: 30 * ms}}
	reads := []map[string]fleet.ProcessWaits{
		{"kube-apiserver": api(map[int]time.Duration{10: 100 * ms, 11: 50 * ms}), "etcd": etcd},
		{"kube-apiserver": api(map[int]time.Duration{10: 160 * ms, 12: 5 * ms}), "etcd": etcd}, // 11 ended, 12 is new
		{"kube-apiserver": api(map[int]time.Duration{10: 170 * ms, 12: 2 * ms}), "etcd": etcd}, // 12 reused
	}
	read := func(reads []map[string]fleet.ProcessWaits) func(string) (map[string]fleet.ProcessWaits, error) {
		i := 0
		return func(string) (map[string]fleet.ProcessWaits, error) {
			if i == len(reads) {
				return nil, errors.New("no such process")
			}
			i++
			return reads[i-1], nil
		}
	}
	totals := runQueueTotals(read(reads))
	want := []map[string]time.Duration{
		{"kube-apiserver": 150 * ms, "etcd": 30 * ms},
		{"kube-apiserver": 215 * ms, "etcd": 30 * ms},
		{"kube-apiserver": 227 * ms, "etcd": 30 * ms},
	}
	for n, w := range want {
		if got, err := totals("gf"); err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("reading %d: %v, %v; want %v", n+1, got, err, w)
		}
	}
	if _, err := totals("gf"); err == nil {
		t.Error("a failed read was not returned")
	}
	restarted := fleet.ProcessWaits{PID: 21, Threads: map[int]time.Duration{21: 40 * ms}}
	for name, second := range map[string]map[string]fleet.ProcessWaits{
		"restarted": {"kube-apiserver": reads[0]["kube-apiserver"], "etcd": restarted},
		"stopped":   {"kube-apiserver": reads[0]["kube-apiserver"]},
	} {
		totals := runQueueTotals(read([]map[string]fleet.ProcessWaits{reads[0], second}))
		_, _ = totals("gf")
		if _, err := totals("gf"); err == nil || !strings.Contains(err.Error(), "etcd (pid 20) stopped or restarted") {
			t.Errorf("etcd %s: %v", name, err)
		}
	}
}

// The apiserver's calls to etcd are summed by operation over resources,
// every operation there, an unknown one too.
func TestByOperation(t *testing.T) {
	got := byOperation(map[string]metrics.Tally{"update pods": {Count: 2, Sum: 1}, "update jobs": {Count: 1, Sum: 0.5}, "get pods": {Count: 3, Sum: 0.25}, "compact ": {Count: 1, Sum: 0.5}})
	want := map[string]metrics.Tally{"create": {}, "update": {Count: 3, Sum: 1.5}, "delete": {}, "get": {Count: 3, Sum: 0.25}, "list": {}, "listWithCount": {}, "listOnlyKeys": {}, "compact": {Count: 1, Sum: 0.5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// The machine's speed by phase is the mean of the sampler's trials in
// it, all and those that kept their core, by work: a phase with none has
// none, not a mean of 0 ms, and a work with no trial on its core no mean
// of them.
func TestSpeedByPhase(t *testing.T) {
	speed := func(cache, cacheMs, cleanCache, cleanCacheMs, memory, memoryMs float64) reading {
		return reading{speedSource: {
			"cache": {Count: cache, Sum: cacheMs}, "cache on core": {Count: cleanCache, Sum: cleanCacheMs},
			"memory": {Count: memory, Sum: memoryMs}, "memory on core": {Count: 0, Sum: 0},
		}}
	}
	totals := []reading{speed(1, 10, 1, 10, 1, 25), speed(4, 46, 3, 31, 4, 100), speed(4, 46, 3, 31, 4, 100)}
	n := 0
	m := startControlPlaneMeters(context.Background(), MeterSources{}, func(ev progress.Event) { t.Errorf("warning %q", ev.Message) })
	m.speed = startPhaseMeter(context.Background(), SpeedUnrecorded, func(context.Context) (reading, error) {
		n++
		return totals[n-1], nil
	}, m.speed.report)
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	var res TrainResult
	m.record(&res)
	want := map[string]SpeedSamples{"train": {
		"cache":  {Trials: 3, CPUMs: 12, OnCore: 2, OnCoreCPUMs: 10.5},
		"memory": {Trials: 3, CPUMs: 25},
	}}
	if !reflect.DeepEqual(res.HostSpeed, want) {
		t.Errorf("speed by phase %+v, want %+v", res.HostSpeed, want)
	}
}
