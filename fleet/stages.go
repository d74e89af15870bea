package fleet

import (
	"context"
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
	return out, nil
}

// installStages creates (or replaces) the stages in the cluster.
func installStages(ctx context.Context, cfg *rest.Config, stages []*v1alpha1.Stage) error {
	cs, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.KwokV1alpha1().Stages()
	for _, s := range stages {
		_, err := api.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *v1alpha1.Stage
			if cur, err = api.Get(ctx, s.Name, metav1.GetOptions{}); err == nil {
				s.ResourceVersion = cur.ResourceVersion
				_, err = api.Update(ctx, s, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("installing kwok stage %s: %w", s.Name, err)
		}
	}
	return nil
}
