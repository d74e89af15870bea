package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

const mergePatch = types.MergePatchType

// Clear removes the faults of the given kinds (every kind when none is
// given): node markers and the GPU health taint go, and kwok's clear
// stages set the conditions healthy again (node-down: Ready again); pod
// faults that have not fired are cancelled. Pods that already failed stay
// failed, as they would in a real cluster. The record is not written.
func Clear(ctx context.Context, c Clients, kinds ...Kind) (record.Record, error) {
	if len(kinds) == 0 {
		for _, k := range Kinds {
			kinds = append(kinds, k.Kind)
		}
	}
	for _, k := range kinds {
		if _, err := LookupKind(string(k)); err != nil {
			return record.Record{}, err
		}
	}
	now := time.Now().UTC()
	rec := record.Record{Kind: RecordKind, Started: now,
		Params: map[string]any{"kind": "clear", "kinds": kinds}}
	res := Result{Kind: "clear", Cleared: map[Kind]int{}}
	err := clear(ctx, c, kinds, &res)
	rec.Ended = time.Now().UTC()
	rec.Result = res
	rec.Phases = []record.Phase{{Name: "clear", Start: rec.Started, End: rec.Ended}}
	rec.Outcome = record.Outcome(ctx, err)
	return rec, err
}

func clear(ctx context.Context, c Clients, kinds []Kind, res *Result) error {
	if err := ensureStages(ctx, c); err != nil {
		return err
	}
	nodes, err := fakeNodes(ctx, c.Kube)
	if err != nil {
		return err
	}
	for _, kind := range kinds {
		if kind == PodExit {
			continue
		}
		var marked []string
		for _, n := range nodes {
			if _, ok := n.Labels[fleet.FaultLabel(string(kind))]; ok {
				marked = append(marked, n.Name)
			}
		}
		_, err := forEach(ctx, len(marked), func(ctx context.Context, i int) error {
			return updateNode(ctx, c.Kube, marked[i], func(n *corev1.Node) { unmark(n, string(kind)) })
		})
		res.Cleared[kind] = len(marked)
		res.Nodes = append(res.Nodes, marked...)
		if err != nil {
			return fmt.Errorf("clearing %s from %d nodes: %w", kind, len(marked), err)
		}
	}
	for _, kind := range kinds {
		if kind != PodExit {
			continue
		}
		for _, pk := range []string{fleet.FaultPodExit, fleet.FaultPodInitExit} {
			n, err := clearPods(ctx, c, pk)
			res.Cleared[PodExit] += n
			res.Pods += n
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// unmark removes kind's marker and parameters from the node, and the GPU
// health taint once no GPU fault is left on it.
func unmark(n *corev1.Node, kind string) {
	delete(n.Labels, fleet.FaultLabel(kind))
	for k := range n.Annotations {
		if strings.HasPrefix(k, fleet.FaultPrefix+kind+".") {
			delete(n.Annotations, k)
		}
	}
	for _, f := range fleet.ConditionFaults {
		if n.Labels[fleet.FaultLabel(f.Kind)] == fleet.FaultActive {
			return
		}
	}
	taints := n.Spec.Taints[:0]
	for _, t := range n.Spec.Taints {
		if t.Key != fleet.TaintGPUHealth {
			taints = append(taints, t)
		}
	}
	n.Spec.Taints = taints
}

// clearPods cancels the pod faults of kind that have not fired: the
// marker becomes "cleared", which kwok's clear stage answers by dropping
// the failure it had scheduled and the marker itself.
func clearPods(ctx context.Context, c Clients, kind string) (int, error) {
	list, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: fleet.FaultLabel(kind) + "=" + fleet.FaultActive})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	var pending []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending) {
			pending = append(pending, p)
		}
	}
	patch, err := metadataPatch(map[string]any{fleet.FaultLabel(kind): fleet.FaultCleared}, nil)
	if err != nil {
		return 0, err
	}
	_, err = forEach(ctx, len(pending), func(ctx context.Context, i int) error {
		p := pending[i]
		_, err := c.Kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, mergePatch, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cancelling %s on %d pods: %w", kind, len(pending), err)
	}
	return len(pending), nil
}

func metadataPatch(labels, annotations map[string]any) ([]byte, error) {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// forEach runs fn for i in [0,n) on a few goroutines and returns the first
// error; the rest still run, so a failure leaves as little half-done as
// the API allows. Cancelling ctx stops it handing out more.
func forEach(ctx context.Context, n int, fn func(context.Context, int) error) ([]bool, error) {
	const workers = 16
	var (
		firstErr error
		once     sync.Once
	)
	done := make([]bool, n) // each index is written by one worker only
	workqueue.ParallelizeUntil(ctx, workers, n, func(i int) {
		if err := fn(ctx, i); err != nil {
			once.Do(func() { firstErr = err })
			return
		}
		done[i] = true
	})
	if firstErr == nil && ctx.Err() != nil && n > 0 {
		firstErr = ctx.Err()
	}
	return done, firstErr
}
