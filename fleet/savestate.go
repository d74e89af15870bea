package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// SnapshotTools are the etcd tools kwokctl's etcd snapshots run: etcdctl
// saves, etcdutl restores (etcd 3.6 moved restore out of etcdctl).
type SnapshotTools struct {
	Etcdctl, Etcdutl string
}

// Counts is how many objects the cluster holds: what a restore must bring
// back.
type Counts struct {
	Nodes      int `json:"nodes"`
	Pods       int `json:"pods"`
	Namespaces int `json:"namespaces"`
}

// CountObjects counts nodes, pods and namespaces with consistent reads.
func CountObjects(ctx context.Context, cs kubernetes.Interface) (Counts, error) {
	var c Counts
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, fmt.Errorf("listing pods: %w", err)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, fmt.Errorf("listing namespaces: %w", err)
	}
	return Counts{Nodes: len(nodes.Items), Pods: len(pods.Items), Namespaces: len(nss.Items)}, nil
}

// linkTools puts the tools where kwokctl looks for them (the cluster's bin
// folder), so that it never downloads them: it uses what is there.
func linkTools(name string, tools SnapshotTools) error {
	bin := filepath.Join(clusterWorkdir(name), "bin")
	for tool, path := range map[string]string{"etcdctl": tools.Etcdctl, "etcdutl": tools.Etcdutl} {
		if path == "" {
			continue
		}
		dest := filepath.Join(bin, tool)
		if cur, err := os.Readlink(dest); err == nil && cur == path {
			continue
		}
		_ = os.Remove(dest)
		if err := os.Symlink(path, dest); err != nil {
			return fmt.Errorf("linking %s into the cluster's bin folder: %w", tool, err)
		}
	}
	return nil
}

// SaveSnapshot writes the cluster's etcd, the whole cluster state, to
// path with `kwokctl snapshot save` (etcd format).
func SaveSnapshot(ctx context.Context, name, path string, tools SnapshotTools, report progress.Func) error {
	if err := linkTools(name, SnapshotTools{Etcdctl: tools.Etcdctl}); err != nil {
		return err
	}
	done := progress.Step(report, "save", "saving the cluster's etcd to "+path, 2*time.Second)
	defer done()
	if err := kwokctl(ctx, report, nil, "snapshot", "save", "--name", name, "--path", path, "--format", "etcd"); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("kwokctl snapshot save: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kwokctl snapshot save wrote nothing: %w", err)
	}
	return nil
}

// RestoreSnapshot puts the etcd snapshot at path back into the cluster
// with `kwokctl snapshot restore` (it stops etcd and the apiserver,
// replaces etcd's data and restarts the control plane), then waits for
// the apiserver and until the cluster holds want's objects again.
func RestoreSnapshot(ctx context.Context, name, path string, want Counts, tools SnapshotTools, report progress.Func) (_ Counts, err error) {
	state, err := LoadState(name)
	if err != nil {
		return Counts{}, fmt.Errorf("fleet %q is not up: %w", name, err)
	}
	if err := linkTools(name, tools); err != nil {
		return Counts{}, err
	}
	done := progress.Step(report, "restore", "restoring the cluster's etcd from "+path+" (the control plane restarts)", 15*time.Second)
	// kwokctl restarts the control plane, and takeOverNodes the kwok
	// controller: new processes, outside their CPU limits' cgroups
	// whatever happens from here.
	defer func() { err = errors.Join(err, limitCPU(name, "")) }()
	err = kwokctl(ctx, report, nil, "snapshot", "restore", "--name", name, "--path", path, "--format", "etcd")
	done()
	if err != nil {
		return Counts{}, fmt.Errorf("kwokctl snapshot restore: %w", err)
	}
	if err := WaitReady(ctx, name, state, report); err != nil {
		return Counts{}, err
	}
	cs, err := Own(name).Clientset(true)
	if err != nil {
		return Counts{}, err
	}
	if err := takeOverNodes(ctx, name, cs, want.Nodes, report); err != nil {
		return Counts{}, err
	}
	done = progress.Step(report, "counts", fmt.Sprintf("waiting for %d nodes and %d pods", want.Nodes, want.Pods), 0)
	defer done()
	var got Counts
	var lastErr error
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		got, lastErr = CountObjects(ctx, cs)
		return lastErr == nil && got.Nodes == want.Nodes && got.Pods == want.Pods, nil
	})
	if err != nil {
		return got, fmt.Errorf("after the restore the cluster holds %d nodes and %d pods, not the saved %d and %d: %w (%v)", got.Nodes, got.Pods, want.Nodes, want.Pods, err, lastErr)
	}
	return got, nil
}

// takeOverNodes hands the restored nodes to the running kwok controller.
// kwok works only on nodes whose lease it holds, under an identity new
// with every start; the restored leases name the controller that ran when
// the state was saved, and the one kwokctl restarted during the restore
// cannot take them until they expire and its retries come round: it left
// new pods Pending for ~2.5 minutes on a 50-node fleet. So the controller
// is stopped, the stale leases deleted, and a fresh one creates its own.
func takeOverNodes(ctx context.Context, name string, cs kubernetes.Interface, nodes int, report progress.Func) error {
	kwokMu.Lock()
	defer kwokMu.Unlock()
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return err
	}
	const component = "kwok-controller"
	done := progress.Step(report, "leases", "restarting the kwok controller with fresh node leases", 2*time.Second)
	defer done()
	if err := rt.StopComponent(ctx, component); err != nil {
		return fmt.Errorf("stopping %s: %w", component, err)
	}
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	delErr := leases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if err := rt.StartComponent(ctx, component); err != nil {
		return fmt.Errorf("starting %s again: %w (run `ghostfleet up` to start it)", component, err)
	}
	if delErr != nil {
		return fmt.Errorf("deleting the restored node leases: %w", delErr)
	}
	var n int
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		n = len(list.Items)
		return n >= nodes, nil
	})
	if err != nil {
		return fmt.Errorf("the kwok controller holds %d of %d node leases after the restore: %w", n, nodes, err)
	}
	return nil
}

// CheckSnapshot asks etcdutl whether the snapshot at path is a database
// etcd can restore (`etcdutl snapshot status`), so that a damaged file is
// refused before anything stops. The error is one line.
func CheckSnapshot(ctx context.Context, tools SnapshotTools, path string) error {
	if tools.Etcdutl == "" {
		return nil
	}
	cmd := exec.CommandContext(ctx, tools.Etcdutl, "snapshot", "status", path, "-w", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(strings.SplitN(strings.TrimSpace(stderr.String()), "\n", 2)[0])
		if why == "" {
			why = err.Error()
		}
		return fmt.Errorf("%s is not a snapshot etcd can restore (etcdutl snapshot status: %s)", path, strings.TrimPrefix(why, "Error: "))
	}
	return nil
}
