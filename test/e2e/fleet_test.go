//go:build e2e

// Package e2e drives the ghostfleet command line against a real control
// plane (kube-apiserver, etcd, scheduler, controller-manager, kwok) and a
// real Prometheus, which the suite brings up itself from the pinned
// binaries (building them on first use).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/cmd/ghostfleet/app"
	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
)

const cluster = "ghostfleet-e2e"

// TestMain keeps the suite's runs out of the checkout's results/, which
// holds committed runs only: a test that names no --results-dir writes
// into a folder removed afterwards.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ghostfleet-e2e-results-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(record.RootEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code        int
	out, errOut string
}

func ghostfleet(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Run(ctx, app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	t.Logf("ghostfleet %s → exit %d\n%s%s", strings.Join(args, " "), code, out.String(), lastLines(errOut.String(), 15))
	return result{code, out.String(), errOut.String()}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestFleetLifecycle is the user's path: up with 100 GPU nodes, up again,
// status, scale down, clean.
func TestFleetLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	port := freePort(t)
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", cluster) })

	r := ghostfleet(t, ctx, "up", "--name", cluster, "--nodes", "100", "--gpu-profile", "dgx-a100-80gb", "--prometheus-port", fmt.Sprint(port))
	if r.code != 0 {
		t.Fatalf("up failed: %s", r.errOut)
	}
	if !strings.Contains(r.out, "100 dgx-a100-80gb nodes (800 GPUs as nvidia.com/gpu)") {
		t.Errorf("up output does not report the fleet: %q", r.out)
	}

	t.Run("up again is a no-op", func(t *testing.T) {
		r := ghostfleet(t, ctx, "up", "--name", cluster)
		if r.code != 0 || !strings.Contains(r.out, "already up") {
			t.Errorf("exit %d, out %q", r.code, r.out)
		}
	})

	t.Run("status", func(t *testing.T) {
		st := status(t, ctx)
		if st.Nodes.Total != 100 || st.Nodes.Ready != 100 || st.Nodes.Fake != 100 {
			t.Errorf("nodes %+v, want 100 total, Ready, fake", st.Nodes)
		}
		if st.GPUs.Allocatable != 800 || st.GPUs.Allocated != 0 {
			t.Errorf("gpus %+v, want 800 allocatable, 0 allocated", st.GPUs)
		}
		want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller", "prometheus"}
		var got []string
		for _, c := range st.Components {
			got = append(got, c.Name)
			if !c.Healthy || !c.Running {
				t.Errorf("component %+v is not healthy", c)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("components %v, want %v", got, want)
		}
		if st.Prometheus.URL != fmt.Sprintf("http://127.0.0.1:%d", port) || !st.Prometheus.Reachable {
			t.Errorf("prometheus %+v", st.Prometheus)
		}
		if _, err := os.Stat(st.Kubeconfig); err != nil {
			t.Errorf("kubeconfig: %v", err)
		}
	})

	t.Run("prometheus scrapes every component", func(t *testing.T) {
		prom, err := metrics.NewPrometheus(fmt.Sprintf("http://127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		targets, err := prom.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		jobs := map[string]bool{}
		for _, tg := range targets {
			jobs[tg.Job] = tg.Up()
		}
		for _, job := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"} {
			if up, ok := jobs[job]; !ok || !up {
				t.Errorf("target %s: present %v, up %v (all: %v)", job, ok, up, jobs)
			}
		}
	})

	t.Run("nodes look like DGX A100 servers to the scheduler", func(t *testing.T) {
		cs, err := fleet.Own(cluster).Clientset(false)
		if err != nil {
			t.Fatal(err)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, fleet.NodeName(5), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels["nvidia.com/gpu.product"] != "NVIDIA-A100-SXM4-80GB" || n.Labels[fleet.LabelRack] != "rack-0001" {
			t.Errorf("labels %v", n.Labels)
		}
		gpus := n.Status.Allocatable[fleet.ResourceGPU]
		if gpus.Value() != 8 {
			t.Errorf("allocatable GPUs %s, want 8", gpus.String())
		}
		if !fleet.NodeReady(n) {
			t.Error("node is not Ready: kwok does not manage it")
		}
		if len(n.Spec.Taints) == 0 || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("taints %v", n.Spec.Taints)
		}
	})

	t.Run("every component listens on loopback only", func(t *testing.T) { checkLoopbackOnly(t, cluster) })

	t.Run("keys and kubeconfigs are the owner's only", func(t *testing.T) {
		dir := filepath.Dir(fleet.Own(cluster).Kubeconfig)
		keys, _ := filepath.Glob(filepath.Join(dir, "pki", "*.key"))
		if len(keys) == 0 {
			t.Fatalf("no private keys under %s/pki", dir)
		}
		want := map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "pki"): 0o700, fleet.Own(cluster).Kubeconfig: 0o600}
		for _, k := range keys {
			want[k] = 0o600
		}
		for path, mode := range want {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != mode {
				t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), mode)
			}
		}
	})

	t.Run("attach with --kubeconfig", func(t *testing.T) {
		kc := fleet.Own(cluster).Kubeconfig
		r := ghostfleet(t, ctx, "status", "--kubeconfig", kc, "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var st fleet.Status
		if err := json.Unmarshal([]byte(r.out), &st); err != nil {
			t.Fatal(err)
		}
		if !st.Attached || st.Nodes.Total != 100 {
			t.Errorf("attached status %+v", st)
		}
	})

	t.Run("scale down and up", func(t *testing.T) {
		r := ghostfleet(t, ctx, "nodes", "40", "--name", cluster)
		if r.code != 0 || !strings.Contains(r.out, "60 deleted") {
			t.Fatalf("exit %d, out %q", r.code, r.out)
		}
		if st := status(t, ctx); st.Nodes.Total != 40 || st.GPUs.Allocatable != 320 {
			t.Errorf("after nodes 40: %+v %+v", st.Nodes, st.GPUs)
		}
		r = ghostfleet(t, ctx, "nodes", "48", "--name", cluster, "--gpu-profile", "dgx-b200")
		if r.code != 0 || !strings.Contains(r.out, "8 created") || !strings.Contains(r.out, "40 kept nodes are dgx-a100-80gb") {
			t.Fatalf("exit %d, out %q", r.code, r.out)
		}
		if st := status(t, ctx); st.Nodes.Total != 48 || st.Nodes.Ready != 48 {
			t.Errorf("after nodes 48: %+v", st.Nodes)
		}
	})

	t.Run("a busy Prometheus port creates nothing", func(t *testing.T) {
		const other = "ghostfleet-e2e-busy"
		r := ghostfleet(t, ctx, "up", "--name", other, "--prometheus-port", fmt.Sprint(port))
		if r.code == 0 || !strings.Contains(r.errOut, fmt.Sprintf("port %d on 127.0.0.1 is in use", port)) {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
		if fleet.Exists(ctx, other) {
			t.Errorf("cluster %s was created", other)
			ghostfleet(t, context.Background(), "clean", "--name", other)
		}
	})

	t.Run("clean", func(t *testing.T) {
		pids, err := fleet.PIDs(cluster)
		if err != nil || len(pids) == 0 {
			t.Fatalf("pids %v, %v", pids, err)
		}
		r := ghostfleet(t, ctx, "clean", "--name", cluster)
		if r.code != 0 || !strings.Contains(r.out, "deleted") {
			t.Fatalf("exit %d, out %q", r.code, r.out)
		}
		if fleet.Exists(ctx, cluster) {
			t.Error("cluster still exists")
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, pid := range pids {
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if alive(pid) {
				t.Errorf("process %d still runs after clean", pid)
			}
		}
		r = ghostfleet(t, ctx, "status", "--name", cluster)
		if r.code == 0 || !strings.Contains(r.errOut, "is not up") {
			t.Errorf("status after clean: exit %d, stderr %q", r.code, r.errOut)
		}
	})
}

func status(t *testing.T, ctx context.Context) fleet.Status {
	t.Helper()
	return statusOf(t, ctx, cluster)
}

func statusOf(t *testing.T, ctx context.Context, name string) fleet.Status {
	t.Helper()
	r := ghostfleet(t, ctx, "status", "--name", name, "-o", "json")
	if r.code != 0 {
		t.Fatalf("status exit %d: %s", r.code, r.errOut)
	}
	var st fleet.Status
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, r.out)
	}
	return st
}
