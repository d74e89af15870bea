//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// attachCheckHiddenMetrics checks metrics where components are hidden
// (#18 item 3) on an attached cluster whose scheduler, controller-manager
// and etcd /metrics GhostFleet cannot reach — kwokctl's bare control
// plane runs them as processes, with no pod in kube-system, as a managed
// control plane hides them: attach said so (att.Metrics), and a direct
// snapshot marks their queries "not available on this cluster" with the
// reason, while the apiserver's SLIs have values and are judged.
//
// TestAttach calls it after its load, while attached (the load gives the
// apiserver mutating calls to measure). gf runs ghostfleet with the
// cluster's --kubeconfig and --results-dir results.
func attachCheckHiddenMetrics(t *testing.T, gf func(args ...string) result, results string, att runs.AttachResult) {
	t.Helper()
	probed := map[string]fleet.ComponentMetrics{}
	for _, m := range att.Metrics {
		probed[m.Component] = m
	}
	if m := probed[metrics.ComponentAPIServer]; !m.Available {
		t.Errorf("attach: apiserver /metrics %+v, want it to answer", m)
	}
	for _, c := range metrics.HiddenComponents {
		if m := probed[c]; m.Available || !m.Hidden || !strings.HasPrefix(m.Reason, c+" /metrics") {
			t.Errorf("attach: %s /metrics %+v, want it hidden with a reason", c, m)
		}
	}

	if r := gf("snapshot", "--source", "direct", "--sample", "20s", "--step", "10s"); r.code != 0 {
		t.Fatalf("snapshot: %s", r.errOut)
	}
	dir, err := report.LatestSnapshot(results)
	if err != nil {
		t.Fatal(err)
	}
	run, series, verdicts, err := report.LoadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range metrics.HiddenComponents {
		if !strings.HasPrefix(run.Unavailable[c], c+" /metrics") {
			t.Errorf("snapshot: %s %q, want it not available with the reason", c, run.Unavailable[c])
		}
	}
	if _, ok := run.Unavailable[metrics.ComponentAPIServer]; ok {
		t.Errorf("snapshot: the apiserver is marked not available: %v", run.Unavailable)
	}
	for _, q := range series {
		switch got := q.Availability(); {
		case q.Component == metrics.ComponentScheduler || q.Component == metrics.ComponentEtcd:
			if got != report.SeriesNotAvailable {
				t.Errorf("%s (%s): %s, want not available", q.ID, q.Component, got)
			}
		case q.ID == "sli-mutating-p99" || q.ID == "apf-dispatched" || q.ID == "inflight":
			if got != report.SeriesAvailable {
				t.Errorf("%s (the apiserver's): %s, want series", q.ID, got)
			}
		}
	}
	for _, v := range verdicts {
		switch v.ID {
		case "sli-mutating-p99":
			if v.Status != report.StatusPass && v.Status != report.StatusFail {
				t.Errorf("mutating SLI verdict %+v: want it judged", v)
			}
		case "scheduling-sli-p99":
			if v.Status != report.StatusNotAvailable || !strings.HasPrefix(v.Note, "not available on this cluster (scheduler /metrics") {
				t.Errorf("scheduling SLI verdict %+v: want not available on this cluster", v)
			}
		}
	}
	html, err := report.Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if page, _ := os.ReadFile(html); !strings.Contains(string(page), "Not available on this cluster:") {
		t.Errorf("report %s does not say what is not available", html)
	}
}

const hiddenCluster = "attach-e2e-hidden"

// TestAttachHiddenMetrics is attach --metrics apiserver-only on a bare
// control plane of its own: the components declared hidden are never
// scraped and show as not available, the apiserver's SLIs keep working.
// (TestAttach checks the default, probe, through attachCheckHiddenMetrics.)
func TestAttachHiddenMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kc := namedBareControlPlane(t, ctx, hiddenCluster)
	results := t.TempDir()
	gf := func(args ...string) result {
		t.Helper()
		return ghostfleet(t, ctx, append(args, "--kubeconfig", kc, "--results-dir", results)...)
	}
	t.Cleanup(func() { ghostfleet(t, context.Background(), "detach", "--kubeconfig", kc, "--results-dir", results) })
	r := gf("attach", runs.ConsentFlag, "--metrics", fleet.MetricsAPIServerOnly, "-o", "json")
	if r.code != 0 {
		t.Fatalf("attach: %s", r.errOut)
	}
	var att runs.AttachResult
	if err := json.Unmarshal([]byte(r.out), &att); err != nil {
		t.Fatal(err)
	}
	for _, m := range att.Metrics {
		if m.Component != metrics.ComponentAPIServer && !strings.Contains(m.Reason, "--metrics apiserver-only") {
			t.Errorf("attach: %+v, want it declared hidden", m)
		}
	}
	if r := gf("nodes", "8"); r.code != 0 {
		t.Fatalf("nodes: %s", r.errOut)
	}
	if r := gf("load", "16", "1"); r.code != 0 {
		t.Fatalf("load: %s", r.errOut)
	}
	attachCheckHiddenMetrics(t, gf, results, att)
}

// namedBareControlPlane brings up, with kwokctl and the pinned binaries,
// a control plane called name with no kwok controller at all — what
// attach meets on any cluster — every component on 127.0.0.1 only, and
// returns its kubeconfig. Each test names its own, so that one never
// deletes another's.
func namedBareControlPlane(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	root, err := binaries.DefaultCacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := binaries.Lookup(binaries.Kwokctl) // built on demand
	if err != nil {
		t.Fatal(err)
	}
	bins, err := (&binaries.Resolver{Versions: binaries.Pinned(), CacheRoot: root, Also: []binaries.Binary{ctl}}).Resolve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kwokctl := bins.Path(binaries.Kwokctl)
	_ = exec.Command(kwokctl, "--name", name, "delete", "cluster").Run() // left by an interrupted run
	t.Cleanup(func() { _ = exec.Command(kwokctl, "--name", name, "delete", "cluster").Run() })
	bind := filepath.Join(t.TempDir(), "kwokctl.yaml") // every component listens on 127.0.0.1 only
	if err := os.WriteFile(bind, []byte("apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, kwokctl, "--name", name, "--config", bind, "create", "cluster", "--runtime", "binary", "--disable", "kwok-controller", "--wait", "120s",
		"--kube-apiserver-binary", bins.Path("kube-apiserver"),
		"--kube-controller-manager-binary", bins.Path("kube-controller-manager"),
		"--kube-scheduler-binary", bins.Path("kube-scheduler"),
		"--etcd-binary", bins.Path("etcd"),
		"--kwok-controller-binary", bins.Path(binaries.Kwok)).CombinedOutput()
	if err != nil {
		t.Fatalf("kwokctl create cluster %s: %v\n%s", name, err, lastLines(string(out), 10))
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".kwok", "clusters", name, "kubeconfig.yaml")
}
