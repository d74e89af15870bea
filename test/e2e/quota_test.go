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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

const quotaCluster = "gf-quota-e2e"

// quotaBytes is the test fleet's etcd quota: 24 MiB, a fresh 20-node
// fleet's etcd holds about 1 MiB.
const quotaBytes = 24 << 20

// quotaProfile is the default profile's figures with a small etcd quota.
var quotaProfile = fmt.Sprintf(`apiVersion: ghostfleet.dev/v1alpha1
kind: ComponentProfile
metadata:
  name: e2e-quota
controllerManager: {qps: 20, burst: 30, workloadSyncs: 5, gcSyncs: 20}
apiServer: {maxRequestsInflight: 400, maxMutatingRequestsInflight: 200}
etcd:
  quotaBackendBytes: %d
---
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 50, burst: 100}
`, quotaBytes)

const fillNamespace = "gf-quota-fill"

// fill creates ConfigMaps of about 900 KB until etcd refuses a write for
// lack of space, and returns how many it created.
func fill(ctx context.Context, cs kubernetes.Interface) (int, error) {
	blob := strings.Repeat("x", 900<<10)
	for i := range 100 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%03d", i)}, Data: map[string]string{"blob": blob}}
		_, err := cs.CoreV1().ConfigMaps(fillNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil && requests.IsEtcdNoSpace(err.Error()) {
			return i, nil
		}
		if err != nil {
			return i, err
		}
	}
	return 100, fmt.Errorf("100 ConfigMaps of 900 KB and etcd still takes writes: is its quota %d?", quotaBytes)
}

