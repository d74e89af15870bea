package workload

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// What a training job does when it loses a worker while the run holds
// (TrainOptions.Restart): the Job controller replaces that one worker, or
// the whole job starts over.
const (
	RestartWorker = "worker"
	RestartJob    = "job"
)

// RestartModes are what TrainOptions.Restart allows.
var RestartModes = []string{RestartWorker, RestartJob}

// maxRestartDelay bounds TrainOptions.RestartDelay: a restart begun
// finishes within a minute and the delay.
const maxRestartDelay = 10 * time.Minute

// restarter plays the launcher of a whole-job restart: JobSet's failure
// policy, which recreates a failed job's child Jobs, or an elastic
// launcher that restarts every worker when one is lost. Once a running
// job loses a worker, it deletes the Job (foreground: its pods go first)
// and creates it again (after delay, a launcher's backoff), so every
// worker starts over together; jobs restart concurrently, as a
// controller's workers would. Its requests go
// through the run's load client and are counted with the run's; a
// restart that fails is reported and leaves its job down.
type restarter struct {
	cs     kubernetes.Interface
	job    TrainJob // Name is set per restart
	gang   Gang
	pods   func() []PodTimes
	delay  time.Duration
	report progress.Func

	mu       sync.Mutex
	stopped  map[string]bool // pods of a job's earlier runs, by UID
	inFlight map[string]bool // jobs being restarted
	restarts int
	errors   int
}

// newRestarter restarts the jobs of pods (the run's tracker) for the
// workers they lose after since (when every job ran whole, just before
// the hold began): one lost after it but before the restarter starts is
// restarted for too.
func newRestarter(cs kubernetes.Interface, job TrainJob, gang Gang, pods func() []PodTimes, since time.Time, delay time.Duration, report progress.Func) *restarter {
	r := &restarter{cs: cs, job: job, gang: gang, pods: pods, delay: delay, report: report, stopped: map[string]bool{}, inFlight: map[string]bool{}}
	for _, p := range pods() {
		if !p.Ended.IsZero() && !p.Ended.After(since) {
			r.stopped[p.UID] = true
		}
	}
	return r
}

// jobsToRestart are the jobs with a worker lost and not yet restarted for:
// a pod that was seen running, has ended, and is not of a job's earlier
// run.
func jobsToRestart(pods []PodTimes, stopped map[string]bool) []string {
	var jobs []string
	for _, p := range pods {
		if !p.Running.IsZero() && !p.Ended.IsZero() && !stopped[p.UID] && !slices.Contains(jobs, p.Group) {
			jobs = append(jobs, p.Group)
		}
	}
	slices.Sort(jobs)
	return jobs
}

// run checks the jobs every interval until ctx ends, then waits for the
// restarts under way. It returns the restarts done and failed.
func (r *restarter) run(ctx context.Context, interval time.Duration) (restarts, errors int) {
	var wg sync.WaitGroup
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		pods := r.pods()
		r.mu.Lock()
		jobs := slices.DeleteFunc(jobsToRestart(pods, r.stopped), func(job string) bool { return r.inFlight[job] })
		for _, job := range jobs {
			r.inFlight[job] = true
			r.markStopped(job, pods)
		}
		r.mu.Unlock()
		for _, job := range jobs {
			wg.Go(func() { r.restart(ctx, job) })
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return r.restarts, r.errors
		case <-tick.C:
		}
	}
}

// markStopped counts every pod of job in pods as its earlier run's: they
// end with the Job, and are not lost workers of the new one. r.mu is
// held.
func (r *restarter) markStopped(job string, pods []PodTimes) {
	for _, p := range pods {
		if p.Group == job {
			r.stopped[p.UID] = true
		}
	}
}

// restart deletes job and creates it again once it is gone and the delay
// has passed. A restart begun finishes though the run ends meanwhile
// (within a minute and the delay), so that no job is left deleted.
func (r *restarter) restart(ctx context.Context, job string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute+r.delay)
	defer cancel()
	jobs := r.cs.BatchV1().Jobs(r.job.Namespace)
	foreground := metav1.DeletePropagationForeground
	err := jobs.Delete(ctx, job, metav1.DeleteOptions{PropagationPolicy: &foreground})
	if err == nil || apierrors.IsNotFound(err) {
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := jobs.Get(ctx, job, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}
	if err == nil && r.delay > 0 {
		time.Sleep(r.delay) // ctx outlives it
	}
	if err == nil {
		// Pods the Job controller made after the first mark went with
		// the old Job: mark them too.
		pods := r.pods()
		r.mu.Lock()
		r.markStopped(job, pods)
		r.mu.Unlock()
		spec := r.job
		spec.Name = job
		// Under gang scheduling the job's PodGroup stays: the new pods
		// name it as the old ones did.
		_, err = jobs.Create(ctx, trainJobObject(spec, r.gang), metav1.CreateOptions{})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inFlight, job)
	if err != nil {
		r.errors++
		r.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("restarting job %s: %v (it stays down)", job, err)})
		return
	}
	r.restarts++
}

// restartJobs runs r until the returned function is called, which stops
// it, waits for the restarts under way and returns the restarts done and
// failed.
func restartJobs(ctx context.Context, r *restarter) func() (restarts, errors int) {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var restarts, errors int
	go func() {
		defer close(done)
		restarts, errors = r.run(ctx, time.Second)
	}()
	return func() (int, int) {
		stop()
		<-done
		return restarts, errors
	}
}
