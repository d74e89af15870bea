//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

const faultCluster = "gf-faults-e2e"

// faultRecord runs a fault command with -o json (its typed result: the
// run and what it marked) and returns the run record it wrote and its
// result.
func faultRecord(t *testing.T, ctx context.Context, args ...string) (record.Record, fault.Result) {
	t.Helper()
	r := ghostfleet(t, ctx, append(append([]string{"fault"}, args...), "--name", faultCluster, "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("fault %v: exit %d: %s", args, r.code, r.errOut)
	}
	var out runs.FaultResult
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if out.Kind != fault.RecordKind || out.Outcome != "completed" || out.ID == "" || out.Dir == "" {
		t.Errorf("result id %q kind %q outcome %q dir %q", out.ID, out.Kind, out.Outcome, out.Dir)
	}
	var rec record.Record
	readFile(t, filepath.Join(out.Dir, "run.json"), &rec)
	if rec.Kind != fault.RecordKind || rec.Cluster != faultCluster || rec.Outcome != "completed" || rec.ID != out.ID {
		t.Errorf("record id %q kind %q cluster %q outcome %q", rec.ID, rec.Kind, rec.Cluster, rec.Outcome)
	}
	// The record says the machine it ran on: its cores, their time over
	// the run, and the speed probe at both ends.
	if h := rec.Host; h == nil || h.CPUs < 1 || h.CPUSeconds["user"]+h.CPUSeconds["system"]+h.CPUSeconds["idle"] <= 0 ||
		h.ProbeStart.Trials < 1 || h.ProbeStart.Cache.CPUMsMin <= 0 || h.ProbeEnd.Memory.CPUMsMin <= 0 {
		t.Errorf("record's host %+v; want its cores, their time over the run, and a probe at both ends", h)
	}
	var res fault.Result
	data, _ := json.Marshal(rec.Result)
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != len(out.Nodes) || res.Pods != out.Pods {
		t.Errorf("-o json says %d nodes, %d pods; the record %d nodes, %d pods", len(out.Nodes), out.Pods, len(res.Nodes), res.Pods)
	}
	return rec, res
}

// eventually polls check until it returns nil or two minutes pass; the
// last error fails the test. It bounds waiting, not the system's speed.
func eventually(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runningWorkers waits until exactly want pods in ns are Running and
// returns them.
func runningWorkers(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, want int) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	eventually(t, ctx, fmt.Sprintf("the %d workers running", want), func() error {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		if err != nil {
			return err
		}
		if running = list.Items; len(running) != want {
			return fmt.Errorf("%d workers running", len(running))
		}
		return nil
	})
	return running
}

func nodeCondition(n *corev1.Node, typ string) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if string(c.Type) == typ {
			return c.Status
		}
	}
	return ""
}

func gpuTainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == fleet.TaintGPUHealth && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// TestFaults: GPU faults on exactly the chosen nodes keep new pods off
// them; pod-exit fails containers with the code and reason inside the
// window; clear recovers; restore returns to the saved state.
func TestFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", faultCluster) })
	port := freePort(t)
	if r := ghostfleet(t, ctx, "up", "--name", faultCluster, "--nodes", "50", "--dcgm", "--prometheus-port", fmt.Sprint(port)); r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	cs, err := fleet.Own(faultCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	resultsDir := t.TempDir()

	r := ghostfleet(t, ctx, "save", "clean-fleet", "--name", faultCluster, "--results-dir", resultsDir)
	if r.code != 0 {
		t.Fatalf("save: %s", r.errOut)
	}
	wantSettingsAndHost(t, "save", onlyRecord(t, resultsDir, "state-*"))
	saved, err := fleet.CountObjects(ctx, cs)
	if err != nil || saved.Nodes != 50 || saved.Pods != 0 {
		t.Fatalf("counts at save %+v, %v", saved, err)
	}

	_, xid := faultRecord(t, ctx, "gpu-xid", "--nodes", "5", "--xid", "79", "--seed", "11", "--results-dir", resultsDir)
	if len(xid.Nodes) != 5 {
		t.Fatalf("gpu-xid chose %v", xid.Nodes)
	}
	faulted := map[string]bool{}
	for _, n := range xid.Nodes {
		faulted[n] = true
	}

	t.Run("exactly the chosen nodes carry the condition and the taint", func(t *testing.T) {
		eventually(t, ctx, "GpuXidProblem on the 5 nodes", func() error {
			nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for i := range nodes.Items {
				n := &nodes.Items[i]
				want := faulted[n.Name]
				cond := nodeCondition(n, "GpuXidProblem") == corev1.ConditionTrue
				gpus := n.Status.Allocatable[fleet.ResourceGPU]
				if cond != want || gpuTainted(n) != want || (gpus.Value() == 7) != want {
					return fmt.Errorf("node %s: condition %v, taint %v, allocatable GPUs %s; faulted %v", n.Name, cond, gpuTainted(n), gpus.String(), want)
				}
				if !fleet.NodeReady(n) {
					return fmt.Errorf("node %s is not Ready: a GPU fault must not stop the node", n.Name)
				}
			}
			return nil
		})
	})

	t.Run("no new GPU pod lands on a faulted node", func(t *testing.T) {
		// 45 healthy nodes × 8 GPUs = 360: fill them exactly.
		for _, args := range [][]string{{"340", "gf-load"}, {"20", "gf-nccl"}} {
			if r := ghostfleet(t, ctx, "load", args[0], "1", "--namespace", args[1], "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
				t.Fatalf("load %v: %s", args, r.errOut)
			}
		}
		// Five more: the faulted nodes have 35 free GPUs, but the taint
		// must keep these pods off them.
		if err := workload.EnsureNamespace(ctx, cs, "gf-extra"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("extra-%d", i)}, Spec: workload.PodSpec(1)}
			if _, err := cs.CoreV1().Pods("gf-extra").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, ctx, "the extra pods are found unschedulable", func() error {
			pods, err := cs.CoreV1().Pods("gf-extra").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					t.Fatalf("pod %s was bound to %s", p.Name, p.Spec.NodeName)
				}
				unschedulable := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
					return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
				})
				if !unschedulable {
					return fmt.Errorf("pod %s not yet found unschedulable", p.Name)
				}
			}
			return nil
		})
		assertNoPodOn(t, ctx, cs, faulted)
	})

	t.Run("DCGM series in Prometheus follow the pods", func(t *testing.T) {
		prom, err := metrics.NewPrometheus(fmt.Sprintf("http://127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		// 50 nodes × 8 GPUs; the 360 running 1-GPU pods keep 360 busy.
		eventually(t, ctx, "DCGM series scraped from every node", func() error {
			all, err := prom.Scalar(ctx, `count(DCGM_FI_DEV_GPU_UTIL)`, time.Now())
			if err != nil {
				return err
			}
			busy, err := prom.Scalar(ctx, `count(DCGM_FI_DEV_GPU_UTIL > 0)`, time.Now())
			if err != nil {
				return err
			}
			fb, err := prom.Scalar(ctx, `count(DCGM_FI_DEV_FB_USED > 0)`, time.Now())
			if err != nil {
				return err
			}
			if all != 400 || busy != 360 || fb != 360 {
				return fmt.Errorf("%v GPU series, %v busy, %v with memory used; want 400, 360, 360", all, busy, fb)
			}
			return nil
		})
		// The faulted nodes hold no pods: their GPUs are idle.
		for n := range faulted {
			v, err := prom.Scalar(ctx, fmt.Sprintf(`sum(DCGM_FI_DEV_GPU_UTIL{Hostname=%q})`, n), time.Now())
			if err != nil || v != 0 {
				t.Errorf("node %s GPU utilisation sum %v (%v), want 0", n, v, err)
			}
		}
	})

	t.Run("pod-exit 3 inside delay…delay+jitter", func(t *testing.T) {
		rec, res := faultRecord(t, ctx, "pod-exit", "--exit-code", "3", "--reason", "NCCLTestFailed", "--message", "all_reduce_perf: NCCL WARN NET/IB timeout",
			"--delay", "5s", "--jitter", "10s", "--namespace", "gf-nccl", "--results-dir", resultsDir)
		if res.Pods != 20 || res.NotBefore == nil || res.NotAfter.Sub(*res.NotBefore) != 10*time.Second || res.NotBefore.Sub(rec.Started) != 5*time.Second {
			t.Fatalf("record %+v, result %+v", rec, res)
		}
		var pods []corev1.Pod
		eventually(t, ctx, "every gf-nccl pod failed", func() error {
			list, err := cs.CoreV1().Pods("gf-nccl").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range list.Items {
				if p.Status.Phase != corev1.PodFailed {
					return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
				}
			}
			pods = list.Items
			return nil
		})
		// finishedAt has whole seconds; kwok's queue may run a little late
		// on a busy machine, never early.
		lo, hi := res.NotBefore.Truncate(time.Second), res.NotAfter.Add(10*time.Second)
		var first, last time.Time
		for _, p := range pods {
			term := p.Status.ContainerStatuses[0].State.Terminated
			if term == nil || term.ExitCode != 3 || term.Reason != "NCCLTestFailed" || term.Message != "all_reduce_perf: NCCL WARN NET/IB timeout" {
				t.Errorf("pod %s: %+v", p.Name, p.Status.ContainerStatuses)
				continue
			}
			at := term.FinishedAt.Time
			if at.Before(lo) || at.After(hi) {
				t.Errorf("pod %s finished at %s, outside %s…%s", p.Name, at.Format(time.RFC3339), lo.Format(time.RFC3339), hi.Format(time.RFC3339))
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		t.Logf("20 pods failed between %s and %s (fault applied %s, window %s…%s)", first.Format(time.TimeOnly), last.Format(time.TimeOnly),
			rec.Started.Format(time.TimeOnly), res.NotBefore.Format(time.TimeOnly), res.NotAfter.Format(time.TimeOnly))
		if running := countPhase(t, ctx, cs, "gf-load", corev1.PodRunning); running != 340 {
			t.Errorf("%d gf-load pods running, want all 340 untouched", running)
		}
		assertNoPodOn(t, ctx, cs, faulted)
	})

	var down string
	t.Run("node-down", func(t *testing.T) {
		_, res := faultRecord(t, ctx, "node-down", "--nodes", "1", "--results-dir", resultsDir)
		if len(res.Nodes) != 1 || faulted[res.Nodes[0]] {
			t.Fatalf("node-down chose %v", res.Nodes)
		}
		down = res.Nodes[0]
		eventually(t, ctx, "node "+down+" NotReady", func() error {
			n, err := cs.CoreV1().Nodes().Get(ctx, down, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s := nodeCondition(n, "Ready"); s != corev1.ConditionUnknown {
				return fmt.Errorf("Ready is %s", s)
			}
			return nil
		})
	})

	t.Run("clear restores", func(t *testing.T) {
		if r := ghostfleet(t, ctx, "fault", "clear", "--all", "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
			t.Fatalf("clear: %s", r.errOut)
		}
		eventually(t, ctx, "every node healthy again", func() error {
			nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for i := range nodes.Items {
				n := &nodes.Items[i]
				gpus := n.Status.Allocatable[fleet.ResourceGPU]
				if nodeCondition(n, "GpuXidProblem") == corev1.ConditionTrue || gpuTainted(n) || gpus.Value() != 8 || !fleet.NodeReady(n) {
					return fmt.Errorf("node %s: GpuXidProblem %s, taint %v, GPUs %s, Ready %v", n.Name, nodeCondition(n, "GpuXidProblem"), gpuTainted(n), gpus.String(), fleet.NodeReady(n))
				}
				if faulted[n.Name] && nodeCondition(n, "GpuXidProblem") != corev1.ConditionFalse {
					return fmt.Errorf("node %s: GpuXidProblem %q, want False", n.Name, nodeCondition(n, "GpuXidProblem"))
				}
			}
			return nil
		})
		matches, _ := filepath.Glob(filepath.Join(resultsDir, "fault-*", "run.json"))
		if len(matches) != 4 {
			t.Errorf("fault records %v, want 4 (gpu-xid, pod-exit, node-down, clear)", matches)
		}
	})

	t.Run("snapshot marks the faults", func(t *testing.T) {
		r := ghostfleet(t, ctx, "snapshot", "--since", "15m", "--name", faultCluster, "--results-dir", resultsDir)
		if r.code != 0 {
			t.Fatalf("snapshot: %s", r.errOut)
		}
		snaps, _ := filepath.Glob(filepath.Join(resultsDir, "snapshot-*"))
		if len(snaps) != 1 {
			t.Fatalf("snapshots %v", snaps)
		}
		run, _, _, err := report.LoadSnapshot(snaps[0])
		if err != nil {
			t.Fatal(err)
		}
		faults := 0
		for _, r := range run.Runs {
			if r.Kind == fault.RecordKind {
				faults++
			}
		}
		if faults != 4 {
			t.Errorf("snapshot holds %d fault runs, want 4", faults)
		}
	})

	t.Run("a damaged saved state is refused before anything stops", func(t *testing.T) {
		damaged := damagedState(t, resultsDir, "clean-fleet")
		before, err := fleet.PIDs(faultCluster)
		if err != nil {
			t.Fatal(err)
		}
		r := ghostfleet(t, ctx, "restore", damaged, "--name", faultCluster, "--results-dir", resultsDir)
		if r.code == 0 || !strings.Contains(r.errOut, "not a snapshot etcd can restore") || !strings.Contains(r.errOut, "nothing was restored") {
			t.Errorf("restore of a damaged etcd.db: exit %d: %s", r.code, r.errOut)
		}
		after, err := fleet.PIDs(faultCluster)
		if err != nil || after["etcd"] != before["etcd"] || after["kube-apiserver"] != before["kube-apiserver"] {
			t.Errorf("the control plane restarted for a refused restore: pids %v, then %v (%v)", before, after, err)
		}
	})

	t.Run("restore returns to the saved state", func(t *testing.T) {
		if r := ghostfleet(t, ctx, "nodes", "60", "--name", faultCluster); r.code != 0 {
			t.Fatalf("nodes 60: %s", r.errOut)
		}
		if r := ghostfleet(t, ctx, "restore", "clean-fleet", "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
			t.Fatalf("restore: %s", r.errOut)
		}
		wantSettingsAndHost(t, "restore", onlyRecord(t, resultsDir, "restore-*"))
		got, err := fleet.CountObjects(ctx, cs)
		if err != nil || got.Nodes != saved.Nodes || got.Pods != saved.Pods || got.Namespaces != saved.Namespaces {
			t.Errorf("after restore %+v (%v), saved %+v", got, err, saved)
		}
		st := statusOf(t, ctx, faultCluster)
		if st.Nodes.Ready != 50 {
			t.Errorf("after restore %d of 50 nodes Ready", st.Nodes.Ready)
		}
		// The fleet still works: a load runs. (kwok restarted by kwokctl
		// during the restore once left new pods Pending for 2.5 minutes:
		// the timeout bounds that, not the fleet's speed.)
		if r := ghostfleet(t, ctx, "load", "10", "1", "--namespace", "gf-after", "--timeout", "90s", "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
			t.Errorf("load after restore: %s", r.errOut)
		}
	})

	// Every node is faulted with --fail-pods while train holds: all four
	// workers end (exit code 1 with the Xid's message), no replacement
	// fits until the clear, and then every job recovers within the hold.
	t.Run("train --hold measures what fault --fail-pods breaks", func(t *testing.T) {
		const ns = "gf-train-e2e"
		// Every node can take the fault: none is left faulted by an
		// earlier subtest (run alone, the first one's 5 are).
		if r := ghostfleet(t, ctx, "fault", "clear", "--all", "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
			t.Fatalf("clear: %s", r.errOut)
		}
		trained := trainInBackground(t, ctx, "--jobs", "2", "--pods-per-job", "2", "--namespace", ns, "--hold", "90s",
			"--name", faultCluster, "--results-dir", resultsDir)
		runningWorkers(t, ctx, cs, ns, 4)
		_, res := faultRecord(t, ctx, "gpu-xid", "--nodes", "50", "--fail-pods", "--results-dir", resultsDir)
		if res.Pods < 4 {
			t.Fatalf("--fail-pods ended %d pods, want at least the 4 workers", res.Pods)
		}
		eventually(t, ctx, "the 4 workers failed with the Xid", func() error {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			failed := 0
			for _, p := range list.Items {
				if p.Status.Phase != corev1.PodFailed {
					continue
				}
				term := p.Status.ContainerStatuses[0].State.Terminated
				if term == nil || term.ExitCode != 1 || term.Message != "Xid 79: GPU has fallen off the bus" {
					t.Fatalf("pod %s failed with %+v", p.Name, p.Status.ContainerStatuses)
				}
				failed++
			}
			if failed != 4 {
				return fmt.Errorf("%d workers failed", failed)
			}
			return nil
		})
		if r := ghostfleet(t, ctx, "fault", "clear", "--all", "--name", faultCluster, "--results-dir", resultsDir); r.code != 0 {
			t.Fatalf("clear: %s", r.errOut)
		}
		train := trained()
		if train.WorkersEnded != 4 || train.JobsBroken != 2 || train.JobsDown != 0 || train.Recovery.Count < 2 || train.HoldSeconds < 89 {
			t.Errorf("workers lost %d, jobs broken %d, still broken %d, recoveries %+v, held %.0fs; want 4, 2, 0, at least 2, 90s",
				train.WorkersEnded, train.JobsBroken, train.JobsDown, train.Recovery, train.HoldSeconds)
		}
	})

	// --restart job: one worker deleted while train holds restarts its
	// whole job (the Job made again, the surviving worker replaced too),
	// once, and the job recovers within the hold.
	t.Run("train --restart job restarts a broken job whole", func(t *testing.T) {
		const ns = "gf-restart-e2e"
		trained := trainInBackground(t, ctx, "--jobs", "2", "--pods-per-job", "2", "--namespace", ns, "--hold", "60s", "--restart", "job",
			"--name", faultCluster, "--results-dir", resultsDir)
		before := runningWorkers(t, ctx, cs, ns, 4)
		lost := before[0]
		if err := cs.CoreV1().Pods(ns).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		train := trained()
		if train.Restart != "job" || train.JobRestarts != 1 || train.RestartErrors != 0 || train.JobsBroken != 1 || train.JobsDown != 0 || train.Recovery.Count != 1 || train.WorkersEnded < 2 {
			t.Errorf("restart %q: restarts %d (%d failed), jobs broken %d, still broken %d, recoveries %+v, workers lost %d; want job: 1 (0), 1, 0, 1, at least 2 (the deleted one and its sibling)",
				train.Restart, train.JobRestarts, train.RestartErrors, train.JobsBroken, train.JobsDown, train.Recovery, train.WorkersEnded)
		}
		// The break splits into the sibling's teardown (it ran on until
		// the restart stopped it) and the new workers' assembly.
		if td, a := train.Teardown, train.Assembly; td.Count != 1 || a.Count != 1 || td.Max > train.Recovery.Max || a.Max > train.Recovery.Max ||
			train.SurvivorGPUSeconds <= 0 || train.SurvivorGPUSeconds > train.BrokenGPUSeconds {
			t.Errorf("teardown %+v, assembly %+v (recovery %+v), survivors' GPU-seconds %.1f of %.1f; want one each, within the recovery, and some but not more than all",
				td, a, train.Recovery, train.SurvivorGPUSeconds, train.BrokenGPUSeconds)
		}
		// The controller-manager's waits are read per phase: the Job
		// controller created the 4 workers during train, and the
		// restart's foreground delete had the garbage collector delete
		// the sibling during the hold, each through its own client.
		cm := train.ControllerManager
		if cm["train"].RateLimiter["POST"].Count < 4 || cm["hold"].RateLimiter["DELETE"].Count < 1 || cm["hold"].Work["garbage_collector_attempt_to_delete"].Count < 1 {
			t.Errorf("controller-manager waits %+v; want at least 4 POSTs during train, and a DELETE and the garbage collector's work during the hold", cm)
		}
		// The apiserver saw requests from its side: the 4 workers'
		// creations during train; during the hold at least the
		// sibling's delete and kwok's final one (the test's own delete
		// may land just before the train phase's reading). The
		// scheduler placed the 4, then the 2 new workers. The fleet's
		// processes used CPU in both phases.
		api, sched := train.APIServer, train.Scheduler
		if api["train"].Requests["POST pods"].Count < 4 || api["hold"].Requests["DELETE pods"].Count < 2 || sched["train"].Attempts["scheduled"].Count < 4 || sched["hold"].Attempts["scheduled"].Count < 2 ||
			train.CPU["train"]["kube-apiserver"] <= 0 || train.CPU["hold"]["kube-apiserver"] <= 0 || train.HostCPU["hold"]["user"] <= 0 ||
			train.HostSpeed["hold"][fleet.MemoryWork].Trials < 1 || train.HostSpeed["hold"][fleet.MemoryWork].CPUMs <= 0 {
			t.Errorf("apiserver's requests %+v, scheduler's attempts %+v, CPU %v, the machine's %v and its speed %+v; want at least 4 POST pods and 4 pods scheduled during train, 2 DELETE pods and 2 scheduled during the hold, the apiserver's CPU in both, the machine's user time and speed in the hold",
				api, sched, train.CPU, train.HostCPU, train.HostSpeed)
		}
		job := lost.Labels["batch.kubernetes.io/job-name"]
		after, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job, FieldSelector: "status.phase=Running"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range after.Items {
			for _, old := range before {
				if p.Name == old.Name {
					t.Errorf("worker %s of job %s ran through the restart: a whole-job restart replaces every worker", p.Name, job)
				}
			}
		}
		if len(after.Items) != 2 {
			t.Errorf("job %s has %d workers running after the restart, want 2", job, len(after.Items))
		}
	})
}

// trainInBackground starts `ghostfleet train args… -o json` and returns a
// function that waits for it to end and decodes its result. A test that
// fails before calling it must not leave train logging after the test
// ends: its cleanup cancels train and waits.
func trainInBackground(t *testing.T, ctx context.Context, args ...string) func() runs.TrainResult {
	t.Helper()
	tctx, stop := context.WithCancel(ctx)
	done := make(chan result, 1)
	waited := false
	t.Cleanup(func() {
		if stop(); !waited {
			<-done
		}
	})
	go func() { done <- ghostfleet(t, tctx, append([]string{"train", "-o", "json"}, args...)...) }()
	return func() runs.TrainResult {
		t.Helper()
		r := <-done
		waited = true
		if r.code != 0 {
			t.Fatalf("train: exit %d: %s", r.code, r.errOut)
		}
		var train runs.TrainResult
		if err := json.Unmarshal([]byte(r.out), &train); err != nil {
			t.Fatalf("train -o json: %v", err)
		}
		return train
	}
}

func assertNoPodOn(t *testing.T, ctx context.Context, cs kubernetes.Interface, nodes map[string]bool) {
	t.Helper()
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if nodes[p.Spec.NodeName] {
			t.Errorf("pod %s/%s landed on faulted node %s", p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
}

func countPhase(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, phase corev1.PodPhase) int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == phase {
			n++
		}
	}
	return n
}

// damagedState copies the saved state called name under resultsDir to a
// new state whose etcd.db has the same size but is not a database, and
// returns the new state's ID.
func damagedState(t *testing.T, resultsDir, name string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(resultsDir, "state-*", "run.json"))
	for _, f := range dirs {
		var rec map[string]any
		data, _ := os.ReadFile(f)
		if json.Unmarshal(data, &rec) != nil {
			continue
		}
		if params, _ := rec["params"].(map[string]any); params["name"] != name {
			continue
		}
		id := "state-20000101-000000"
		dir := filepath.Join(resultsDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := os.ReadFile(filepath.Join(filepath.Dir(f), "etcd.db"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range db {
			db[i] ^= 0x5a
		}
		rec["id"], rec["params"] = id, map[string]any{"name": "damaged"}
		data, _ = json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(dir, "etcd.db"), db, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return id
	}
	t.Fatalf("no saved state %q under %s", name, resultsDir)
	return ""
}