// TestEtcdQuota drives a small fleet's etcd to its quota while a churn
// runs: the churn's record names the NOSPACE alarm and the recovery,
// status reports the alarm and exits 1, a load that cannot start says
// what to run, and `etcd recover` (after the filler is deleted) brings
// the database back under the quota with writes working again.
func TestEtcdQuota(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", quotaCluster) })
	profile := filepath.Join(t.TempDir(), "quota.yaml")
	if err := os.WriteFile(profile, []byte(quotaProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ghostfleet(t, ctx, "up", "--name", quotaCluster, "--nodes", "20", "--profile-file", profile, "--prometheus-port", fmt.Sprint(freePort(t)))
	if r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	st := statusOf(t, ctx, quotaCluster)
	if st.Etcd == nil || st.Etcd.Quota != quotaBytes || len(st.Etcd.Alarms) != 0 {
		t.Fatalf("etcd before filling: %+v, want the %d quota and no alarm", st.Etcd, quotaBytes)
	}
	cs, err := fleet.Own(quotaCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fillNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resultsDir := t.TempDir()

	// A churn runs while etcd fills up: its writes start failing half-way
	// (filling takes some 30s on a busy 2-core machine).
	const churnFor = 75 * time.Second
	churnDone := make(chan result, 1)
	go func() {
		churnDone <- ghostfleet(t, ctx, "churn", "10", churnFor.String(), "--name", quotaCluster, "--results-dir", resultsDir, "-o", "json")
	}()
	time.Sleep(5 * time.Second)
	filled := time.Now()
	n, err := fill(ctx, cs)
	if err != nil {
		t.Fatalf("filling etcd: %v", err)
	}
	t.Logf("etcd refused writes after %d ConfigMaps of 900 KB (%.1fs)", n, time.Since(filled).Seconds())
	if time.Since(filled) > churnFor-10*time.Second {
		t.Errorf("filling etcd took %s, the churn %s: too little of it ran against the alarm", time.Since(filled), churnFor)
	}

	t.Run("the churn's record names the alarm and the recovery", func(t *testing.T) {
		c := <-churnDone
		var churn runs.ChurnResult
		if err := json.Unmarshal([]byte(c.out), &churn); err != nil {
			t.Fatalf("churn: exit %d, %v: %s", c.code, err, c.errOut)
		}
		if churn.Errors[requests.ErrEtcdNoSpace] == 0 || !strings.Contains(churn.Warning, "NOSPACE") || !strings.Contains(churn.Warning, fleet.EtcdRecoverCommand) {
			t.Errorf("churn errors %v, warning %q: want etcd-nospace counted and the alarm named with %q", churn.Errors, churn.Warning, fleet.EtcdRecoverCommand)
		}
		var rec record.Record
		readFile(t, filepath.Join(churn.Dir, "run.json"), &rec)
		if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "NOSPACE") {
			t.Errorf("record warnings %q", rec.Warnings)
		}
	})

	var atAlarm fleet.EtcdSpace
	t.Run("status reports the alarm and exits 1", func(t *testing.T) {
		r := ghostfleet(t, ctx, "status", "--name", quotaCluster)
		if r.code != 1 || !strings.Contains(r.out, "etcd: NOSPACE alarm — writes refused") || !strings.Contains(r.out, "`ghostfleet etcd recover`") {
			t.Errorf("status: exit %d:\n%s", r.code, r.out)
		}
		r = ghostfleet(t, ctx, "status", "--name", quotaCluster, "-o", "json")
		var st fleet.Status
		if err := json.Unmarshal([]byte(r.out), &st); err != nil || r.code != 1 || st.Etcd == nil || !st.Etcd.NoSpace() {
			t.Fatalf("status -o json: exit %d, %v, etcd %+v", r.code, err, st.Etcd)
		}
		atAlarm = *st.Etcd
		t.Logf("at the alarm: database %s (%s in use) of %s", fleet.MiB(atAlarm.DBSize), fleet.MiB(atAlarm.DBSizeInUse), fleet.MiB(atAlarm.Quota))
	})

	t.Run("a run that cannot start says what to run", func(t *testing.T) {
		r := ghostfleet(t, ctx, "load", "5", "1", "--name", quotaCluster, "--namespace", "gf-quota-load", "--results-dir", resultsDir)
		if r.code == 0 || !strings.Contains(r.errOut, "NOSPACE alarm is raised") || !strings.Contains(r.errOut, fleet.EtcdRecoverCommand) {
			t.Errorf("load under NOSPACE: exit %d: %s", r.code, r.errOut)
		}
	})

	t.Run("recover after deleting the filler: writes work again", func(t *testing.T) {
		// Deleting a ConfigMap puts nothing in etcd: it works under NOSPACE.
		if err := cs.CoreV1().ConfigMaps(fillNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		r := ghostfleet(t, ctx, "etcd", "recover", "--name", quotaCluster, "--results-dir", resultsDir, "-o", "json")
		var res runs.EtcdRecoverResult
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 0 {
			t.Fatalf("etcd recover: exit %d, %v: %s", r.code, err, r.errOut)
		}
		if res.Outcome != runs.Completed || res.Dir == "" || !res.Defragmented || len(res.Disarmed) == 0 || len(res.After.Alarms) != 0 || res.StillFull {
			t.Errorf("recover: %+v", res)
		}
		if res.After.DBSize >= res.Before.DBSize/2 {
			t.Errorf("database %d → %d bytes: the filler's pages were not given back", res.Before.DBSize, res.After.DBSize)
		}
		t.Logf("recovered in %.1fs: database %s → %s", res.Seconds, fleet.MiB(res.Before.DBSize), fleet.MiB(res.After.DBSize))
		var rec record.Record
		readFile(t, filepath.Join(res.Dir, "run.json"), &rec)
		if rec.Kind != runs.KindEtcdRecover || rec.Outcome != runs.Completed {
			t.Errorf("record kind %q outcome %q", rec.Kind, rec.Outcome)
		}
		wantSettingsAndHost(t, "etcd recover", rec)
		if _, err := cs.CoreV1().ConfigMaps(fillNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("a write after the recovery: %v", err)
		}
		if st := statusOf(t, ctx, quotaCluster); st.Etcd == nil || len(st.Etcd.Alarms) != 0 || !st.Healthy() {
			t.Errorf("status after the recovery: etcd %+v, healthy %t", st.Etcd, st.Healthy())
		}
	})

	t.Run("recover with no alarm does nothing", func(t *testing.T) {
		r := ghostfleet(t, ctx, "etcd", "recover", "--name", quotaCluster, "--results-dir", resultsDir)
		if r.code != 0 || !strings.Contains(r.out, "no alarm raised: nothing to do") || strings.Contains(r.errOut, "run record") {
			t.Errorf("recover on a healthy etcd: exit %d: %s%s", r.code, r.out, r.errOut)
		}
	})
}
