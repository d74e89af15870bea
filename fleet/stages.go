package fleet

//lint:file-ignore SA1019 kwok v0.8.0's own stock stages still use key/operator/values, expressionFrom and next.statusTemplate; GhostFleet writes its stages the same way.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// LabelKeepRunning marks pods that run until deleted, like a training
// job's workers. kwok's stock pod-complete stage finishes every pod a Job
// owns at once; GhostFleet's copy leaves these alone.
const LabelKeepRunning = "ghostfleet.io/keep-running"

// Stages are the kwok Stage objects GhostFleet installs as resources in
// its cluster (kwok's Stage CRD), instead of kwokctl's built-in set, so
// that they can be changed and added to while the fleet runs: kwok's
// default node and pod lifecycle, with pod-complete narrowed as above.
func Stages(heartbeatMillis int64) ([]*v1alpha1.Stage, error) {
	var out []*v1alpha1.Stage
	for _, raw := range []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	} {
		var s v1alpha1.Stage
		if err := yaml.UnmarshalStrict([]byte(raw), &s); err != nil {
			return nil, fmt.Errorf("kwok's stage: %w", err)
		}
		out = append(out, &s)
	}
	for _, s := range out {
		switch s.Name {
		case "pod-complete":
			if s.Spec.Selector == nil {
				return nil, fmt.Errorf("kwok's pod-complete stage has no selector")
			}
			s.Spec.Selector.MatchExpressions = append(s.Spec.Selector.MatchExpressions, v1alpha1.MatchExpression{
				Key:      fmt.Sprintf(`.metadata.labels[%q]`, LabelKeepRunning),
				Operator: v1alpha1.SelectorOpNotIn,
				Values:   []string{"true"},
			})
		case "node-initialize":
			// A node marked down stays down until the marker goes:
			// node-initialize would otherwise make it Ready at once.
			if s.Spec.Selector == nil {
				return nil, fmt.Errorf("kwok's node-initialize stage has no selector")
			}
			s.Spec.Selector.MatchExpressions = append(s.Spec.Selector.MatchExpressions, labelAbsent(FaultNodeDown))
		case "node-heartbeat-with-lease":
			// As kwokctl does: never heartbeat more often than the
			// cluster's node status update frequency.
			if heartbeatMillis > 0 && s.Spec.Delay != nil {
				d := s.Spec.Delay
				if d.DurationMilliseconds == nil || *d.DurationMilliseconds < heartbeatMillis {
					d.DurationMilliseconds = &heartbeatMillis
				}
				jitter := heartbeatMillis + heartbeatMillis/10
				if d.JitterDurationMilliseconds == nil || *d.JitterDurationMilliseconds < jitter {
					d.JitterDurationMilliseconds = &jitter
				}
			}
		}
	}
	return append(out, FaultStages()...), nil
}

// annotationStageHash records which version of a stage is installed, so
// that installing again changes only the stages that changed: kwok
// reloads its lifecycle on every stage update.
const annotationStageHash = "ghostfleet.io/stage-hash"

// installStages creates (or replaces) the stages in the cluster.
func installStages(ctx context.Context, cfg *rest.Config, stages []*v1alpha1.Stage) error {
	cs, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = EnsureStages(ctx, cs, stages)
	return err
}

// EnsureStages creates the stages that are missing and updates those that
// differ from what is installed; it returns how many it changed. Fleets
// created by an older GhostFleet get the stages they lack (the fault
// stages) this way.
func EnsureStages(ctx context.Context, cs kwokclient.Interface, stages []*v1alpha1.Stage) (int, error) {
	api := cs.KwokV1alpha1().Stages()
	changed := 0
	for _, s := range stages {
		s = s.DeepCopy()
		spec, err := json.Marshal(s.Spec)
		if err != nil {
			return changed, err
		}
		hash := fmt.Sprintf("%x", sha256.Sum256(spec))[:16]
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotationStageHash] = hash
		cur, err := api.Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, s, metav1.CreateOptions{})
		case err == nil && cur.Annotations[annotationStageHash] == hash:
			continue
		case err == nil:
			s.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, s, metav1.UpdateOptions{})
		}
		if err != nil {
			return changed, fmt.Errorf("installing kwok stage %s: %w", s.Name, err)
		}
		changed++
	}
	return changed, nil
}
