//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

const loadCluster = "ghostfleet-e2e-load"

// TestWorkloads runs load and churn at small size on a real fleet and
// checks every reported field for presence and sanity (no timing
// thresholds: these machines are noisy).
func TestWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", loadCluster) })
	if r := ghostfleet(t, ctx, "up", "--name", loadCluster, "--nodes", "100", "--prometheus-port", fmt.Sprint(freePort(t))); r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	resultsDir := t.TempDir()

	t.Run("load 400 x 1", func(t *testing.T) {
		r := ghostfleet(t, ctx, "load", "400", "1", "--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var res workload.LoadResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.Pods != 400 || res.GPUsPerPod != 1 || res.Scheduled != 400 || res.Running != 400 || res.Unschedulable != 0 || res.CreateErrors != 0 {
			t.Errorf("counts %+v", res)
		}
		if !(res.CreateSeconds > 0 && res.CreateSeconds <= res.ScheduleSeconds && res.ScheduleSeconds <= res.DurationSeconds) {
			t.Errorf("phase times out of order: create %.2f, schedule %.2f, run %.2f", res.CreateSeconds, res.ScheduleSeconds, res.DurationSeconds)
		}
		if res.PodsPerSecond <= 0 || res.CreateRate <= 0 || res.ScheduleRate <= 0 {
			t.Errorf("rates %+v", res)
		}
		s := res.StartupLatency
		for name, p := range map[string]workload.Percentiles{"createToSchedule": s.CreateToSchedule, "scheduleToRun": s.ScheduleToRun, "podStartup": s.PodStartup} {
			if p.Count != 400 || p.P50 < 0 || p.P50 > p.P90 || p.P90 > p.P99 || p.P99 > p.Max {
				t.Errorf("%s percentiles %+v", name, p)
			}
		}
		if s.ScheduleToRun.Count != 400 {
			t.Errorf("schedule→run %+v: want 400 pods", s.ScheduleToRun)
		}
		if s.PodStartup.P99 < s.CreateToSchedule.P50 {
			t.Errorf("pod_startup p99 %.3f below create→schedule p50 %.3f", s.PodStartup.P99, s.CreateToSchedule.P50)
		}
		if s.CreateTime != workload.CreateTimeSend || res.Pattern != workload.PatternBurst {
			t.Errorf("create times from %q, pattern %q: want the client's send time, a burst", s.CreateTime, res.Pattern)
		}
		// Every create went out once and its answer was counted.
		if rq := res.Requests; rq.Sent["POST"] != 400 || rq.Succeeded != 400 || rq.Failed() != 0 {
			t.Errorf("requests %+v: want 400 POSTs, all ok", rq)
		}
		if res.Verdict.Bottleneck != "scheduler" && res.Verdict.Bottleneck != "upstream" || res.Verdict.Explanation == "" {
			t.Errorf("verdict %+v", res.Verdict)
		}
		if res.Verdict.Source != "watch+prometheus" {
			t.Errorf("verdict source %q: Prometheus was not asked", res.Verdict.Source)
		}
		// Without the gang gates the scheduler has no pod-group counter:
		// that reads as none, not as unread.
		if g := res.Verdict.PodGroupAttempts; g == nil || *g != 0 {
			got, _ := json.Marshal(g) // null when not read
			t.Errorf("pod-group cycles %s: want 0 read on a fleet without gang scheduling", got)
		}
		st := statusOf(t, ctx, loadCluster)
		if st.Pods.Running != 400 || st.GPUs.Allocated != 400 {
			t.Errorf("status after load: pods %+v, gpus %+v", st.Pods, st.GPUs)
		}
		rec := onlyRecord(t, resultsDir, "load-*")
		if rec.Outcome != "completed" || rec.Cluster != loadCluster || rec.Profile != "default" || len(rec.Phases) != 2 {
			t.Errorf("record %+v", rec)
		}
	})

	var steadyID string
	t.Run("steady load 40 x 1 at 20/s", func(t *testing.T) {
		r := ghostfleet(t, ctx, "load", "40", "1", "--rate", "20", "--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var res workload.LoadResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.Pattern != workload.PatternSteady || res.TargetRate != 20 || res.Running != 40 || res.StartupLatency.PodStartup.Count != 40 {
			t.Errorf("steady load: pattern %q at %g, %d running, pod_startup %+v", res.Pattern, res.TargetRate, res.Running, res.StartupLatency.PodStartup)
		}
		// Paced: 40 pods at 20/s take about 2s to send, not the instant a
		// burst of 100 workers takes. Loose bounds, no timing claim.
		if res.CreateSeconds < 1.5 {
			t.Errorf("40 pods at 20/s all created after %.2fs: not paced", res.CreateSeconds)
		}
		dirs, _ := filepath.Glob(filepath.Join(resultsDir, "load-*"))
		for _, d := range dirs {
			var rec record.Record
			readFile(t, filepath.Join(d, "run.json"), &rec)
			if p, _ := rec.Result.(map[string]any)["pattern"].(string); p == workload.PatternSteady {
				steadyID = rec.ID
			}
		}
		if steadyID == "" {
			t.Fatalf("no steady load record among %v", dirs)
		}
	})

	t.Run("snapshot of the load", func(t *testing.T) {
		// A counter born during a short run on a fresh cluster needs two
		// scrapes (15s apart) before rate() has a value: wait for them, so
		// that the snapshot is checked against series Prometheus has.
		prom, err := metrics.NewPrometheus(statusOf(t, ctx, loadCluster).Prometheus.URL)
		if err != nil {
			t.Fatal(err)
		}
		throughput, _ := metrics.Lookup("scheduler-throughput")
		for deadline := time.Now().Add(90 * time.Second); ; {
			s, err := prom.Range(ctx, throughput.PromQL, time.Now().Add(-5*time.Minute), time.Now(), 15*time.Second)
			if err == nil && len(s) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus has no scheduler throughput 90s after the load: %v", err)
			}
			time.Sleep(2 * time.Second)
		}
		r := ghostfleet(t, ctx, "snapshot", "--since", "5m", "--name", loadCluster, "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		dirs, _ := filepath.Glob(filepath.Join(resultsDir, "snapshot-*"))
		if len(dirs) != 1 {
			t.Fatalf("snapshot folders %v", dirs)
		}
		var ms []report.QuerySeries
		readFile(t, filepath.Join(dirs[0], "metrics.json"), &ms)
		for _, q := range ms {
			switch q.ID {
			case "apiserver-p99-by-verb", "scheduler-throughput", "etcd-db-size":
				if len(q.Series) == 0 || len(q.Series[0].Points) == 0 || q.Error != "" {
					t.Errorf("%s: %d series, error %q", q.ID, len(q.Series), q.Error)
				}
			}
		}
		var run report.SnapshotRun
		readFile(t, filepath.Join(dirs[0], "run.json"), &run)
		if len(run.Runs) != 2 || run.Runs[0].Kind != "load" || run.Fleet.Nodes != 100 || run.Fleet.GPUs != 800 {
			t.Errorf("run.json: fleet %+v, %d runs", run.Fleet, len(run.Runs))
		}
		var verdicts []report.Verdict
		readFile(t, filepath.Join(dirs[0], "slo.json"), &verdicts)
		found := false
		for _, v := range verdicts {
			if v.ID == "pod-startup-p99" {
				// Judged on the steady run only; the burst is named as not judged.
				found = v.Status != report.StatusNoData && v.Where == steadyID && strings.Contains(v.Note, run.Runs[0].ID)
			}
		}
		if !found {
			t.Errorf("no pod startup verdict from the steady run %s (burst %s in the note): %+v", steadyID, run.Runs[0].ID, verdicts)
		}
		r = ghostfleet(t, ctx, "report", "--results-dir", resultsDir)
		if r.code != 0 || strings.TrimSpace(r.out) != filepath.Join(dirs[0], "report.html") {
			t.Fatalf("report: exit %d, out %q, err %q", r.code, r.out, r.errOut)
		}
		html, err := os.ReadFile(filepath.Join(dirs[0], "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"uPlot", run.Runs[0].ID, "Scheduler throughput", "etcd database size"} {
			if !strings.Contains(string(html), want) {
				t.Errorf("report lacks %q", want)
			}
		}
		if strings.Contains(string(html), `src="http`) || strings.Contains(string(html), `href="http`) {
			t.Error("the report loads something from the network")
		}
		screenshot(t, filepath.Join(dirs[0], "report.html"))
		if r := ghostfleet(t, ctx, "snapshot", "--since", "-5m", "--name", loadCluster, "--results-dir", resultsDir); r.code == 0 || !strings.Contains(r.errOut, "--since -5m0s is out of range") {
			t.Errorf("negative window: exit %d, %q", r.code, r.errOut)
		}
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"load", "10", "0"}, "GPUs per pod 0 is out of range"},
			{[]string{"load", "10", "9"}, "more than any node has (largest: 8)"},
			{[]string{"load", "-3", "1"}, "-3 is out of range: ghostfleet load takes no negative"},
			{[]string{"churn", "0", "10"}, "rate 0 is out of range"},
			{[]string{"churn", "10", "-5s"}, "-5s is out of range"},
			{[]string{"churn", "fast", "10"}, `rate "fast" is not a number`},
			{[]string{"churn-limited", "10", "10", "--concurrency", "0"}, "concurrency 0 is out of range"},
		} {
			r := ghostfleet(t, ctx, append(tc.args, "--name", loadCluster, "--results-dir", resultsDir)...)
			if r.code == 0 || !strings.Contains(r.errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, r.code, r.errOut, tc.want)
			}
		}
		if st := statusOf(t, ctx, loadCluster); st.Pods.Running+st.Pods.Pending != 440 {
			t.Errorf("bad input changed the pods: %+v", st.Pods)
		}
	})

	t.Run("churn 20/s for 10s", func(t *testing.T) {
		r := ghostfleet(t, ctx, "churn", "20", "10s", "--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var res workload.ChurnResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.TargetRate != 20 || res.DurationSeconds != 10 || res.Attempted[workload.VerbCreate] != 200 {
			t.Errorf("target %v, duration %v, create slots %d; want 20, 10, 200", res.TargetRate, res.DurationSeconds, res.Attempted[workload.VerbCreate])
		}
		if res.Created+res.ErrorsByVerbTotal(workload.VerbCreate) != 200 {
			t.Errorf("created %d + create errors %d != 200 slots", res.Created, res.ErrorsByVerbTotal(workload.VerbCreate))
		}
		if res.Created == 0 || res.Deleted == 0 || res.AchievedCreateRate <= 0 || res.AchievedDeleteRate <= 0 {
			t.Errorf("nothing churned: %+v", res)
		}
		// The transport saw every create the churn sent and met the same
		// errors its calls returned.
		if rq := res.Requests; rq == nil || rq.Sent["POST"] != res.Attempted[workload.VerbCreate] || rq.Rejected != res.Errors["429"] || rq.Failed() != res.ErrorsByVerbTotal(workload.VerbCreate)+res.ErrorsByVerbTotal(workload.VerbDelete) {
			t.Errorf("transport counts %+v vs churn's own: attempted %v, errors %v", rq, res.Attempted, res.Errors)
		}
		if len(res.PerSecond) != 10 {
			t.Errorf("%d per-second rows, want 10", len(res.PerSecond))
		}
		for _, verb := range []string{workload.VerbCreate, workload.VerbDelete} {
			if l := res.Latency[verb]; l.Count == 0 || l.P50 > l.P99 {
				t.Errorf("%s latency %+v", verb, l)
			}
		}
		rec := onlyRecord(t, resultsDir, "churn-*")
		if rec.Kind != "churn" || rec.Outcome != "completed" {
			t.Errorf("record %+v", rec)
		}
	})

	unload := func(t *testing.T) {
		t.Helper()
		r := ghostfleet(t, ctx, "unload", "--name", loadCluster)
		if r.code != 0 {
			t.Fatalf("unload: exit %d: %s", r.code, r.errOut)
		}
		st := statusOf(t, ctx, loadCluster)
		if len(st.Pods.Namespaces) != 0 || st.GPUs.Allocated != 0 {
			t.Errorf("after unload: %+v %+v", st.Pods, st.GPUs)
		}
	}
	t.Run("unload", unload)

	// 15 jobs of 8 whole-node pods on 100 nodes: 120 pods, 100 fit.
	t.Run("train", func(t *testing.T) {
		r := ghostfleet(t, ctx, "train", "--jobs", "15", "--pods-per-job", "8", "--gpus-per-pod", "8", "--stall", "10s",
			"--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		if !strings.Contains(r.errOut, "need 960 GPUs; 800 are free") {
			t.Errorf("no capacity warning: %s", r.errOut)
		}
		var res runs.TrainResult // the figures and, beside them, the run's outcome
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.JobsStarted+res.JobsPartial+res.JobsWaiting != 15 || res.JobsStarted < 1 || res.JobsStarted == 15 {
			t.Errorf("jobs started %d, partial %d, waiting %d", res.JobsStarted, res.JobsPartial, res.JobsWaiting)
		}
		if res.Outcome != "stalled" {
			t.Errorf("outcome %q, want stalled (the fleet is full)", res.Outcome)
		}
		if res.StartLatency.Count != res.JobsStarted || res.StartLatency.P50 <= 0 {
			t.Errorf("start latency %+v", res.StartLatency)
		}
		// Workers run until deleted: the bound ones hold all 800 GPUs.
		st := statusOf(t, ctx, loadCluster)
		if st.Pods.Running != 100 || st.Pods.Succeeded != 0 || st.GPUs.Allocated != 800 {
			t.Errorf("after train: pods %+v, gpus %+v; want 100 running workers on 800 GPUs", st.Pods, st.GPUs)
		}
		if want := 8 * (100 - 8*res.JobsStarted); res.StrandedGPUs != want {
			t.Errorf("stranded GPUs %d, want %d (bound pods of jobs that did not start)", res.StrandedGPUs, want)
		}
		onlyRecord(t, resultsDir, "train-*")
	})
	t.Run("unload after train", unload)

	t.Run("binpack to half", func(t *testing.T) {
		r := ghostfleet(t, ctx, "binpack", "--fill", "0.5", "--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var res workload.BinpackResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.TotalGPUs != 800 || res.TargetGPUs != 400 || res.ScheduledGPUs != 400 || res.Occupancy != 0.5 || len(res.UnschedulableBySize) != 0 {
			t.Errorf("result %+v", res)
		}
		n := 0
		for _, d := range res.Deciles {
			n += d.Latency.Count
		}
		if n != res.Pods || len(res.Deciles) < 4 {
			t.Errorf("deciles %+v hold %d pods, want %d over several deciles", res.Deciles, n, res.Pods)
		}
		nodes := 0
		for _, c := range res.FreeGPUsPerNode {
			nodes += c
		}
		if nodes != 100 || len(res.FreeGPUsPerNode) != 9 {
			t.Errorf("free GPUs per node %v", res.FreeGPUsPerNode)
		}
		onlyRecord(t, resultsDir, "binpack-*")
	})
	t.Run("unload after binpack", unload)

	// A capture taken while a paced load binds pods counts them, gives
	// each component its CPU per pod, and the scheduler's by plugin.
	t.Run("pprof during a paced load", func(t *testing.T) {
		loaded := make(chan result, 1)
		go func() {
			loaded <- ghostfleet(t, ctx, "load", "300", "1", "--rate", "50", "--name", loadCluster, "--results-dir", resultsDir)
		}()
		time.Sleep(time.Second)
		r := ghostfleet(t, ctx, "pprof", "--duration", "3s", "--name", loadCluster, "-o", "json", "--results-dir", resultsDir)
		if l := <-loaded; l.code != 0 {
			t.Fatalf("load: exit %d: %s", l.code, l.errOut)
		}
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var res runs.PprofResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if res.PodsUncounted != "" || res.PodsScheduled < 1 || res.PodsScheduled > 300 {
			t.Errorf("pods bound during the capture %v (%s): want some of the 300 paced ones", res.PodsScheduled, res.PodsUncounted)
		}
		var scheduler *runs.ComponentProfile
		for i, c := range res.Components {
			if c.Component == "kube-scheduler" {
				scheduler = &res.Components[i]
			}
		}
		if scheduler == nil || scheduler.Error != "" || scheduler.CPUSeconds <= 0 {
			t.Fatalf("kube-scheduler's profile %+v", scheduler)
		}
		if want := 1000 * scheduler.CPUSeconds / res.PodsScheduled; math.Abs(scheduler.CPUMsPerPod-want) > 1e-9*want {
			t.Errorf("scheduler CPU per pod %v ms, want %v", scheduler.CPUMsPerPod, want)
		}
		for plugin, s := range scheduler.SchedulerPlugins {
			if !regexp.MustCompile(`^[a-z0-9]+$`).MatchString(plugin) || s <= 0 || s > scheduler.CPUSeconds {
				t.Errorf("plugin %q: %v CPU-s of the scheduler's %v", plugin, s, scheduler.CPUSeconds)
			}
		}
		if rec := onlyRecord(t, resultsDir, "pprof-*"); rec.Kind != "pprof" || rec.Outcome != "completed" {
			t.Errorf("record %+v", rec)
		}
	})
	t.Run("unload after pprof", unload)
}

func readFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// wantSettingsAndHost checks that rec, a run of what on GhostFleet's own
// fleet, holds what every run's record does: the profile's settings and
// the machine it ran on, probed at both ends.
func wantSettingsAndHost(t *testing.T, what string, rec record.Record) {
	t.Helper()
	if rec.ProfileSettings == "" || rec.Host == nil || rec.Host.CPUs < 1 || rec.Host.ProbeStart.Cache.CPUMsMin <= 0 || rec.Host.ProbeEnd.Cache.CPUMsMin <= 0 {
		t.Errorf("%s's record: profile settings %q, host %+v; want both", what, rec.ProfileSettings, rec.Host)
	}
}

func onlyRecord(t *testing.T, dir, pattern string) record.Record {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, pattern, "run.json"))
	if len(matches) != 1 {
		t.Fatalf("run records %v, want exactly one %s", matches, pattern)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec record.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
