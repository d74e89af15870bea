package fleet

//lint:file-ignore SA1019 kwok v0.8.0's own stock stages still use key/operator/values, expressionFrom and next.statusTemplate; GhostFleet writes its stages the same way.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
)

// LabelKeepRunning marks pods that run until deleted, like a training
// job's workers. kwok's stock pod-complete stage finishes every pod a Job
// owns at once; GhostFleet's copy leaves these alone.
const LabelKeepRunning = "ghostfleet.io/keep-running"

// stageFiles are the built-in stages, in the order they are installed:
// kwok's node and pod lifecycle with GhostFleet's changes, then the
// stages that play GhostFleet's faults.
var stageFiles = []string{"stages/lifecycle.yaml", "stages/fault-node.yaml", "stages/fault-pod.yaml"}

// BuiltinStageFiles lists the built-in stage files, for BuiltinFile.
func BuiltinStageFiles() []string { return slices.Clone(stageFiles) }

// heartbeatStage is kwok's node heartbeat, whose period follows the
// cluster's node status update frequency.
const heartbeatStage = "node-heartbeat-with-lease"

// Stages are the kwok Stage objects GhostFleet installs as resources in
// its cluster (kwok's Stage CRD), instead of kwokctl's built-in set, so
// that they can be changed and added to while the fleet runs: the
// built-in files under fleet/stages/, with kwok's heartbeat never more
// often than heartbeatMillis (the cluster's node status update
// frequency; 0 leaves kwok's period).
func Stages(heartbeatMillis int64) ([]*v1alpha1.Stage, error) {
	var out []*v1alpha1.Stage
	for _, name := range stageFiles {
		data, err := builtinFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		stages, err := parseStages("fleet/"+name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, stages...)
	}
	for _, s := range out {
		// As kwokctl does: never heartbeat more often than the cluster's
		// node status update frequency.
		if s.Name != heartbeatStage || heartbeatMillis <= 0 || s.Spec.Delay == nil {
			continue
		}
		d := s.Spec.Delay
		if d.DurationMilliseconds == nil || *d.DurationMilliseconds < heartbeatMillis {
			d.DurationMilliseconds = &heartbeatMillis
		}
		jitter := heartbeatMillis + heartbeatMillis/10
		if d.JitterDurationMilliseconds == nil || *d.JitterDurationMilliseconds < jitter {
			d.JitterDurationMilliseconds = &jitter
		}
	}
	return out, nil
}

// AnnotationStageFile marks a stage installed from a user's --stage-file,
// with the file's name: GhostFleet's own later installs leave it be.
const AnnotationStageFile = "ghostfleet.io/stage-file"

// LoadStageFile reads the kwok Stages of a user's --stage-file, each
// marked with the file it came from.
func LoadStageFile(path string) ([]*v1alpha1.Stage, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	stages, err := parseStages(path, data)
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: no kwok Stage in it", path)
	}
	for _, s := range stages {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[AnnotationStageFile] = path
	}
	return stages, nil
}

// MergeStages puts extra stages in: one named like a stage of base
// replaces it where it stood, the others follow. A name given twice in
// extra is an error.
func MergeStages(base, extra []*v1alpha1.Stage) ([]*v1alpha1.Stage, error) {
	from := map[string]string{}
	index := map[string]int{}
	out := slices.Clone(base)
	for i, s := range out {
		index[s.Name] = i
	}
	for _, s := range extra {
		if prev, ok := from[s.Name]; ok {
			return nil, fmt.Errorf("stage %s is given twice (%s, %s)", s.Name, prev, s.Annotations[AnnotationStageFile])
		}
		from[s.Name] = s.Annotations[AnnotationStageFile]
		if i, ok := index[s.Name]; ok {
			out[i] = s
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// parseStages reads a stream of kwok Stage documents strictly. Errors are
// one line that starts with source and names the document and field.
func parseStages(source string, data []byte) ([]*v1alpha1.Stage, error) {
	docs, err := splitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	want := v1alpha1.GroupVersion.String()
	var out []*v1alpha1.Stage
	for i, doc := range docs {
		fail := func(format string, args ...any) ([]*v1alpha1.Stage, error) {
			return nil, fmt.Errorf("%s: document %d: %s", source, i+1, fmt.Sprintf(format, args...))
		}
		var s v1alpha1.Stage
		if err := StrictYAML(doc, &s); err != nil {
			return fail("%v", err)
		}
		switch {
		case s.APIVersion != want || s.Kind != v1alpha1.StageKind:
			return fail("apiVersion %q, kind %q: a stage file holds %s %s documents", s.APIVersion, s.Kind, want, v1alpha1.StageKind)
		case s.Name == "":
			return fail("metadata.name is not set")
		case s.Spec.ResourceRef.Kind == "":
			return fail("stage %s: spec.resourceRef.kind is not set", s.Name)
		case s.Spec.Selector == nil:
			return fail("stage %s: spec.selector is not set (kwok ignores a stage without one)", s.Name)
		case s.Spec.Next == nil:
			return fail("stage %s: spec.next is not set", s.Name)
		}
		for j, e := range s.Spec.Selector.MatchExpressions {
			if e.Key == "" {
				return fail("stage %s: spec.selector.matchExpressions[%d].key is not set", s.Name, j)
			}
			if !slices.Contains([]v1alpha1.SelectorOperator{v1alpha1.SelectorOpIn, v1alpha1.SelectorOpNotIn, v1alpha1.SelectorOpExists, v1alpha1.SelectorOpDoesNotExist}, e.Operator) {
				return fail("stage %s: spec.selector.matchExpressions[%d].operator %q: allowed are In, NotIn, Exists, DoesNotExist", s.Name, j, e.Operator)
			}
		}
		// A copy: the conversion fills in the object it converts.
		if _, err := internalversion.ConvertToInternalStage(s.DeepCopy()); err != nil {
			return fail("stage %s: %v", s.Name, err)
		}
		out = append(out, &s)
	}
	return out, nil
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
// stages) this way. A stage installed from a user's --stage-file is
// replaced only by another from a stage file.
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
		case err == nil && cur.Annotations[AnnotationStageFile] != "" && s.Annotations[AnnotationStageFile] == "":
			continue // the user's replacement of a built-in stage stays
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
