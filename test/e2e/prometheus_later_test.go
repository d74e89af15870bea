//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
)

const laterCluster = "gf-later-e2e"

// TestPrometheusLater is a first run's path (the console brings the fleet
// up with --prometheus-later): with every binary but Prometheus in the
// cache, the fleet comes up without it, its port kept and nothing
// listening there; `up` again adds it (here from --binary, where a first
// run builds it) as a component kwokctl manages, scraping every target.
func TestPrometheusLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := binaries.DefaultCacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := &binaries.Resolver{Versions: binaries.Pinned(), CacheRoot: root, PrometheusFrom: binaries.PrometheusBuild}
	set, err := r.Resolve(ctx) // what the other tests use; built if missing
	if err != nil {
		t.Fatal(err)
	}
	// A cache like a first run's once the control plane is built.
	cache := t.TempDir()
	dir := filepath.Join(cache, binaries.Pinned().SetName())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries.All {
		if b.Name != binaries.Prometheus {
			if err := os.Symlink(set.Path(b.Name), filepath.Join(dir, b.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}

	ghostfleet(t, ctx, "clean", "--name", laterCluster)
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", laterCluster) })
	port := freePort(t)
	up := []string{"up", "--name", laterCluster, "--nodes", "10", "--cache-dir", cache, "--prometheus-port", fmt.Sprint(port)}
	res := ghostfleet(t, ctx, append(up, "--prometheus-later")...)
	if res.code != 0 {
		t.Fatalf("up --prometheus-later: exit %d: %s", res.code, res.errOut)
	}
	if !strings.Contains(res.out, "not built yet") {
		t.Errorf("up --prometheus-later does not say Prometheus is still to come:\n%s", res.out)
	}
	st, err := fleet.LoadState(laterCluster)
	if err != nil || !st.PrometheusPending || st.PrometheusPort != port {
		t.Fatalf("state after up --prometheus-later: %+v, %v; want Prometheus pending on port %d", st, err, port)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on Prometheus's port %d before Prometheus was added", port)
	}
	if _, err := os.Lstat(filepath.Join(dir, binaries.Prometheus)); err == nil {
		t.Errorf("up --prometheus-later built or cached Prometheus")
	}
	if res := ghostfleet(t, ctx, "status", "--name", laterCluster); res.code != 0 || !strings.Contains(res.out, "not built yet") {
		t.Errorf("status on a fleet without its Prometheus yet: exit %d, want 0 and \"not built yet\":\n%s%s", res.code, res.out, res.errOut)
	}

	res = ghostfleet(t, ctx, append(up, "--binary", "prometheus="+set.Path(binaries.Prometheus))...)
	if res.code != 0 {
		t.Fatalf("up adding Prometheus: exit %d: %s", res.code, res.errOut)
	}
	if !strings.Contains(res.out, "Prometheus is built and added") {
		t.Errorf("up does not say it added Prometheus:\n%s", res.out)
	}
	if st, err = fleet.LoadState(laterCluster); err != nil || st.PrometheusPending {
		t.Fatalf("state after up: %+v, %v; want Prometheus no longer pending", st, err)
	}
	names, err := fleet.ComponentNames(ctx, laterCluster)
	if err != nil || !slices.Contains(names, "prometheus") {
		t.Fatalf("kwokctl's components after up: %v, %v; want prometheus among them", names, err)
	}
	status := ghostfleet(t, ctx, "status", "--name", laterCluster)
	if status.code != 0 {
		t.Fatalf("status: exit %d: %s", status.code, status.errOut)
	}
	// Every component is a target: 6 of 6 (Prometheus itself included).
	if want := fmt.Sprintf("%d/%d targets up", len(names), len(names)); !strings.Contains(status.out, want) {
		t.Errorf("status does not report %q:\n%s", want, status.out)
	}
	// kwok.yaml keeps the kwok controller's own configuration (its
	// parallelism), which it reads at its next start.
	workdir := filepath.Dir(fleet.Own(laterCluster).Kubeconfig)
	if data, err := os.ReadFile(filepath.Join(workdir, "kwok.yaml")); err != nil || !strings.Contains(string(data), "kind: KwokConfiguration") {
		t.Errorf("kwok.yaml after adding Prometheus lacks the KwokConfiguration (%v):\n%s", err, data)
	}
	// kwokctl manages it like the rest: its own per-component restart.
	if res := ghostfleet(t, ctx, "restart", "prometheus", "--name", laterCluster); res.code != 0 {
		t.Errorf("restart prometheus: exit %d: %s", res.code, res.errOut)
	}

	// An add cut short after kwokctl's configuration was written, before
	// the state was (a crash): `up` picks up where it stopped, and does
	// not add a second Prometheus.
	statePath := filepath.Join(workdir, "ghostfleet.json")
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, []byte(strings.Replace(string(data), "{", `{"prometheusPending": true,`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := ghostfleet(t, ctx, append(up, "--binary", "prometheus="+set.Path(binaries.Prometheus))...); res.code != 0 || !strings.Contains(res.out, "Prometheus is built and added") {
		t.Fatalf("up after an interrupted add: exit %d, want 0 and Prometheus added: %s%s", res.code, res.out, res.errOut)
	}
	if again, err := fleet.ComponentNames(ctx, laterCluster); err != nil || len(again) != len(names) {
		t.Errorf("components after the second add: %v, %v; want %v", again, err, names)
	}
}
