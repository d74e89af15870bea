package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// waitRunning tells how its wait ended: every pod running, the run's
// timeout, or the caller's cancellation.
func TestWaitRunningOutcomes(t *testing.T) {
	running := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	running.Name, running.UID = "a", "a"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		pods    []*corev1.Pod
		want    string
		created bool
	}{
		{"all running", context.Background(), []*corev1.Pod{running}, "completed", true},
		{"timed out", context.Background(), nil, "timed out", false},
		{"interrupted", cancelled, nil, "interrupted", false},
		{"stalled with pods not yet made", context.Background(), nil, "stalled", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(time.Now)
			for _, p := range tt.pods {
				tr.observe(p, false)
			}
			createDone := 0
			// Pods made only as their jobs are admitted: the stall counts
			// from the wait's start (not from every pod existing).
			deferred := tt.want == "stalled"
			var stall time.Duration
			if deferred {
				stall = 100 * time.Millisecond
			}
			// The create step's counts of pods. Interrupted counts one too:
			// the poll is immediate, so it looks once before seeing its
			// context ended.
			podCounts := 0
			report := func(e progress.Event) {
				if e.Step == "create" && e.Kind == progress.Update {
					podCounts++
				}
			}
			w := waitRunning(tt.ctx, tr, waitOptions{Expect: 1, Total: 1, Timeout: 300 * time.Millisecond, Stall: stall, Deferred: deferred,
				Report: report, CreateDone: func() { createDone++ }})
			if got := w.outcome("completed"); got != tt.want {
				t.Errorf("outcome %q, want %q", got, tt.want)
			}
			if createDone != 1 {
				t.Errorf("the create step was closed %d times, want once", createDone)
			}
			// Jobs created suspended have made no pod yet: no count.
			if (podCounts == 0) != deferred {
				t.Errorf("the create step counted pods %d times (jobs suspended: %v); want none only when they are", podCounts, deferred)
			}
			if w.CreatedAt.IsZero() == tt.created {
				t.Errorf("CreatedAt %v", w.CreatedAt)
			}
		})
	}
}

// A burst sends every pod exactly once, each timed on its own: a failed
// create is counted, never retried, and does not stop the others.
func TestCreatePodsCountsFailuresWithoutRetrying(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	attempts := map[string]int{}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name
		mu.Lock()
		defer mu.Unlock()
		attempts[name]++
		if strings.HasSuffix(name, "0") {
			return true, nil, errors.New("429 too many requests")
		}
		return false, nil, nil
	})
	tr := newTracker(time.Now)
	opts := LoadOptions{RunID: "r", Namespace: "ns", Pods: 50, GPUs: 1, Workers: 7}
	var failed createFailures
	createPods(context.Background(), cs, tr, opts, &failed)
	n, first := failed.count()
	if n != 5 || first == nil {
		t.Errorf("%d failures (first %v), want 5", n, first)
	}
	if len(attempts) != 50 {
		t.Errorf("%d pods attempted, want 50", len(attempts))
	}
	for name, k := range attempts {
		if k != 1 {
			t.Errorf("%s sent %d times", name, k)
		}
	}
	tr.mu.Lock()
	sent := len(tr.sent)
	tr.mu.Unlock()
	if sent != 50 {
		t.Errorf("%d sends timed, want 50", sent)
	}
}

func TestDeleteAllWaitsForTheNamespaces(t *testing.T) {
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.LabelWorkloadNamespace: "true"}}}
	}
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}
	t.Run("gone", func(t *testing.T) {
		cs := fake.NewClientset(ns("a"), ns("b"), other)
		n, err := DeleteAll(context.Background(), cs)
		if err != nil || n != 2 {
			t.Errorf("DeleteAll = %d, %v; want 2", n, err)
		}
	})
	t.Run("still terminating", func(t *testing.T) {
		cs := fake.NewClientset(ns("a"), other)
		cs.PrependReactor("delete", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, nil // terminating for ever
		})
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		_, err := DeleteAll(ctx, cs)
		if err == nil || !strings.Contains(err.Error(), "1 namespaces still terminating") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("list fails", func(t *testing.T) {
		cs := fake.NewClientset(ns("a"))
		calls := 0
		cs.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			if calls++; calls > 1 {
				return true, nil, fmt.Errorf("boom")
			}
			return false, nil, nil
		})
		cs.PrependReactor("delete", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		if _, err := DeleteAll(context.Background(), cs); err == nil || err.Error() != "boom" {
			t.Errorf("error %v, want the list's", err)
		}
	})
}
