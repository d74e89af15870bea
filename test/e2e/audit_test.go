//go:build e2e

package e2e

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
)

const auditCluster = "gf-audit-e2e"

// TestAuditLog runs a fleet whose profile gives the apiserver an audit
// policy (the twelfth part's, scenarios/profiles/lever-cm-qps-audit-gang.yaml):
// a whole-job restart's teardown is split where the apiserver saw it,
// into stages that add up to it, with the sibling deleted by the garbage
// collector, and the run's requests are counted by controller. A policy
// the apiserver would refuse is refused before anything is created.
func TestAuditLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", auditCluster) })

	t.Run("a bad policy is refused before anything is created", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "profiles", "lever-cm-qps-audit-gang.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(strings.Replace(string(data), "    - level: Metadata\n", "    - level: Everything\n", 1), "name: lever-cm-qps-audit-gang", "name: bad-audit", 1)
		path := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		r := ghostfleet(t, ctx, "up", "--name", auditCluster, "--nodes", "5", "--prometheus-port", "0", "--profile-file", path)
		if r.code == 0 || !strings.Contains(r.errOut, `apiServer.auditPolicy: rules[3].level: Unsupported value: "Everything"`) {
			t.Errorf("up with a bad policy: exit %d, %q", r.code, r.errOut)
		}
		if ghostfleet(t, ctx, "status", "--name", auditCluster).code == 0 {
			t.Error("a fleet was created from a refused profile")
		}
	})

	profile := filepath.Join("..", "..", "scenarios", "profiles", "lever-cm-qps-audit-gang.yaml")
	if r := ghostfleet(t, ctx, "up", "--name", auditCluster, "--nodes", "20", "--prometheus-port", "0", "--profile-file", profile); r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	if fleet.AuditLogPath(auditCluster) == "" {
		t.Fatal("the fleet keeps no audit log")
	}
	cs, err := fleet.Own(auditCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "gf-audit-e2e"
	trained := trainInBackground(t, ctx, "--jobs", "2", "--pods-per-job", "2", "--namespace", ns, "--hold", "40s", "--restart", "job",
		"--trace-apiserver", "20s", "--trace-etcd", "20s", "--name", auditCluster, "--results-dir", t.TempDir())
	lost := runningWorkers(t, ctx, cs, ns, 4)[0]
	if err := cs.CoreV1().Pods(ns).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	train := trained()
	st := train.TeardownStages
	if train.JobRestarts != 1 || train.Teardown.Count != 1 || st == nil {
		t.Fatalf("restarts %d, teardowns %+v, stages %+v; want one of each", train.JobRestarts, train.Teardown, st)
	}
	// The sibling ran on until the garbage collector deleted it for the
	// restart's foreground delete of the Job.
	if st.Split != 1 || st.Unsplit != 0 || st.DeletedBy["generic-garbage-collector"] != 1 || st.Notice == nil || st.Notice.Mean <= 0 || st.PodDeletes.Mean < 0 || st.LastDelete.Mean <= 0 {
		t.Errorf("stages %+v; want the one teardown split, its sibling deleted by the garbage collector after the Job's DELETE", st)
	}
	sum := st.Notice.Mean + st.ToPodDeletes.Mean + st.PodDeletes.Mean + st.LastDelete.Mean + st.Seen.Mean
	if math.Abs(sum-st.Total.Mean) > 1e-6 || math.Abs(st.Total.Mean-train.Teardown.P50) > 1e-6 {
		t.Errorf("stages add up to %.6fs, the split teardown is %.6fs, the teardown %.6fs: want all three equal", sum, st.Total.Mean, train.Teardown.P50)
	}
	// The collector GETs a pod or the Job before it deletes a worker
	// (upstream's attemptToDeleteItem reads the object first).
	if got := st.DeleterFirst["get pods"] + st.DeleterFirst["get jobs"]; got != 1 || st.JobAnswered == nil || st.JobAnswered.Mean <= 0 || st.DeleterWork.Mean <= 0 {
		t.Errorf("the collector's first requests %v, the Job's DELETE answered in %+v, the collector's work %+v; want a GET first, both stages above 0", st.DeleterFirst, st.JobAnswered, st.DeleterWork)
	}
	a := train.AuditedRequests
	if a["train"]["job-controller create pods"] < 4 || a["hold"]["generic-garbage-collector delete pods"] < 1 || a["hold"]["ghostfleet-load delete jobs"] != 1 ||
		a["hold"]["generic-garbage-collector get jobs"] < 1 {
		t.Errorf("audited requests %v; want the Job controller's 4 creations during train, the garbage collector's GET of the Job and DELETE and the restarter's DELETE during the hold", a)
	}
	// The collector's DELETEs' time holds the one that stopped the last
	// worker; the apiserver's calls to etcd were read.
	if gc := train.AuditedTimes["hold"]["generic-garbage-collector delete pods"]; gc.Seconds < st.LastDelete.Mean-1e-6 {
		t.Errorf("the apiserver's time on the collector's DELETEs %+v; want at least the last worker's DELETE's %.6fs", gc, st.LastDelete.Mean)
	}
	if etcd := train.APIServer["hold"].Etcd; etcd["update pods"].Count < 1 {
		t.Errorf("the apiserver's calls to etcd in the hold %v; want updates of pods", etcd)
	}
	// etcd's side of those calls: its writes are Txns that took time
	// inside etcd (keyed by method alone: the unary calls were told from
	// the streams) and were synced to its WAL.
	if e := train.Etcd["hold"]; e.RPCs["Txn"].Count < 1 || e.RPCs["Txn"].Sum <= 0 || e.RPCs["Range"].Count < 1 ||
		e.Apply["Txn"].Count < 1 || e.WALFsync == nil || e.WALFsync.Count < 1 || e.BackendCommit == nil {
		t.Errorf("etcd in the hold %+v; want Txns and Ranges timed, applies, WAL syncs and commits", e)
	}
	// Its goroutines waited to run during the hold, in buckets read from
	// its /metrics (none of them negative: the readings were of one
	// process), and its threads waited for a core (the kernel counts
	// every wake-up's delay, however short).
	sched, negative := train.APIServer["hold"].GoSched, false
	if sched != nil {
		for _, b := range sched.Buckets {
			negative = negative || b.Count < 0
		}
	}
	if sched == nil || sched.Count < 1 || len(sched.Buckets) < 2 || negative || train.RunQueue["hold"]["kube-apiserver"] <= 0 {
		t.Errorf("the apiserver's goroutines' waits in the hold %+v, its processes' waits for a core %v; want waits in buckets, none negative, and the apiserver's wait for a core above 0", sched, train.RunQueue["hold"])
	}
	// The trace of the hold's first 20s holds the restart's DELETE of the
	// Job and the collector's of the sibling, which ran and waited for
	// etcd; the readers of etcd's answers were told apart.
	tr := train.APIServerTrace
	if tr == nil || tr.Requests["delete"] == nil || tr.WaitsToRun["etcd client"] == nil || tr.WaitsToRun["requests"] == nil {
		t.Fatalf("the apiserver's trace %+v; want DELETEs, and waits to run of requests and of the etcd client", tr)
	}
	if d := tr.Requests["delete"]; d.Count < 2 || d.RunningSeconds <= 0 || d.EtcdSeconds <= 0 {
		t.Errorf("the traced DELETEs %+v; want at least 2, running and waiting for etcd", d)
	}
	// Their waits for etcd were ended by the connections' readers, whose
	// reads were seen (gRPC reads through the poller's raw connection),
	// so the hand-over is bounded: at least no more than at most, at most
	// no more than the wait.
	w := tr.Requests["delete"].EtcdWaits
	if w == nil || w.Count < 2 || w.Requests < 2 || w.ReadMissed*10 > w.Count ||
		w.HandOverAtLeastSeconds > w.HandOverAtMostSeconds || w.HandOverAtMostSeconds > w.Seconds+1e-9 {
		t.Errorf("the traced DELETEs' waits for etcd %+v; want at least 2 ended by readers, in 2 requests, reads seen, at least ≤ at most ≤ the wait", w)
	}
	// On a quiet fleet calls often find their connection's writer
	// waiting for work: their sends are sampled and timed, and the
	// writers' draining writes seen (the marks match kube-apiserver's
	// gRPC).
	waits, sampled, drained, least := 0, 0, 0, 0.0
	for _, r := range tr.Requests {
		if e := r.EtcdWaits; e != nil {
			waits, sampled, drained, least = waits+e.Count, sampled+e.SendSampled, drained+e.SendDrained, least+e.SendAtLeastSeconds
		}
	}
	if sampled*10 < waits || drained < 1 || least <= 0 {
		t.Errorf("the traced requests' waits for etcd: %d, %d of them sampled, %d sent by a draining write seen, their sends at least %gs; want a tenth or more sampled, draining writes seen, the sends timed",
			waits, sampled, drained, least)
	}
	if r := tr.EtcdReaders; r == nil || r.Readers < 1 || r.NetworkWakes < 1 || tr.WaitsToRun["etcd writer"] == nil {
		t.Errorf("the trace's etcd readers %+v and writers' waits %+v; want readers woken by bytes, and writers", r, tr.WaitsToRun["etcd writer"])
	}
	// etcd's trace over the same window holds the writes those DELETEs
	// made as Txns, every call known by its handler's method, and its
	// gRPC connections' readers starting calls and writers sending answers.
	et := train.EtcdTrace
	if et == nil || et.Calls["Txn"] == nil || et.Calls["Range"] == nil {
		t.Fatalf("etcd's trace %+v; want Txns and Ranges", et)
	}
	for method, c := range et.Calls {
		sum := c.WaitToRunSeconds + c.RunningSeconds + c.ReceivingSeconds + c.SendingSeconds + c.BlockedSeconds
		if c.Count < 1 || math.Abs(sum-c.Seconds) > 1e-6 || c.FirstWaitToRunSeconds > c.WaitToRunSeconds {
			t.Errorf("etcd's traced %s calls %+v: want some, parts adding up to their %gs (got %g)", method, c, c.Seconds, sum)
		}
	}
	// Their least with the request read is from the reader's reads, seen.
	if txn := et.Calls["Txn"]; txn.Count < 2 || txn.BlockedSeconds <= 0 || txn.AfterReadSeconds <= 0 || txn.AfterRequestReadSeconds <= 0 {
		t.Errorf("etcd's traced Txns %+v; want at least the 2 DELETEs', blocked for raft, started and served after reads seen", txn)
	}
	if u := et.Calls["unknown"]; u != nil && u.Count*10 > et.Calls["Txn"].Count+et.Calls["Range"].Count {
		t.Errorf("etcd's traced calls of no known method %+v; want at most a tenth of the Txns and Ranges", u)
	}
	if et.Arrivals.Count < 1 || et.AnswerSends.Count < 1 || et.WaitsToRun["grpc reader"] == nil || et.WaitsToRun["grpc writer"] == nil {
		t.Errorf("etcd's trace: arrivals %+v, answer sends %+v, waits to run %v; want readers starting calls and writers sending answers", et.Arrivals, et.AnswerSends, et.WaitsToRun)
	}

	// A gang admitted by unsuspending its Job, at once as it fits (the
	// profile gang-schedules): the part from its pods all seen to all
	// bound splits at their bindings, received and answered, and the
	// scheduler's pod-group cycle and its client's POSTs are read from its
	// own /metrics (experiment F, twenty-fifth part, ninth sitting).
	adm := trainInBackground(t, ctx, "--jobs", "1", "--pods-per-job", "3", "--gpus-per-pod", "8", "--namespace", ns+"-adm", "--admission", "quota", "--admit-by", "suspend",
		"--timeout", "3m", "--stall", "0", "--name", auditCluster, "--results-dir", t.TempDir())()
	q := adm.Admission
	if adm.JobsStarted != 1 || q == nil || q.PodsBound == nil || q.ToFirstBind == nil || q.Binds == nil || q.BindsSeen == nil || q.BindsUnsplit != 0 {
		t.Fatalf("admitted by suspend: %d jobs started, admission %+v; want 1, its bound part split", adm.JobsStarted, q)
	}
	if sum := q.ToFirstBind.P50 + q.Binds.P50 + q.BindsSeen.P50; math.Abs(sum-q.PodsBound.P50) > 0.01 {
		t.Errorf("the bound part's parts %g + %g + %g s; want them adding up to its %g s", q.ToFirstBind.P50, q.Binds.P50, q.BindsSeen.P50, q.PodsBound.P50)
	}
	// Before its binding, each pod but the last to be assumed waited at
	// the gang's Permit, and its binding cycle first PATCHed its status
	// (NominatedNodeName, beta and on in v1.36) on the bindings' client.
	if got, patched := adm.AuditedRequests["train"]["scheduler create pods/binding"], adm.AuditedRequests["train"]["scheduler patch pods/status"]; got < 3 || patched < 2 {
		t.Errorf("the scheduler's bindings in the audit log: %d, its status PATCHes %d; want the job's 3 bindings and 2 PATCHes of the pods that waited at Permit, at least", got, patched)
	}
	// kwok marked each of the job's 3 pods running with a status write
	// of its own.
	marked := 0
	for _, pods := range adm.PodStatusWrites["kwok-controller"][ns+"-adm"] {
		marked += pods
	}
	if marked != 3 {
		t.Errorf("pods by kwok's status writes to each %v; want the job's 3 pods", adm.PodStatusWrites)
	}
	if sc := adm.Scheduler["train"]; sc.PodGroupAttempts["scheduled"].Count < 1 || sc.PodGroupAlgorithm == nil || sc.PodGroupAlgorithm.Count < 1 || sc.RateLimiter["POST"].Count < 3 || sc.RateLimiter["PATCH"].Count < 2 {
		t.Errorf("the scheduler during train %+v; want the gang's pod-group cycle, its placing timed, and its requests on its clients' limiters: the bindings' (and events') POSTs, the status PATCHes", sc)
	}
}
