package workload

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// TrainJob is one multi-node training job: an Indexed Job of Pods
// whole-node workers of GPUsPerPod GPUs each that run until deleted. Train
// creates its jobs through CreateTrainJob, and so does anything that
// replays jobs arriving over time.
type TrainJob struct {
	Namespace string
	Name      string
	// RunID labels the Job, its pods and its PodGroup, so that the run's
	// tracker sees them and clean-up finds them.
	RunID      string
	Pods       int
	GPUsPerPod int
	// ClaimTemplate is the ResourceClaimTemplate the pods ask for their
	// GPUs through (DRA); "" asks for nvidia.com/gpu.
	ClaimTemplate string
	// Gated creates the pods behind AdmissionGate, Suspended the Job
	// suspended, for quota admission to release.
	Gated, Suspended bool
}

// Gang says whether a job is gang-scheduled by kube-scheduler's own gang
// layer (feature gates GenericWorkload and GangScheduling, API
// scheduling.k8s.io/v1alpha2): its pods bind all together or not at all.
type Gang struct {
	Enabled bool
	// Topology is a node label key all of a gang's pods must share a value
	// of (fleet.LabelRack, fleet.LabelBlock); "" places them anywhere. It
	// needs the TopologyAwareWorkloadScheduling feature gate.
	Topology string
}

// CreateTrainJob creates job through cs: under gang scheduling first its
// PodGroup (gang minCount = every pod of the job), then the Job whose pods
// reference it. A PodGroup left by a failed Job create is deleted again;
// either way the run's namespace going removes both.
func CreateTrainJob(ctx context.Context, cs kubernetes.Interface, job TrainJob, gang Gang) error {
	if gang.Enabled {
		_, err := cs.SchedulingV1alpha2().PodGroups(job.Namespace).Create(ctx, trainPodGroup(job, gang), metav1.CreateOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("creating PodGroup %s: %w (the cluster does not serve scheduling.k8s.io/v1alpha2: is it up with a gang profile?)", job.Name, err)
			}
			return fmt.Errorf("creating PodGroup %s: %w", job.Name, err)
		}
	}
	_, err := cs.BatchV1().Jobs(job.Namespace).Create(ctx, trainJobObject(job, gang), metav1.CreateOptions{})
	if err != nil && gang.Enabled {
		_ = cs.SchedulingV1alpha2().PodGroups(job.Namespace).Delete(context.WithoutCancel(ctx), job.Name, metav1.DeleteOptions{})
	}
	return err
}

// trainJobObject is the Job of a training job; under gang scheduling its
// pods name the job's PodGroup (spec.schedulingGroup), which has the
// Job's name.
func trainJobObject(job TrainJob, gang Gang) *batchv1.Job {
	n, indexed := int32(job.Pods), batchv1.IndexedCompletion
	p := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelRun: job.RunID, LabelKind: "train", fleet.LabelKeepRunning: "true"}},
		Spec:       PodSpec(job.GPUsPerPod),
	}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	if job.ClaimTemplate != "" {
		p.Spec = WithClaim(p.Spec, job.ClaimTemplate)
	}
	if job.Gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: AdmissionGate}}
	}
	if gang.Enabled {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(job.Name)}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, Labels: map[string]string{LabelRun: job.RunID}},
		Spec:       batchv1.JobSpec{Parallelism: &n, Completions: &n, CompletionMode: &indexed, Template: p, Suspend: ptr.To(job.Suspended)},
	}
}

// trainPodGroup is a training job's PodGroup: a standalone group (no
// Workload template) whose gang policy admits the pods only once all of
// them fit.
func trainPodGroup(job TrainJob, gang Gang) *schedulingv1alpha2.PodGroup {
	pg := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, Labels: map[string]string{LabelRun: job.RunID, LabelKind: "train"}},
		Spec: schedulingv1alpha2.PodGroupSpec{
			SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: int32(job.Pods)},
			},
		},
	}
	if gang.Topology != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1alpha2.PodGroupSchedulingConstraints{
			Topology: []schedulingv1alpha2.TopologyConstraint{{Key: gang.Topology}},
		}
	}
	return pg
}
