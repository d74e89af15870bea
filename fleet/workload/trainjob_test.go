package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
)

func TestTrainJobObjects(t *testing.T) {
	job := TrainJob{Namespace: "gf-train", Name: "train-x-0003", RunID: "train-x", Pods: 4, GPUsPerPod: 8}
	tests := []struct {
		name         string
		gang         Gang
		claim        string
		wantGroup    bool
		wantTopology string
	}{
		{name: "default scheduling", gang: Gang{}},
		{name: "gang", gang: Gang{Enabled: true}, wantGroup: true},
		{name: "gang within a rack", gang: Gang{Enabled: true, Topology: fleet.LabelRack}, wantGroup: true, wantTopology: fleet.LabelRack},
		{name: "gang with DRA claims", gang: Gang{Enabled: true}, claim: "train-x", wantGroup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job
			j.ClaimTemplate = tt.claim
			o := trainJobObject(j, tt.gang)
			if *o.Spec.Parallelism != 4 || *o.Spec.Completions != 4 || o.Labels[LabelRun] != "train-x" {
				t.Errorf("job: parallelism %d completions %d labels %v", *o.Spec.Parallelism, *o.Spec.Completions, o.Labels)
			}
			spec := o.Spec.Template.Spec
			if got := spec.SchedulingGroup; tt.wantGroup != (got != nil) || (got != nil && *got.PodGroupName != job.Name) {
				t.Errorf("pod template schedulingGroup %+v, want podGroupName %q: %v", got, job.Name, tt.wantGroup)
			}
			if (tt.claim != "") != (len(spec.ResourceClaims) == 1) {
				t.Errorf("resource claims %+v with claim template %q", spec.ResourceClaims, tt.claim)
			}
			if o.Spec.Template.Labels[LabelRun] != "train-x" || spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("pod template labels %v restart %s", o.Spec.Template.Labels, spec.RestartPolicy)
			}
			if !tt.wantGroup {
				return
			}
			pg := trainPodGroup(j, tt.gang)
			if pg.Name != job.Name || pg.Namespace != "gf-train" || pg.Labels[LabelRun] != "train-x" {
				t.Errorf("PodGroup %s/%s labels %v", pg.Namespace, pg.Name, pg.Labels)
			}
			if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
				t.Errorf("gang policy %+v, want minCount 4 (every pod of the job)", g)
			}
			var key string
			if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) == 1 {
				key = c.Topology[0].Key
			}
			if key != tt.wantTopology {
				t.Errorf("topology key %q, want %q", key, tt.wantTopology)
			}
		})
	}
}

func TestCreateTrainJob(t *testing.T) {
	ctx := context.Background()
	job := TrainJob{Namespace: "gf-train", Name: "train-x-0000", RunID: "train-x", Pods: 2, GPUsPerPod: 8}
	cs := fake.NewClientset()
	if err := CreateTrainJob(ctx, cs, job, Gang{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.SchedulingV1alpha2().PodGroups("gf-train").Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("PodGroup: %v", err)
	}
	// A Job create that fails (here: the Job is there already, without a
	// PodGroup) takes back the PodGroup it created first.
	job.Name = "train-x-0002"
	if err := CreateTrainJob(ctx, cs, job, Gang{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateTrainJob(ctx, cs, job, Gang{Enabled: true}); err == nil {
		t.Error("creating a job that exists succeeded")
	}
	if _, err := cs.SchedulingV1alpha2().PodGroups("gf-train").Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		t.Error("a failed Job create left its PodGroup")
	}
	job.Name = "train-x-0001"
	if err := CreateTrainJob(ctx, cs, job, Gang{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.SchedulingV1alpha2().PodGroups("gf-train").Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		t.Error("a job without gang scheduling got a PodGroup")
	}
	if _, err := cs.BatchV1().Jobs("gf-train").Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("Job: %v", err)
	}
}

// A gang larger than the whole fleet could hold would wait for ever: it is
// refused under gang scheduling; without gang it may start partly.
func TestTrainValidateGangThatNeverFits(t *testing.T) {
	c := Capacity{FakeNodes: 4, TotalGPUs: 32, FreeGPUs: 32, MaxNodeGPUs: 8}
	o := TrainOptions{Jobs: 1, PodsPerJob: 5, GPUsPerPod: 8, Timeout: time.Minute, Gang: true}
	if _, err := o.Validate(c); err == nil || !strings.Contains(err.Error(), "--pods-per-job 5 is out of range under gang scheduling: the 4 fake nodes hold at most 4 pods of 8 GPUs") {
		t.Errorf("a 5-pod gang on 4 nodes: %v", err)
	}
	o.Gang = false
	if w, err := o.Validate(c); err != nil || len(w) != 1 || !strings.Contains(w[0], "partly") {
		t.Errorf("without gang: %v, %v; want a warning about partly started jobs", w, err)
	}
	o.Gang, o.PodsPerJob, o.Jobs = true, 2, 3
	if w, err := o.Validate(c); err != nil || len(w) != 1 || !strings.Contains(w[0], "gang-scheduled, the others wait whole") {
		t.Errorf("gang over capacity: %v, %v", w, err)
	}
}
