//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

const draCluster = "ghostfleet-e2e-dra"

// TestDRA is a fleet whose GPUs are DRA devices (#15 item 1): 20 nodes up
// with --gpu-model dra publish a ResourceSlice each and no nvidia.com/gpu;
// pods asking through ResourceClaimTemplates are allocated devices by the
// real scheduler and marked Running by kwok; status and the console's data
// layer count the allocated devices; a claim no node can satisfy is
// refused, or with --allow-unschedulable reported with the scheduler's
// reason instead of waiting out the timeout; binpack fills the devices
// with a template per pod size; scaling down takes the slices with the
// nodes.
func TestDRA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", draCluster) })
	if r := ghostfleet(t, ctx, "up", "--name", draCluster, "--nodes", "20", "--gpu-model", "dra", "--prometheus-port", fmt.Sprint(freePort(t))); r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	cs, err := fleet.Own(draCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	resultsDir := t.TempDir()
	load := func(t *testing.T, args ...string) (result, workload.LoadResult) {
		t.Helper()
		r := ghostfleet(t, ctx, append(append([]string{"load"}, args...), "--name", draCluster, "-o", "json", "--results-dir", resultsDir)...)
		var res workload.LoadResult
		if r.out != "" {
			if err := json.Unmarshal([]byte(r.out), &res); err != nil {
				t.Fatalf("%v\n%s", err, r.out)
			}
		}
		return r, res
	}

	t.Run("nodes publish devices, not nvidia.com/gpu", func(t *testing.T) {
		slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(slices.Items) != 20 {
			t.Errorf("%d ResourceSlices, want one per node (20)", len(slices.Items))
		}
		if _, err := cs.ResourceV1().DeviceClasses().Get(ctx, fleet.DeviceClassGPU, metav1.GetOptions{}); err != nil {
			t.Errorf("DeviceClass: %v", err)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, fleet.NodeName(0), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Status.Allocatable[fleet.ResourceGPU]; ok {
			t.Errorf("a DRA node advertises %s too", fleet.ResourceGPU)
		}
		st := statusOf(t, ctx, draCluster)
		if st.GPUs.Allocatable != 160 || st.GPUs.Devices != 160 || st.GPUs.Allocated != 0 {
			t.Errorf("status GPUs %+v: want 160 allocatable, all devices, none allocated", st.GPUs)
		}
	})

	t.Run("load 40 x 2 --claim count runs and is counted", func(t *testing.T) {
		r, res := load(t, "40", "2", "--claim", "count", "--namespace", "gf-dra-count")
		if r.code != 0 || res.Running != 40 || res.Unschedulable != 0 || res.Claim != workload.ClaimCount {
			t.Fatalf("exit %d, %+v: %s", r.code, res, r.errOut)
		}
		claims, err := cs.ResourceV1().ResourceClaims("gf-dra-count").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		allocated := 0
		for _, c := range claims.Items {
			if c.Status.Allocation != nil {
				allocated += len(c.Status.Allocation.Devices.Results)
			}
		}
		if len(claims.Items) != 40 || allocated != 80 {
			t.Errorf("%d claims holding %d devices, want 40 holding 80", len(claims.Items), allocated)
		}
		if st := statusOf(t, ctx, draCluster); st.GPUs.Allocated != 80 {
			t.Errorf("status: %d GPUs allocated, want 80", st.GPUs.Allocated)
		}
		views, err := watch.Fleet(ctx, cs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		v := <-views
		if v.GPUs != 160 || v.GPUsUsed != 80 || v.Running < 40 {
			t.Errorf("fleet view: %d/%d GPUs, %d running; want 80/160, 40", v.GPUsUsed, v.GPUs, v.Running)
		}
	})

	t.Run("nvlink and product claims", func(t *testing.T) {
		r, res := load(t, "4", "8", "--claim", "nvlink", "--namespace", "gf-dra-nvlink")
		if r.code != 0 || res.Running != 4 {
			t.Errorf("nvlink: exit %d, %+v: %s", r.code, res, r.errOut)
		}
		r, res = load(t, "4", "1", "--claim", "product=NVIDIA-H100-80GB-HBM3", "--namespace", "gf-dra-product")
		if r.code != 0 || res.Running != 4 {
			t.Errorf("product: exit %d, %+v: %s", r.code, res, r.errOut)
		}
	})

	t.Run("claims no node can satisfy", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"2", "16", "--claim", "count"}, "GPUs per pod 16 is more than any node has (largest: 8)"},
			{[]string{"2", "1", "--claim", "product=NVIDIA-B200"}, `no node publishes a GPU whose productName is "NVIDIA B200"`},
			{[]string{"2", "1", "--claim", "none"}, "offer their GPUs through DRA"},
			{[]string{"2", "1", "--claim", "gpus=2"}, `--claim "gpus=2" is not a claim mode`},
		} {
			r, _ := load(t, tc.args...)
			if r.code == 0 || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
				t.Errorf("load %v: exit %d, stderr %q; want one line with %q", tc.args, r.code, r.errOut, tc.want)
			}
		}
		// Measured anyway, it ends on the scheduler's word, not the timeout.
		start := time.Now()
		r, res := load(t, "2", "16", "--claim", "count", "--allow-unschedulable", "--namespace", "gf-dra-unsat", "--timeout", "5m")
		if r.code != 1 || res.Unschedulable != 2 || res.Running != 0 || !strings.Contains(res.UnschedulableReason, "nodes are available") {
			t.Errorf("exit %d, %+v: want 2 unschedulable with the scheduler's reason", r.code, res)
		}
		if !strings.Contains(r.errOut, "2 of 2 pods unschedulable") {
			t.Errorf("stderr %q", r.errOut)
		}
		if took := time.Since(start); took > 3*time.Minute {
			t.Errorf("took %s: waited for the timeout", took)
		}
	})

	t.Run("binpack fills devices through a template per size", func(t *testing.T) {
		if r := ghostfleet(t, ctx, "unload", "--name", draCluster); r.code != 0 {
			t.Fatalf("unload: %s", r.errOut)
		}
		r := ghostfleet(t, ctx, "binpack", "--fill", "0.5", "--name", draCluster, "-o", "json", "--results-dir", resultsDir)
		var res runs.BinpackResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("exit %d, %v: %s%s", r.code, err, r.out, r.errOut)
		}
		if res.Claim != workload.ClaimCount || res.TotalGPUs != 160 || res.Outcome != runs.AllScheduled || res.ScheduledGPUs != res.TargetGPUs || res.TargetGPUs != 80 {
			t.Errorf("claim %q, %d of %d GPUs scheduled (target %d), %s; want count, all 80 of 160", res.Claim, res.ScheduledGPUs, res.TotalGPUs, res.TargetGPUs, res.Outcome)
		}
		nodes, free := 0, 0
		for f, n := range res.FreeGPUsPerNode {
			nodes += n
			free += f * n
		}
		if nodes != 20 || free != 80 {
			t.Errorf("nodes by free GPUs %v: %d nodes with %d free, want 20 with 80", res.FreeGPUsPerNode, nodes, free)
		}
		claims, err := cs.ResourceV1().ResourceClaims("gf-binpack").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(claims.Items) != res.Pods {
			t.Errorf("%d claims for %d pods", len(claims.Items), res.Pods)
		}
		if st := statusOf(t, ctx, draCluster); st.GPUs.Allocated != 80 {
			t.Errorf("status: %d GPUs allocated, want 80", st.GPUs.Allocated)
		}
		r = ghostfleet(t, ctx, "binpack", "--fill", "0.6", "--claim", "nvlink", "--name", draCluster)
		if r.code == 0 || !strings.Contains(r.errOut, `--claim "nvlink" is not a claim binpack takes`) {
			t.Errorf("--claim nvlink: exit %d, %q", r.code, r.errOut)
		}
	})

	// Kubernetes 1.36's DRAExtendedResource: once the DeviceClass serves
	// nvidia.com/gpu, pods asking for it get devices through a claim the
	// scheduler makes, and are counted once.
	t.Run("binpack --claim none once the DeviceClass serves nvidia.com/gpu", func(t *testing.T) {
		if r := ghostfleet(t, ctx, "unload", "--name", draCluster); r.code != 0 {
			t.Fatalf("unload: %s", r.errOut)
		}
		r := ghostfleet(t, ctx, "binpack", "--fill", "0.5", "--claim", "none", "--name", draCluster, "--results-dir", t.TempDir())
		if r.code == 0 || !strings.Contains(r.errOut, "no DeviceClass serves nvidia.com/gpu") {
			t.Fatalf("--claim none before the class serves it: exit %d, %q", r.code, r.errOut)
		}
		if r := ghostfleet(t, ctx, "nodes", "20", "--dra-extended-resource", "--name", draCluster); r.code != 0 {
			t.Fatalf("nodes 20 --dra-extended-resource: %s", r.errOut)
		}
		r = ghostfleet(t, ctx, "binpack", "--fill", "0.5", "--claim", "none", "--name", draCluster, "-o", "json", "--results-dir", resultsDir)
		var res runs.BinpackResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("exit %d, %v: %s%s", r.code, err, r.out, r.errOut)
		}
		if res.Claim != workload.ClaimNone || res.TotalGPUs != 160 || res.Outcome != runs.AllScheduled || res.ScheduledGPUs != 80 {
			t.Errorf("claim %q, %d of %d GPUs scheduled, %s; want none, all 80 of 160", res.Claim, res.ScheduledGPUs, res.TotalGPUs, res.Outcome)
		}
		pods, err := cs.CoreV1().Pods("gf-binpack").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claims, err := cs.ResourceV1().ResourceClaims("gf-binpack").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != res.Pods || len(claims.Items) != res.Pods {
			t.Errorf("%d pods and %d claims for %d pods", len(pods.Items), len(claims.Items), res.Pods)
		}
		for _, p := range pods.Items {
			if p.Status.ExtendedResourceClaimStatus == nil {
				t.Errorf("pod %s: no claim made for its nvidia.com/gpu", p.Name)
				break
			}
		}
		if st := statusOf(t, ctx, draCluster); st.GPUs.Allocated != 80 {
			t.Errorf("status: %d GPUs allocated, want 80 (each pod's GPUs counted once)", st.GPUs.Allocated)
		}
	})

	t.Run("scaling down takes the slices with the nodes", func(t *testing.T) {
		if r := ghostfleet(t, ctx, "unload", "--name", draCluster); r.code != 0 {
			t.Fatalf("unload: %s", r.errOut)
		}
		if r := ghostfleet(t, ctx, "nodes", "10", "--name", draCluster); r.code != 0 {
			t.Fatalf("nodes 10: %s", r.errOut)
		}
		eventually(t, ctx, "the garbage collector removes the deleted nodes' slices", func() error {
			slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(slices.Items) != 10 {
				return fmt.Errorf("%d slices, want 10", len(slices.Items))
			}
			return nil
		})
		if r := ghostfleet(t, ctx, "nodes", "12", "--name", draCluster, "--gpu-model", "extended"); r.code == 0 || !strings.Contains(r.errOut, "a fleet has one GPU model") {
			t.Errorf("changing model: exit %d, %q", r.code, r.errOut)
		}
		if r := ghostfleet(t, ctx, "nodes", "12", "--name", draCluster); r.code != 0 {
			t.Fatalf("nodes 12: %s", r.errOut)
		}
		if st := statusOf(t, ctx, draCluster); st.GPUs.Devices != 96 {
			t.Errorf("after growing to 12 without --gpu-model: %d devices, want 96", st.GPUs.Devices)
		}
	})
}
