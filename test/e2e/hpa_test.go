//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

const hpaCluster = "gf-hpa-e2e"

// TestHPA is #19's HPA scenario as a user runs it: a small fleet with
// metrics-server, `ghostfleet hpa` with a step of emulated CPU far above
// the target, and the HPA taking the Deployment from 1 to at least 3
// replicas and back to 1 once the load falls (a 0 s scale-down window in
// spec.behavior keeps it short). Bad input is refused first, with one
// line and nothing created.
func TestHPA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", hpaCluster) })
	r := ghostfleet(t, ctx, "up", "--name", hpaCluster, "--nodes", "10", "--metrics-server", "--prometheus-port", fmt.Sprint(freePort(t)))
	if r.code != 0 {
		t.Fatalf("up --metrics-server: %s", r.errOut)
	}
	cs, err := fleet.Own(hpaCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "gf-hpa-e2e"
	results := t.TempDir()
	hpa := func(args ...string) result {
		return ghostfleet(t, ctx, append([]string{"hpa", "--name", hpaCluster, "--results-dir", results, "--namespace", ns}, args...)...)
	}

	t.Run("bad input: one line, nothing created", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--steps", "100m:60s,lots:60s"}, `--steps step 2 "lots:60s": CPU "lots" is not a quantity`},
			{[]string{"--steps", "900m"}, `--steps step 1 "900m" is not CPU:DURATION`},
			{[]string{"--steps", "900m:soon"}, `duration "soon" is not a duration`},
			{[]string{"--target-cpu", "0"}, "--target-cpu 0 is out of range: allowed is a whole percentage of the pods' CPU request, 1 or more"},
			{[]string{"--min-replicas", "3", "--max-replicas", "2"}, "--max-replicas 2 is out of range: allowed are --min-replicas (3) to 1000"},
			{[]string{"--scale-down-window", "2h"}, "--scale-down-window 2h0m0s is out of range"},
			{[]string{"--cpu-request", "0"}, `--cpu-request "0" is out of range`},
			{[]string{"--gpus", "9"}, "--gpus 9 is out of range: allowed are 1-8 (the largest node)"},
		} {
			r := hpa(tc.args...)
			if r.code == 0 || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
				t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, r.code, r.errOut, tc.want)
			}
		}
		if entries, _ := os.ReadDir(results); len(entries) != 0 {
			t.Errorf("refused runs left %d run folders", len(entries))
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused runs created namespace %s (get: %v)", ns, err)
		}
	})

	t.Run("the HPA scales 1 → at least 3 → 1 on emulated CPU", func(t *testing.T) {
		// 1600m on a 1-CPU request is 160 % against a 50 % target: one
		// rescale asks for ceil(1 × 160/50) = 4, capped at 4.
		r := hpa("--steps", "100m:15s,1600m:70s,100m:80s", "--max-replicas", "4", "--scale-down-window", "0s", "-o", "json")
		var res runs.HPAResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("hpa: exit %d, %v: %s", r.code, err, r.errOut)
		}
		if res.Outcome != runs.Completed || res.Dir == "" || len(res.Steps) != 3 {
			t.Fatalf("result %+v: want completed, recorded, 3 steps", res.Run)
		}
		up, down := res.Steps[1], res.Steps[2]
		if up.Direction != "up" || up.To < 3 || up.Reached == nil {
			t.Errorf("step up %+v: want up to at least 3 replicas, reached", up)
		}
		if down.Direction != "down" || down.To != 1 || down.Reached == nil {
			t.Errorf("step down %+v: want down to 1 replica, reached", down)
		}
		if res.ScaleUpSeconds == nil || res.ScaleDownSeconds == nil || res.PeakRunning < 3 {
			t.Errorf("scale up %v, down %v, peak %d: want both times and a peak of at least 3", res.ScaleUpSeconds, res.ScaleDownSeconds, res.PeakRunning)
		} else {
			t.Logf("time to scale up %.0fs (HPA acted after %v s), down %.0fs; timeline %+v", *res.ScaleUpSeconds, deref(up.FirstChange), *res.ScaleDownSeconds, res.Timeline)
		}
		rescales := 0
		for _, e := range res.Events {
			if e.Reason == "SuccessfulRescale" {
				rescales++
			}
		}
		if rescales < 2 {
			t.Errorf("HPA events %+v: want a rescale up and one down", res.Events)
		}
		if res.ControlPlaneCores <= 0 || res.CPU["kube-controller-manager"] <= 0 {
			t.Errorf("control plane CPU %v (%.3f cores): want it measured", res.CPU, res.ControlPlaneCores)
		}
		data, err := os.ReadFile(filepath.Join(res.Dir, "run.json"))
		if err != nil || !strings.Contains(string(data), `"kind": "hpa"`) {
			t.Errorf("run record %s: %v", res.Dir, err)
		}
		// The objects stay, as every workload does, until unload.
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, res.HPA, metav1.GetOptions{}); err != nil {
			t.Errorf("HPA %s after the run: %v", res.HPA, err)
		}
	})
}

func deref(f *float64) any {
	if f == nil {
		return "–"
	}
	return *f
}
