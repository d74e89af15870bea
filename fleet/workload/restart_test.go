package workload

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestJobsToRestart(t *testing.T) {
	at := secondsFrom(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	pods := []PodTimes{
		{UID: "a0", Group: "a", Running: at(1)},
		{UID: "a1", Group: "a", Running: at(1), Ended: at(5)}, // lost
		{UID: "a2", Group: "a", Running: at(1), Ended: at(6)}, // lost too: one restart
		{UID: "b0", Group: "b", Running: at(1), Ended: at(5)}, // of b's earlier run
		{UID: "b1", Group: "b", Running: at(7)},
		{UID: "c0", Group: "c", Ended: at(5)}, // never ran: not a lost worker
		{UID: "d0", Group: "d", Running: at(1), Ended: at(8)},
	}
	got := jobsToRestart(pods, map[string]bool{"b0": true})
	if want := []string{"a", "d"}; !slices.Equal(got, want) {
		t.Errorf("jobs to restart %v, want %v", got, want)
	}
}

func TestTrainRestartCheck(t *testing.T) {
	base := TrainOptions{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 8, Timeout: time.Minute}
	for _, tc := range []struct {
		restart     string
		hold, delay time.Duration
		wantErr     string
	}{
		{"", 0, 0, ""},
		{RestartWorker, 0, 0, ""},
		{RestartJob, time.Minute, 0, ""},
		{RestartJob, 0, 0, "--restart job restarts the jobs that lose a worker while the run holds: set --hold too"},
		{"pod", time.Minute, 0, `--restart "pod": allowed are worker, job`},
		{RestartJob, time.Minute, 10 * time.Second, ""},
		{RestartJob, time.Minute, -time.Second, "restart delay -1s is out of range: allowed are 0 (at once) to 10m0s"},
		{RestartJob, time.Minute, time.Hour, "restart delay 1h0m0s is out of range"},
		{RestartWorker, time.Minute, time.Second, "restart delay 1s is a whole-job restart's: set --restart job too"},
	} {
		o := base
		o.Restart, o.Hold, o.RestartDelay = tc.restart, tc.hold, tc.delay
		err := o.Check()
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("restart %q hold %s delay %s: %v, want %q", tc.restart, tc.hold, tc.delay, err, tc.wantErr)
		}
	}
}

// A restart deletes the Job and creates the same one again, and counts
// every pod of the job seen so far as its earlier run's.
func TestRestarterRecreatesTheJob(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	job := TrainJob{Namespace: "gf-train", Name: "train-1-0000", RunID: "train-1", Pods: 2, GPUsPerPod: 8}
	if err := CreateTrainJob(ctx, cs, job, Gang{}); err != nil {
		t.Fatal(err)
	}
	before, err := cs.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := secondsFrom(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	pods := []PodTimes{
		{UID: "p0", Group: job.Name, Running: at(1), Ended: at(3)}, // ended before: not a loss now
		{UID: "p1", Group: job.Name, Running: at(1)},
		{UID: "p2", Group: job.Name, Running: at(4)},
	}
	lostEarly := PodTimes{UID: "q0", Group: "train-1-0001", Running: at(1), Ended: at(4)} // after the hold began, before the restarter
	r := newRestarter(cs, TrainJob{Namespace: job.Namespace, RunID: job.RunID, Pods: job.Pods, GPUsPerPod: job.GPUsPerPod}, Gang{}, func() []PodTimes { return append(pods, lostEarly) }, at(3), 0, progress.Discard)
	if got := jobsToRestart(pods, r.stopped); len(got) != 0 {
		t.Fatalf("a worker lost before the hold began restarts %v", got)
	}
	if got := jobsToRestart([]PodTimes{lostEarly}, r.stopped); !slices.Equal(got, []string{lostEarly.Group}) {
		t.Fatalf("a worker lost after the hold began but before the restarter started: jobs to restart %v, want %s", got, lostEarly.Group)
	}
	pods[2].Ended = at(6) // p2 lost
	if got := jobsToRestart(pods, r.stopped); !slices.Equal(got, []string{job.Name}) {
		t.Fatalf("jobs to restart %v, want %s", got, job.Name)
	}
	r.markStopped(job.Name, pods)
	r.restart(ctx, job.Name)
	if r.restarts != 1 || r.errors != 0 {
		t.Errorf("restarts %d, errors %d; want 1, 0", r.restarts, r.errors)
	}
	after, err := cs.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the job was not created again: %v", err)
	}
	if *after.Spec.Parallelism != *before.Spec.Parallelism || after.Spec.Template.Labels[LabelRun] != job.RunID {
		t.Errorf("recreated job %+v, want the spec of %+v", after.Spec, before.Spec)
	}
	if got := jobsToRestart(pods, r.stopped); len(got) != 0 {
		t.Errorf("after the restart the old pods ask for another: %v", got)
	}
}

// With a delay, the Job is created again no sooner than the delay after
// the old one was gone (a lower bound only: the machine may be slow).
func TestRestarterWaitsTheDelay(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	job := TrainJob{Namespace: "gf-train", Name: "train-1-0000", RunID: "train-1", Pods: 2, GPUsPerPod: 8}
	if err := CreateTrainJob(ctx, cs, job, Gang{}); err != nil {
		t.Fatal(err)
	}
	var gone, created time.Time
	cs.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		gone = time.Now()
		return false, nil, nil
	})
	cs.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		created = time.Now()
		return false, nil, nil
	})
	const delay = 300 * time.Millisecond
	r := newRestarter(cs, TrainJob{Namespace: job.Namespace, RunID: job.RunID, Pods: job.Pods, GPUsPerPod: job.GPUsPerPod}, Gang{}, func() []PodTimes { return nil }, time.Now(), delay, progress.Discard)
	r.restart(ctx, job.Name)
	if r.restarts != 1 || r.errors != 0 {
		t.Fatalf("restarts %d, errors %d; want 1, 0", r.restarts, r.errors)
	}
	if gone.IsZero() || created.Sub(gone) < delay {
		t.Errorf("created again %s after the delete, want at least %s", created.Sub(gone), delay)
	}
}
