//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

// chaosRestartPrometheus brings a stopped Prometheus back with `ghostfleet
// restart` (issue #16's kill-and-restart, run in CI): the restart is
// recorded, says the process was down, and Prometheus answers again.
func chaosRestartPrometheus(t *testing.T, ctx context.Context, name, resultsDir string) {
	t.Helper()
	r := ghostfleet(t, ctx, "restart", "prometheus", "--name", name, "--results-dir", resultsDir, "-o", "json")
	var res runs.RestartResult
	if r.code != 0 || json.Unmarshal([]byte(r.out), &res) != nil {
		t.Fatalf("restart prometheus: exit %d: %s", r.code, r.errOut)
	}
	if res.WasRunning || res.Outcome != runs.Completed || res.Dir == "" {
		t.Fatalf("restart of a stopped Prometheus: %+v", res)
	}
	var rec record.Record
	readFile(t, filepath.Join(res.Dir, "run.json"), &rec)
	wantSettingsAndHost(t, "restart", rec)
	st := running(t, ctx, name)
	if !st["prometheus"] {
		t.Errorf("prometheus not running after the restart: %v", st)
	}
}

// chaosKillAPIServer SIGKILLs kube-apiserver in the middle of a churn,
// sees `status` call it down, restarts it and checks the churn went on:
// it finished (completed, not failed), counted the requests it lost by
// kind, and created pods again after the apiserver came back.
func chaosKillAPIServer(t *testing.T, ctx context.Context, name, resultsDir string) {
	t.Helper()
	done := make(chan result, 1)
	churnStart := time.Now()
	go func() {
		done <- ghostfleet(t, ctx, "churn", "10", "40s", "--name", name, "--results-dir", resultsDir, "-o", "json")
	}()
	time.Sleep(10 * time.Second)
	pids, err := fleet.PIDs(name)
	if err != nil || pids["kube-apiserver"] == 0 {
		t.Fatalf("pids %v, %v", pids, err)
	}
	killed := time.Now()
	if err := syscall.Kill(pids["kube-apiserver"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for running(t, ctx, name)["kube-apiserver"] {
		if time.Since(killed) > 30*time.Second {
			t.Fatal("status still says kube-apiserver runs 30s after SIGKILL")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("status saw kube-apiserver down %.1fs after SIGKILL", time.Since(killed).Seconds())
	time.Sleep(5 * time.Second)
	r := ghostfleet(t, ctx, "restart", "kube-apiserver", "--name", name, "--results-dir", resultsDir, "-o", "json")
	var restart runs.RestartResult
	if r.code != 0 || json.Unmarshal([]byte(r.out), &restart) != nil || restart.WasRunning {
		t.Fatalf("restart kube-apiserver: exit %d, %+v: %s", r.code, restart, r.errOut)
	}
	var rec record.Record
	readFile(t, filepath.Join(restart.Dir, "run.json"), &rec)
	wantSettingsAndHost(t, "restart of a killed kube-apiserver", rec)
	t.Logf("kube-apiserver answered again %.1fs after SIGKILL (restart %.1fs)", time.Since(killed).Seconds(), restart.Seconds)
	back := int(time.Since(churnStart).Seconds())
	c := <-done
	var churn runs.ChurnResult
	if err := json.Unmarshal([]byte(c.out), &churn); err != nil {
		t.Fatalf("churn: exit %d, %v: %s", c.code, err, c.errOut)
	}
	lost := 0
	for _, n := range churn.Errors {
		lost += n
	}
	if churn.Outcome != runs.Completed || lost == 0 || churn.Requests == nil {
		t.Errorf("churn across the outage: outcome %q, errors %v: every request sent while the apiserver was down must be counted", churn.Outcome, churn.Errors)
	}
	var after int
	for _, s := range churn.PerSecond {
		if s.Second > back {
			after += s.Created
		}
	}
	if after == 0 {
		t.Errorf("no pod created after the apiserver came back: %+v", churn.PerSecond)
	}
	t.Logf("churn: %d created of %d slots, errors %v", churn.Created, churn.Attempted["create"], churn.Errors)
}

// running is which components `ghostfleet status` says run; unlike
// statusOf it reads the JSON whatever the exit code (a component down
// makes status exit non-zero).
func running(t *testing.T, ctx context.Context, name string) map[string]bool {
	t.Helper()
	r := ghostfleet(t, ctx, "status", "--name", name, "-o", "json")
	var st fleet.Status
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatalf("status -o json: %v (exit %d): %s", err, r.code, r.errOut)
	}
	out := map[string]bool{}
	for _, c := range st.Components {
		out[c.Name] = c.Running
	}
	return out
}
