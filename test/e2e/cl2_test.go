//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// TestCL2 runs `ghostfleet cl2` on a real fleet with a stand-in for
// clusterloader (none can be built here: CL2 is not on the module proxy)
// that does real work on the fleet through the kubeconfig it is given:
// the run defaults --nodes to the fleet, hands CL2 the fleet's
// kubeconfig, records what it wrote, and on Ctrl-C deletes the
// namespace it left.
func TestCL2(t *testing.T) {
	const name = "gf-cl2-e2e"
	const nodes = 20
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	work := t.TempDir()
	standIn := filepath.Join(work, "clusterloader")
	build := exec.CommandContext(ctx, "go", "build", "-o", standIn, "./testdata/cl2standin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in: %v\n%s", err, out)
	}
	config, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "density", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resultsDir := filepath.Join(work, "results")
	t.Setenv("STANDIN_DIR", work)
	t.Setenv("KUBECONFIG", filepath.Join(work, "someone-elses-kubeconfig"))

	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", name) })
	if r := ghostfleet(t, ctx, "up", "--name", name, "--nodes", fmt.Sprint(nodes), "--prometheus-port", fmt.Sprint(freePort(t))); r.code != 0 {
		t.Fatalf("up failed: %s", r.errOut)
	}
	kubeconfig := fleet.Own(name).Kubeconfig
	cs, err := fleet.Own(name).Clientset(false)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"cl2", "--name", name, "--config", config, "--binary", standIn, "--results-dir", resultsDir, "-o", "json"}

	t.Run("a run", func(t *testing.T) {
		r := ghostfleet(t, ctx, args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		argv, err := os.ReadFile(filepath.Join(work, "argv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"--nodes=20", "--kubeconfig=" + kubeconfig, "--provider=kind", "--skip-cluster-verification", "--testconfig=" + config} {
			if !strings.Contains(string(argv), want+"\n") {
				t.Errorf("clusterloader got %q, lacking %s", argv, want)
			}
		}
		rec, res := cl2Record(t, resultsDir, r.out)
		if rec.Outcome != "completed" || rec.Cluster != name || len(rec.Phases) != 2 {
			t.Errorf("record: outcome %q, cluster %q, phases %+v", rec.Outcome, rec.Cluster, rec.Phases)
		}
		// As every run through the run API: the profile's settings and the
		// machine it ran on.
		wantSettingsAndHost(t, "cl2", rec)
		if len(res.PodStartupLatency) != 1 || res.PodStartupLatency[0].P99 <= 0 || len(res.SchedulingThroughput) != 1 || !res.JUnit.Passed() {
			t.Errorf("artifacts: %+v", res)
		}
		// The text form of the same result is TestPrintCL2's.
		if r.out == "" || res.ReportDir == "" {
			t.Errorf("typed result: %s", r.out)
		}
	})

	t.Run("Ctrl-C", func(t *testing.T) {
		t.Setenv("STANDIN_BLOCK", "1")
		os.Remove(filepath.Join(work, "blocking"))
		runCtx, interrupt := context.WithCancel(ctx)
		defer interrupt()
		done := make(chan result, 1)
		go func() { done <- ghostfleet(t, runCtx, append(args, "--nodes", "10")...) }()
		// Interrupt once the stand-in has its pods running and blocks.
		for {
			if _, err := os.Stat(filepath.Join(work, "blocking")); err == nil {
				break
			}
			select {
			case r := <-done:
				t.Fatalf("cl2 ended before it could be interrupted: exit %d: %s", r.code, r.errOut)
			case <-ctx.Done():
				t.Fatal("the stand-in never blocked")
			case <-time.After(200 * time.Millisecond):
			}
		}
		interrupt()
		r := <-done
		if r.code != 130 || !strings.Contains(r.errOut, "interrupted: deleting the 1 namespace(s) ClusterLoader2 created, test-") {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		rec, res := cl2Record(t, resultsDir, r.out)
		if rec.Outcome != "interrupted" || res.NamespacePrefix == "" {
			t.Fatalf("record: outcome %q, prefix %q", rec.Outcome, res.NamespacePrefix)
		}
		// The namespace is going or gone, with its pods.
		ns, err := cs.CoreV1().Namespaces().Get(ctx, res.NamespacePrefix+"-1", metav1.GetOptions{})
		if err == nil && ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s is left, not deleted", ns.Name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	})
}

// cl2Record reads the run record the command's typed result (-o json)
// names.
func cl2Record(t *testing.T, resultsDir, out string) (record.Record, report.CL2Result) {
	t.Helper()
	var typed runs.CL2Result
	if err := json.Unmarshal([]byte(out), &typed); err != nil || typed.Dir == "" {
		t.Fatalf("no typed result naming a run folder in %q: %v", out, err)
	}
	dir := typed.Dir
	if filepath.Dir(dir) != resultsDir {
		t.Errorf("run folder %s is not under %s", dir, resultsDir)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec record.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rec.Result)
	var res report.CL2Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusterloader.log")); err != nil {
		t.Error(err)
	}
	return rec, res
}
