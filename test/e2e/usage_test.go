//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

const usageCluster = "gf-usage-e2e"

// podMetricsList is the part of metrics.k8s.io's PodMetricsList read here.
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Containers []struct {
			Name  string            `json:"name"`
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// metricsAPI GETs a path of metrics.k8s.io/v1beta1 through the apiserver.
func metricsAPI(ctx context.Context, cs kubernetes.Interface, path string, into any) error {
	// JSON, not the clientset's protobuf, which metrics-server also speaks.
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/"+path).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

// TestUsageThroughMetricsServer is the user's path of #19: a fleet with
// metrics-server, a few pods at the default usage, `usage set` on them,
// and the metrics API (what kubectl top and HPAs read) reporting the set
// figures after metrics-server's next scrapes. Bad input changes nothing.
func TestUsageThroughMetricsServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", usageCluster) })
	r := ghostfleet(t, ctx, "up", "--name", usageCluster, "--nodes", "10", "--metrics-server", "--prometheus-port", fmt.Sprint(freePort(t)))
	if r.code != 0 {
		t.Fatalf("up --metrics-server: %s", r.errOut)
	}
	if st, err := fleet.LoadState(usageCluster); err != nil || !st.MetricsServer {
		t.Fatalf("state %+v, %v: want metricsServer recorded", st, err)
	}
	const ns = "gf-usage"
	if r := ghostfleet(t, ctx, "load", "4", "1", "--name", usageCluster, "--namespace", ns); r.code != 0 {
		t.Fatalf("load: %s", r.errOut)
	}
	cs, err := fleet.Own(usageCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()

	t.Run("every node and pod has metrics at the default usage", func(t *testing.T) {
		eventually(t, ctx, "node metrics", func() error {
			var nodes podMetricsList
			if err := metricsAPI(ctx, cs, "nodes", &nodes); err != nil {
				return err
			}
			if len(nodes.Items) != 10 {
				return fmt.Errorf("metrics for %d nodes, want 10", len(nodes.Items))
			}
			return nil
		})
		eventually(t, ctx, "pod metrics at the default", func() error {
			return podUsage(ctx, cs, ns, 4, fleet.DefaultUsageCPU, fleet.DefaultUsageMemory)
		})
	})

	t.Run("bad input: one line, nothing changed, nothing recorded", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--selector", "ghostfleet.io/workload", "--cpu", "lots"}, `--cpu "lots" is not a quantity`},
			{[]string{"--selector", "ghostfleet.io/workload", "--memory", "2 GB"}, `--memory "2 GB" is not a quantity`},
			{[]string{"--selector", "app in (a", "--cpu", "1"}, `--selector "app in (a" is not a label selector`},
			{[]string{"--selector", "app=nothing-here", "--cpu", "1"}, `no pods matching "app=nothing-here" in any namespace: nothing changed`},
		} {
			args := append([]string{"usage", "set", "--name", usageCluster, "--results-dir", results}, tc.args...)
			r := ghostfleet(t, ctx, args...)
			if r.code == 0 || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
				t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, r.code, r.errOut, tc.want)
			}
		}
		if entries, _ := os.ReadDir(results); len(entries) != 0 {
			t.Errorf("refused changes left %d run folders", len(entries))
		}
	})

	t.Run("usage set reaches the metrics API", func(t *testing.T) {
		set := time.Now()
		r := ghostfleet(t, ctx, "usage", "set", "--name", usageCluster, "--results-dir", results,
			"--namespace", ns, "--selector", "ghostfleet.io/workload", "--cpu", "800m", "--memory", "2Gi", "-o", "json")
		var res runs.UsageResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("usage set: exit %d, %v: %s", r.code, err, r.errOut)
		}
		if res.Pods != 4 || res.Outcome != runs.Completed || res.Dir == "" {
			t.Errorf("result %+v: want 4 pods, completed, recorded", res)
		}
		eventually(t, ctx, "pod metrics at the set usage", func() error {
			return podUsage(ctx, cs, ns, 4, "800m", "2Gi")
		})
		t.Logf("the metrics API reported the set usage %.1fs after usage set", time.Since(set).Seconds())
	})

	// metrics-server exits when the apiserver does not answer as it
	// starts (kwokctl starts both together): `up` starts it again, and
	// so does `up` on a fleet whose metrics-server was killed.
	t.Run("up again brings back a killed metrics-server", func(t *testing.T) {
		pids, err := fleet.PIDs(usageCluster)
		if err != nil || pids["metrics-server"] == 0 {
			t.Fatalf("pids %v, %v", pids, err)
		}
		if err := syscall.Kill(pids["metrics-server"], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, ctx, "status to see metrics-server down", func() error {
			if running(t, ctx, usageCluster)["metrics-server"] {
				return fmt.Errorf("metrics-server still runs")
			}
			return nil
		})
		r := ghostfleet(t, ctx, "up", "--name", usageCluster, "--metrics-server")
		if r.code != 0 {
			t.Fatalf("up again: exit %d: %s", r.code, r.errOut)
		}
		if !running(t, ctx, usageCluster)["metrics-server"] {
			t.Fatalf("status says metrics-server is down after up: %s", r.errOut)
		}
		eventually(t, ctx, "pod metrics after metrics-server came back", func() error {
			return podUsage(ctx, cs, ns, 4, "800m", "2Gi")
		})
	})
}

// podUsage checks that metrics.k8s.io reports want pods in ns, each
// container at cpu (within 5 %: a rate over two scrapes) and memory.
func podUsage(ctx context.Context, cs kubernetes.Interface, ns string, want int, cpu, memory string) error {
	var pods podMetricsList
	if err := metricsAPI(ctx, cs, "namespaces/"+ns+"/pods", &pods); err != nil {
		return err
	}
	if len(pods.Items) != want {
		return fmt.Errorf("metrics for %d pods, want %d", len(pods.Items), want)
	}
	wantCPU, wantMem := resource.MustParse(cpu), resource.MustParse(memory)
	for _, p := range pods.Items {
		for _, c := range p.Containers {
			gotCPU, gotMem := resource.MustParse(c.Usage["cpu"]), resource.MustParse(c.Usage["memory"])
			if math.Abs(gotCPU.AsApproximateFloat64()-wantCPU.AsApproximateFloat64()) > 0.05*wantCPU.AsApproximateFloat64() || gotMem.Cmp(wantMem) != 0 {
				return fmt.Errorf("pod %s container %s uses cpu %s memory %s, want %s and %s", p.Metadata.Name, c.Name, c.Usage["cpu"], c.Usage["memory"], cpu, memory)
			}
		}
	}
	return nil
}
