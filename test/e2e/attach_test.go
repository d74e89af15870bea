//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

const bareCluster = "attach-e2e-bare"

// bareControlPlane is TestAttach's bare control plane (see
// namedBareControlPlane).
func bareControlPlane(t *testing.T, ctx context.Context) string {
	t.Helper()
	return namedBareControlPlane(t, ctx, bareCluster)
}

// inventory names the objects of the kinds attach and detach could touch,
// kind by kind, so that "as before" is a comparison of names.
func inventory(t *testing.T, ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	add := func(kind string, names ...string) { out[kind] = append(out[kind], names...) }
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		add("nodes", n.Name+" "+n.Labels["team"])
	}
	nss, _ := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	for _, n := range nss.Items {
		add("namespaces", n.Name)
	}
	sas, _ := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	for _, s := range sas.Items {
		add("serviceaccounts", s.Namespace+"/"+s.Name)
	}
	roles, _ := cs.RbacV1().Roles("").List(ctx, metav1.ListOptions{})
	for _, r := range roles.Items {
		add("roles", r.Namespace+"/"+r.Name)
	}
	cms, _ := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	for _, c := range cms.Items {
		add("configmaps", c.Namespace+"/"+c.Name)
	}
	leases, _ := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	for _, l := range leases.Items {
		add("node leases", l.Name)
	}
	pods, _ := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		add("pods", p.Namespace+"/"+p.Name)
	}
	crds, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds.Items {
		add("CRDs", c.GetName())
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func sameInventory(a, b map[string][]string) string {
	var diffs []string
	for _, k := range []string{"nodes", "namespaces", "serviceaccounts", "roles", "configmaps", "node leases", "pods", "CRDs"} {
		if !slices.Equal(a[k], b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: before %v, after %v", k, a[k], b[k]))
		}
	}
	return strings.Join(diffs, "\n")
}

// TestAttach is attach's user path on a bare control plane (no kwok
// controller): a node made by hand, consent refused without the flag,
// attach with two kwok shards, nodes 40 Ready through both, a load and a
// fault on them only, the second shard moved to kwok-shard (another
// machine's) and 10 more nodes Ready through it, detach, and the cluster as it was — the same
// nodes, namespaces, ServiceAccounts, Roles, ConfigMaps, leases, pods and
// CRDs — with the hand-made node untouched. A second detach removes
// nothing.
func TestAttach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kc := bareControlPlane(t, ctx)
	target := fleet.Attach(kc, "")
	cs, err := target.Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := target.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	gf := func(args ...string) result {
		t.Helper()
		return gfIn(t, ctx, kc, results, args...)
	}
	t.Cleanup(func() { ghostfleet(t, context.Background(), "detach", "--kubeconfig", kc, "--results-dir", results) })

	hand := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hand-made-node", Labels: map[string]string{"team": "mine"}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, hand, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the controller-manager's first writes (default ServiceAccounts, root CA) settle
	before := inventory(t, ctx, cs, dyn)

	if r := gf("nodes", "5"); r.code == 0 || !strings.Contains(r.errOut, "run `ghostfleet attach --kubeconfig "+kc+"` first") {
		t.Fatalf("nodes before attach: exit %d, %q; want a refusal naming attach", r.code, r.errOut)
	}
	r := gf("attach")
	if r.code == 0 || !strings.Contains(r.errOut, "refusing to attach to https://") || !strings.Contains(r.errOut, runs.ConsentFlag) {
		t.Fatalf("attach without consent: exit %d, %q", r.code, r.errOut)
	}
	if d := sameInventory(before, inventory(t, ctx, cs, dyn)); d != "" {
		t.Fatalf("a refused attach changed the cluster:\n%s", d)
	}

	r = gf("attach", runs.ConsentFlag, "--kwok-shards", "2", "-o", "json")
	if r.code != 0 {
		t.Fatalf("attach: %s", r.errOut)
	}
	var att runs.AttachResult
	if err := json.Unmarshal([]byte(r.out), &att); err != nil {
		t.Fatal(err)
	}
	if len(att.CRDsInstalled) != 3 || att.Stages == 0 || len(att.KwokPIDs) != 2 || att.Dir == "" {
		t.Errorf("attach result %+v: want 3 CRDs installed, stages, two kwok shards and a run folder", att)
	}
	st := statusOfAttached(t, ctx, kc)
	for _, shard := range []string{"kwok-controller (local, shard 1/2)", "kwok-controller (local, shard 2/2)"} {
		if !hasHealthy(st, shard) {
			t.Errorf("status components %+v: want %s healthy", st.Components, shard)
		}
	}
	// Attaching again needs no consent and starts nothing new.
	if r := gf("attach", "--kwok-shards", "2", "-o", "json"); r.code != 0 || !strings.Contains(r.out, `"kwokAlready": true`) {
		t.Errorf("attach again: exit %d, %s %s", r.code, r.out, r.errOut)
	}

	// 40 nodes are blocks 0 and 1: each shard has to make its own Ready.
	if r := gf("nodes", "40"); r.code != 0 || !strings.Contains(r.out, "all Ready") {
		t.Fatalf("nodes 40: exit %d, %s %s", r.code, r.out, r.errOut)
	}
	if r := gf("load", "40", "1", "-o", "json"); r.code != 0 {
		t.Fatalf("load: %s", r.errOut)
	} else {
		var lr workload.LoadResult
		if err := json.Unmarshal([]byte(r.out), &lr); err != nil {
			t.Fatal(err)
		}
		if lr.Running != 40 {
			t.Errorf("load: %d running, want 40", lr.Running)
		}
	}
	pods, err := cs.CoreV1().Pods("gf-load").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Spec.NodeName, fleet.NodePrefix) {
			t.Errorf("pod %s on %q, not a GhostFleet node", p.Name, p.Spec.NodeName)
		}
	}
	if r := gf("fault", "gpu-xid", "--nodes", "2"); r.code != 0 {
		t.Errorf("fault: %s", r.errOut)
	}
	eventually(t, ctx, "gpu-xid condition on gf-node-00000", func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, fleet.NodeName(0), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if nodeCondition(n, "GpuXidProblem") != corev1.ConditionTrue {
			return fmt.Errorf("conditions %v", n.Status.Conditions)
		}
		return nil
	})

	// A remote shard (#18 item 2): attach leaves shard 2 of 2 to
	// kwok-shard, run here as another machine would run it; block 1's
	// nodes (32-63) then come Ready only through it.
	r = gf("attach", "--kwok-shards", "2", "--remote-shards", "1")
	if r.code != 0 || !strings.Contains(r.out, "ghostfleet kwok-shard --kubeconfig "+kc+" --shard 2 --of 2") {
		t.Fatalf("attach with a remote shard: exit %d, %s %s; want the kwok-shard command of shard 2", r.code, r.out, r.errOut)
	}
	if r := gf("kwok-shard", "--shard", "1", "--of", "2"); r.code == 0 || !strings.Contains(r.errOut, "runs on the machine that attached") {
		t.Errorf("kwok-shard of a local shard: exit %d, %q; want a refusal", r.code, r.errOut)
	}
	if r := gf("kwok-shard", "--shard", "2", "--of", "3"); r.code == 0 || !strings.Contains(r.errOut, "is attached with --kwok-shards 2") {
		t.Errorf("kwok-shard --of 3: exit %d, %q; want a refusal", r.code, r.errOut)
	}
	shardCtx, stopShard := context.WithCancel(ctx)
	shardDone := make(chan result, 1)
	go func() { shardDone <- gfIn(t, shardCtx, kc, results, "kwok-shard", "--shard", "2", "--of", "2") }()
	eventually(t, ctx, "the remote shard healthy in status", func() error {
		st := statusOfAttached(t, ctx, kc)
		for _, c := range st.Components {
			if c.Name == "kwok-controller (remote, shard 2/2)" && c.Healthy && c.Running {
				return nil
			}
		}
		return fmt.Errorf("components %+v", st.Components)
	})
	if r := gf("nodes", "50"); r.code != 0 || !strings.Contains(r.out, "all Ready") {
		t.Errorf("nodes 50 with shard 2 remote: exit %d, %s %s", r.code, r.out, r.errOut)
	}
	stopShard() // Ctrl-C on the other machine
	select {
	case r := <-shardDone:
		if r.code != 0 {
			t.Errorf("kwok-shard after Ctrl-C: exit %d, %s", r.code, r.errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kwok-shard did not end 30s after Ctrl-C")
	}

	r = gf("detach", "-o", "json")
	if r.code != 0 {
		t.Fatalf("detach: %s", r.errOut)
	}
	var det runs.DetachResult
	if err := json.Unmarshal([]byte(r.out), &det); err != nil {
		t.Fatal(err)
	}
	if len(det.Removed["nodes"]) != 50 || len(det.Removed["CRDs"]) != 3 || !det.KwokStopped || slices.Contains(det.Removed["nodes"], hand.Name) {
		t.Errorf("detach removed %v (kwok stopped %v): want 50 nodes, 3 CRDs, the controller, not %s", det.Removed, det.KwokStopped, hand.Name)
	}
	eventually(t, ctx, "the cluster as before attach", func() error {
		if d := sameInventory(before, inventory(t, ctx, cs, dyn)); d != "" {
			return fmt.Errorf("%s", d)
		}
		return nil
	})
	got, err := cs.CoreV1().Nodes().Get(ctx, hand.Name, metav1.GetOptions{})
	if err != nil || got.Labels["team"] != "mine" || len(got.Labels) != 1 {
		t.Errorf("hand-made node after detach: %v %+v", err, got)
	}
	if r := gf("detach", "-o", "json"); r.code != 0 || !strings.Contains(r.out, `"removed": {}`) {
		t.Errorf("second detach: exit %d, %s %s", r.code, r.out, r.errOut)
	}
}

// gfIn runs ghostfleet on the attached cluster kc, its runs in results.
func gfIn(t *testing.T, ctx context.Context, kc, results string, args ...string) result {
	t.Helper()
	return ghostfleet(t, ctx, append(args, "--kubeconfig", kc, "--results-dir", results)...)
}

func statusOfAttached(t *testing.T, ctx context.Context, kc string) fleet.Status {
	t.Helper()
	r := ghostfleet(t, ctx, "status", "--kubeconfig", kc, "-o", "json")
	var st fleet.Status
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatalf("status: %v\n%s", err, r.out)
	}
	return st
}

func hasHealthy(st fleet.Status, name string) bool {
	for _, c := range st.Components {
		if c.Name == name {
			return c.Healthy
		}
	}
	return false
}
