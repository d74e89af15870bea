//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

const (
	gangCluster = "gf-gang-e2e"
	gangABFleet = "gf-ab-e2e"
)

// TestGangAndAB is #15's gang scheduling and scheduler A/B as a user runs
// them, on 4 nodes of 8 GPUs up with --profile gang (Kubernetes 1.36's
// own alpha gang scheduling). Jobs of 3 pods × 8 GPUs make every figure
// deterministic: the fleet holds 4 such pods, so gang-scheduled one job
// runs whole and the other waits whole, while the default scheduler fills
// all 4 nodes and so must start some job partly (4 is no multiple of 3).
// Then ab replays two such jobs from a saved state under default and
// gang and records both sides.
func TestGangAndAB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ghostfleet(t, context.Background(), "clean", "--name", gangCluster)
		if fleet.Exists(context.Background(), gangABFleet) {
			ghostfleet(t, context.Background(), "clean", "--name", gangABFleet)
		}
	})
	if r := ghostfleet(t, ctx, "up", "--name", gangCluster, "--nodes", "4", "--profile", "gang", "--prometheus-port", fmt.Sprint(freePort(t))); r.code != 0 {
		t.Fatalf("up --profile gang: %s", r.errOut)
	}
	cs, err := fleet.Own(gangCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	gf := func(args ...string) result {
		return ghostfleet(t, ctx, append(args, "--name", gangCluster, "--results-dir", results)...)
	}
	train := func(t *testing.T, ns string, args ...string) runs.TrainResult {
		t.Helper()
		r := gf(append([]string{"train", "--jobs", "2", "--pods-per-job", "3", "--gpus-per-pod", "8", "--namespace", ns, "--stall", "10s", "-o", "json"}, args...)...)
		var res runs.TrainResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("train %v: exit %d, %v: %s", args, r.code, err, r.errOut)
		}
		return res
	}
	unload := func(t *testing.T) {
		t.Helper()
		if r := gf("unload"); r.code != 0 {
			t.Fatalf("unload: %s", r.errOut)
		}
	}

	t.Run("bad input: one line, nothing created", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(bad, []byte("version: 1\njobs:\n- {at: 0s, pods: 2, gpusPerPod: 8}\n- {at: soon, pods: 2, gpusPerPod: 8}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"train", "--gang", "maybe", "--namespace", "gf-gang-bad"}, `--gang "maybe": allowed are auto, on, off`},
			{[]string{"train", "--topology", "zone", "--namespace", "gf-gang-bad"}, `--topology "zone": allowed are rack, block`},
			{[]string{"train", "--gang", "off", "--topology", "rack", "--namespace", "gf-gang-bad"}, "--topology rack needs gang scheduling"},
			{[]string{"train", "--jobs", "1", "--pods-per-job", "5", "--namespace", "gf-gang-bad"}, "--pods-per-job 5 is out of range under gang scheduling: the 4 fake nodes hold at most 4 pods of 8 GPUs"},
			{[]string{"train", "--jobs", "1", "--pods-per-job", "5", "--gang", "off", "--admission", "quota", "--namespace", "gf-gang-bad"}, "--admission quota: a job of 5 pods × 8 GPUs needs 40 GPUs, more than the fleet's 32, and would never be admitted"},
			{[]string{"ab", "--state", "none", "--workload", bad, "--a", "default", "--b", "gangg"}, `--b: unknown profile "gangg"`},
			{[]string{"workload", "check", bad}, bad + `:4: jobs[1].at: "soon" is not an arrival offset`},
		} {
			r := gf(tc.args...)
			if r.code == 0 || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
				t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, r.code, r.errOut, tc.want)
			}
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "gf-gang-bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused runs created namespace gf-gang-bad (get: %v)", err)
		}
	})

	t.Run("gang: the job that fits runs whole, the other waits whole", func(t *testing.T) {
		const ns = "gf-gang-on"
		res := train(t, ns) // --gang auto: on, as the fleet's profile gang-schedules
		if !res.Gang || res.JobsStarted != 1 || res.JobsPartial != 0 || res.JobsWaiting != 1 {
			t.Errorf("gang %v: %d jobs fully started, %d partly, %d not at all; want gang-scheduled, 1, 0, 1", res.Gang, res.JobsStarted, res.JobsPartial, res.JobsWaiting)
		}
		// kube-scheduler, not GhostFleet's accounting: each job's pods are
		// all bound or none is, and each job has its PodGroup.
		pgs, err := cs.SchedulingV1alpha2().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pgs.Items) != 2 {
			t.Fatalf("PodGroups: %v, %d; want 2", err, len(pgs.Items))
		}
		for _, pg := range pgs.Items {
			if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 3 {
				t.Errorf("PodGroup %s: gang policy %+v, want minCount 3", pg.Name, g)
			}
		}
		bound := boundPerJob(t, ctx, cs, ns)
		for job, n := range bound {
			if n != 0 && n != 3 {
				t.Errorf("job %s has %d of 3 pods bound under gang scheduling", job, n)
			}
		}
		// The waiting gang is tried again while other pods are scheduled
		// (experiment F, twenty-fifth part): a load on the free node
		// beside it counts the scheduler's pod-group cycles, from
		// Prometheus, over its 40 s (some scrapes 15 s apart).
		r := gf("load", "8", "1", "--rate", "0.2", "--namespace", ns+"-beside", "-o", "json")
		var beside workload.LoadResult
		if err := json.Unmarshal([]byte(r.out), &beside); err != nil || r.code != 0 {
			t.Fatalf("load beside the waiting gang: exit %d, %v: %s", r.code, err, r.errOut)
		}
		if v := beside.Verdict; beside.Running != 8 || v.Source != "watch+prometheus" || v.PodGroupAttempts == nil || *v.PodGroupAttempts < 1 ||
			v.PodGroupAttemptSeconds == nil || *v.PodGroupAttemptSeconds <= 0 || v.SchedulerCPUSeconds <= 0 ||
			v.ActiveQueueIncoming["UnschedulablePodAdd"] <= 0 || v.ActiveQueueIncoming["PopFromBackoffQ"] <= 0 || v.ActiveQueueIncoming["ForceActivate"] <= 0 {
			got, _ := json.Marshal(v)
			t.Errorf("load beside a waiting gang: %d of 8 running, verdict %s; want all, and its pod-group cycles, the scheduler's CPU and its queue's new pods, back-off pops and members pulled in with their group (the idle scheduler retrying the gang) read from Prometheus", beside.Running, got)
		}
		unload(t)
	})

	// --restart job under gang scheduling (experiment F, fifth part): the
	// Job is made again and its new pods name the PodGroup that stayed,
	// so the gang places them all once the old ones are gone.
	t.Run("gang: --restart job makes a broken job again under its PodGroup", func(t *testing.T) {
		const ns = "gf-gang-restart"
		trained := trainInBackground(t, ctx, "--jobs", "1", "--pods-per-job", "3", "--gpus-per-pod", "8", "--namespace", ns, "--hold", "45s", "--restart", "job",
			"--name", gangCluster, "--results-dir", results)
		before := runningWorkers(t, ctx, cs, ns, 3)
		pgs, err := cs.SchedulingV1alpha2().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pgs.Items) != 1 {
			t.Fatalf("PodGroups before the restart: %v, %d; want 1", err, len(pgs.Items))
		}
		group := pgs.Items[0]
		if err := cs.CoreV1().Pods(ns).Delete(ctx, before[0].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		res := trained()
		if !res.Gang || res.JobRestarts != 1 || res.RestartErrors != 0 || res.JobsBroken != 1 || res.JobsDown != 0 || res.Recovery.Count != 1 || res.Assembly.Count != 1 {
			t.Errorf("gang %v: restarts %d (%d failed), jobs broken %d, still broken %d, recoveries %+v, assemblies %+v; want gang-scheduled, 1 (0), 1, 0, 1, 1",
				res.Gang, res.JobRestarts, res.RestartErrors, res.JobsBroken, res.JobsDown, res.Recovery, res.Assembly)
		}
		if got, err := cs.SchedulingV1alpha2().PodGroups(ns).Get(ctx, group.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("PodGroup %s after the restart: %v; want the same one", group.Name, err)
		} else if got.UID != group.UID {
			t.Errorf("PodGroup %s after the restart has uid %v, was %v; want the same one", group.Name, got.UID, group.UID)
		}
		after, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range after.Items {
			if g := p.Spec.SchedulingGroup; g == nil || g.PodGroupName == nil || *g.PodGroupName != group.Name {
				t.Errorf("worker %s after the restart names scheduling group %+v, want PodGroup %s", p.Name, g, group.Name)
			}
			for _, old := range before {
				if p.Name == old.Name {
					t.Errorf("worker %s ran through the restart: a whole-job restart replaces every worker", p.Name)
				}
			}
		}
		if len(after.Items) != 3 {
			t.Errorf("%d workers running after the restart, want 3", len(after.Items))
		}
		unload(t)
	})

	t.Run("gang off on the same fleet: a job starts partly", func(t *testing.T) {
		const ns = "gf-gang-off"
		res := train(t, ns, "--gang", "off")
		if res.Gang || res.JobsPartial < 1 || res.StrandedGPUs < 8 {
			t.Errorf("gang %v: %d jobs partly started holding %d GPUs; want no gang and at least 1 holding 8 or more", res.Gang, res.JobsPartial, res.StrandedGPUs)
		}
		if pgs, err := cs.SchedulingV1alpha2().PodGroups(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pgs.Items) != 0 {
			t.Errorf("--gang off: PodGroups %v, %v; want none", pgs, err)
		}
		total := 0
		for _, n := range boundPerJob(t, ctx, cs, ns) {
			total += n
		}
		if total != 4 {
			t.Errorf("%d pods bound, want 4 (every node filled)", total)
		}
		unload(t)
	})

	// --admission quota: a job that does not fit waits behind its gate,
	// which kube-scheduler itself reports (condition PodScheduled, reason
	// SchedulingGated), and is admitted, and runs whole, once another
	// workload's pods end.
	// By gate the job's pods exist, held by kube-scheduler itself; by
	// suspend its Job exists with no pod until admitted.
	for _, by := range workload.AdmitByModes {
		t.Run("admission quota by "+by+": a job waits until GPUs free up", func(t *testing.T) {
			const ns, fill = "gf-adm", "gf-adm-fill"
			if r := gf("load", "2", "8", "--namespace", fill); r.code != 0 {
				t.Fatalf("load 2 8: %s", r.errOut)
			}
			args := []string{"--jobs", "1", "--pods-per-job", "3", "--gpus-per-pod", "8", "--namespace", ns, "--admission", "quota", "--admit-by", by,
				"--timeout", "3m", "--stall", "0", "--name", gangCluster, "--results-dir", results}
			if by == workload.AdmitByGate {
				args = append(args, "--ungate-workers", "2")
			}
			trained := trainInBackground(t, ctx, args...)
			eventually(t, ctx, "the job held back", func() error {
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				gated := 0
				for _, p := range pods.Items {
					if p.Spec.NodeName != "" || by == workload.AdmitBySuspend {
						t.Fatalf("pod %s made or bound with 16 GPUs free for its job's 24", p.Name)
					}
					for _, c := range p.Status.Conditions {
						if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
							gated++
						}
					}
				}
				if by == workload.AdmitBySuspend {
					jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
					if err != nil {
						return err
					}
					if len(jobs.Items) != 1 || !ptr.Deref(jobs.Items[0].Spec.Suspend, false) {
						return fmt.Errorf("%d Jobs, want 1 suspended", len(jobs.Items))
					}
					// The Job controller's own word that it made no pod.
					for _, c := range jobs.Items[0].Status.Conditions {
						if c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionTrue {
							return nil
						}
					}
					return fmt.Errorf("Job %s not yet Suspended by the Job controller", jobs.Items[0].Name)
				}
				if gated != 3 {
					return fmt.Errorf("%d of %d pods gated by kube-scheduler", gated, len(pods.Items))
				}
				return nil
			})
			if err := cs.CoreV1().Pods(fill).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			res := trained()
			if a := res.Admission; a == nil || a.By != by || a.JobsAdmitted != 1 || len(a.AdmittedAt) != 1 || a.AdmittedSpan != 0 || a.GateRemovalErrors != 0 || res.JobsStarted != 1 || res.Outcome != runs.AllStarted {
				t.Errorf("admission %+v, %d jobs started, outcome %q; want 1 admitted by %s (its time kept, no span), none failed, 1 started, %q", a, res.JobsStarted, res.Outcome, by, runs.AllStarted)
			}
			// Counted from the fill's pods gone, not from the job's creation.
			if f := res.StartAfterFit; f == nil || f.Count != 1 || f.Max <= 0 || f.Max >= res.StartLatency.Max || len(res.JobsStartedAt) != 1 {
				t.Errorf("start after fit %+v (start latency %+v), started at %v; want one job, after its GPUs were free and sooner than from its creation", f, res.StartLatency, res.JobsStartedAt)
			}
			// Its parts: admission, the gates' removal (the Job's
			// unsuspending), the rest; they add up.
			if a, f := res.Admission, res.StartAfterFit; a != nil && f != nil {
				sum := 0.0
				for _, p := range []*workload.Percentiles{a.AdmitAfterFit, a.Ungate, a.StartAfterUngate} {
					if p == nil || p.Count != 1 || p.Max < 0 {
						t.Fatalf("start after fit's parts %+v, %+v, %+v: want each of the one job, none negative", a.AdmitAfterFit, a.Ungate, a.StartAfterUngate)
					}
					sum += p.Max
				}
				if math.Abs(sum-f.Max) > 0.01 {
					t.Errorf("start after fit %.3fs, its parts add up to %.3fs; want the same", f.Max, sum)
				}
				if by == workload.AdmitByGate && a.UngateWorkers != 2 {
					t.Errorf("%d ungate workers recorded; want 2", a.UngateWorkers)
				}
				// The last part's own: the pods seen created (gated ones
				// existed before their gates came off; a suspended Job's
				// are created after it is unsuspended), bound, running.
				sum = 0
				for _, p := range []*workload.Percentiles{a.PodsCreated, a.PodsBound, a.PodsRunning} {
					if p == nil || p.Count != 1 || p.Max < 0 {
						t.Fatalf("start after the release's parts %+v, %+v, %+v: want each of the one job, none negative", a.PodsCreated, a.PodsBound, a.PodsRunning)
					}
					sum += p.Max
				}
				if math.Abs(sum-a.StartAfterUngate.Max) > 0.01 {
					t.Errorf("start after the release %.3fs, its parts add up to %.3fs; want the same", a.StartAfterUngate.Max, sum)
				}
				if created := a.PodsCreated.Max; (by == workload.AdmitByGate) != (created == 0) {
					t.Errorf("by %s, the pods seen created %.3fs after the release; want 0 by gate (they existed), more by suspend", by, created)
				}
				// The same figures job by job: the one job's, first admitted
				// (each the same Duration's Seconds, through JSON: equal).
				if j := a.Jobs; len(j) != 1 || j[0].Order != 1 || j[0].StartAfterFit != f.Max || j[0].PodsBound != a.PodsBound.Max {
					t.Errorf("jobs %+v; want the one job's, first admitted, its figures the percentiles'", j)
				}
			}
			unload(t)
		})
	}

	t.Run("ab default vs gang from one saved state", func(t *testing.T) {
		if r := gf("save", "gang-e2e"); r.code != 0 {
			t.Fatalf("save: %s", r.errOut)
		}
		wl := filepath.Join(t.TempDir(), "jobs.yaml")
		if err := os.WriteFile(wl, []byte("version: 1\njobs:\n- {name: first, at: 0s, pods: 3, gpusPerPod: 8}\n- {name: second, at: 2s, pods: 3, gpusPerPod: 8}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := ghostfleet(t, ctx, "ab", "--state", "gang-e2e", "--workload", wl, "--a", "default", "--b", "gang", "--fleet", gangABFleet,
			"--prometheus-port", fmt.Sprint(freePort(t)), "--stall", "10s", "--results-dir", results, "-o", "json")
		var res runs.ABResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("ab: exit %d, %v: %s", r.code, err, r.errOut)
		}
		a, b := res.A, res.B
		if a.Profile != "default" || b.Profile != "gang" || a.Gang || !b.Gang {
			t.Errorf("sides %s (gang %v), %s (gang %v): want default without PodGroups, gang with", a.Profile, a.Gang, b.Profile, b.Gang)
		}
		for _, s := range []runs.ABSide{a, b} {
			if s.Replay.Dir == "" || s.Replay.Outcome == "" || len(s.Result.JobResults) != 2 {
				t.Errorf("side %s: replay %+v, %d jobs; want a recorded replay of 2 jobs", s.Profile, s.Replay, len(s.Result.JobResults))
			}
		}
		// The first job takes 3 of 4 nodes on both sides; the second
		// finds 1 free: the default scheduler starts it partly, gang
		// scheduling keeps it waiting whole.
		if a.Result.JobsStarted != 1 || a.Result.JobsPartial != 1 || b.Result.JobsStarted != 1 || b.Result.JobsPartial != 0 {
			t.Errorf("A: %d full, %d partly; B: %d full, %d partly; want 1, 1; 1, 0", a.Result.JobsStarted, a.Result.JobsPartial, b.Result.JobsStarted, b.Result.JobsPartial)
		}
		if j := b.Result.JobResults; len(j) == 2 && j[1].Started != workload.JobNone {
			t.Errorf("B's second job %+v: want not started", j[1])
		}
		if res.Worse() || len(res.Metrics) == 0 {
			t.Errorf("verdict %s, %d metrics: want B not worse than A", res.Verdict, len(res.Metrics))
		}
		var rec record.Record
		readFile(t, filepath.Join(res.Dir, "run.json"), &rec)
		if a, b, ok := strings.Cut(rec.ProfileSettings, " vs "); !ok || a == "" || b == "" {
			t.Errorf("ab's profile settings %q; want both sides'", rec.ProfileSettings)
		}
		wantSettingsAndHost(t, "ab", rec)
		restores, _ := filepath.Glob(filepath.Join(results, "restore-*", "run.json"))
		if len(restores) != 2 {
			t.Errorf("ab's restore records %v; want one per side", restores)
		}
		profiles := map[string]bool{}
		for _, path := range restores {
			var rec record.Record
			readFile(t, path, &rec)
			wantSettingsAndHost(t, "ab's restore", rec)
			profiles[rec.Profile] = true
		}
		if !profiles["default"] || !profiles["gang"] {
			t.Errorf("ab's restores ran under %v; want one under each side's profile, default and gang", profiles)
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "report.html")); err != nil {
			t.Errorf("ab folder: %v", err)
		}
		if fleet.Exists(ctx, gangABFleet) {
			t.Errorf("ab left its fleet %s", gangABFleet)
		}
	})
}

// boundPerJob counts, per Job, its pods bound to a node.
func boundPerJob(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) map[string]int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		job := p.Labels["batch.kubernetes.io/job-name"]
		if _, ok := out[job]; !ok {
			out[job] = 0
		}
		if p.Spec.NodeName != "" {
			out[job]++
		}
	}
	return out
}
