package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
)

type trainOptions struct {
	*globals
	runs.TrainOptions
	output        string
	writeWorkload string
}

func newTrainCommand(g *globals) *cobra.Command {
	o := &trainOptions{globals: g, TrainOptions: runs.NewTrainOptions()}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Start multi-node GPU training jobs and measure partly started jobs",
		Long: `Create --jobs Indexed Jobs of --pods-per-job pods each requesting
--gpus-per-pod GPUs (8: whole DGX nodes). Their pods run until deleted, like
training workers. Reports the time until every pod of each job runs, how
many jobs started fully, partly or not at all, and the GPUs held by partly
started jobs — the waste that gang scheduling exists to prevent (the
default kube-scheduler has no gang scheduling: each pod is placed alone).

The run ends when every job runs, after --stall without progress, or at
--timeout; the jobs stay until ` + "`ghostfleet unload`" + `.

--hold D keeps watching the jobs for D once every one runs, to measure
what faults do to them meanwhile (` + "`ghostfleet fault gpu-xid --fail-pods`" + `,
` + "`fault node-down`" + `, from another shell or a script): a job is broken
while fewer than all its workers run, until the Job's replacements run.
Reports the workers lost, the jobs broken and still broken at the end, the
time each break took to recover, and the GPU-seconds held meanwhile by the
broken jobs' running workers, which cannot take a step without the
missing one: split between the job's earlier workers (those that ran
before the break, and any that stopped during it) and the replacements
running before the job was whole, with the time to stop a job's other
workers (a whole-job restart) and from its first replacement running to
all running. --restart job restarts a job that loses a worker as a whole,
as JobSet's failure policy or an elastic launcher does: GhostFleet deletes
the Job (its pods first) and creates it again (--restart-delay later, as a
launcher's backoff), and the break lasts until every new worker runs.
Work lost to the restart (the steps since the last checkpoint) is not
modelled.

Per phase (train, then hold) the run also records what it cost the
control plane, read from each source as each phase ends:
  - kube-controller-manager's /metrics: the seconds its requests waited
    on their clients' rate limits, by verb
    (rest_client_rate_limiter_duration_seconds), and its work queues'
    items, time queued and time worked (workqueue_queue_duration_seconds,
    workqueue_work_duration_seconds);
  - kube-apiserver's: how long it took on every client's requests, by
    verb and resource (apiserver_request_duration_seconds, watches and
    CONNECTs left out), how long API Priority and Fairness queued
    requests, by priority level, its calls to etcd by operation and
    resource and summed by operation (etcd_request_duration_seconds),
    and its Go runtime's:
    its goroutines' waits from ready to running, one in eight sampled,
    by bucket (go_sched_latencies_seconds), and its GC's stop-the-world
    pauses; and the watches it closed because their client fell
    behind, by resource (.terminatedWatchers);
  - etcd's: its unary gRPC calls by method, timed inside etcd
    (grpc_server_handling_seconds; GhostFleet's fleets run etcd with
    --metrics=extensive), its applies, WAL syncs and store commits (on
    an attached cluster, the one member its metrics mode reads);
  - kube-scheduler's: its attempts by result
    (scheduler_scheduling_attempt_duration_seconds);
  - /proc, on GhostFleet's own fleet: each process's CPU seconds, and
    the seconds its threads were ready to run but waited for a core
    (schedstat's run-queue wait); the machine's CPUs' seconds by state
    (.hostCPUSeconds: user, system, idle, steal…); and how fast it ran
    (.hostSpeed: three fixed works, within a core's caches, the cache
    the cores share and memory, timed every 5s by a thread's CPU clock,
    their mean milliseconds by work, all trials and those whose
    thread kept its core throughout; every run also records such a probe
    at its start and end, .host);
  - the apiserver's audit log, on a fleet whose profile sets
    apiServer.auditPolicy: the requests it holds by client (the
    controller-manager's controller), verb and resource, with the
    apiserver's time on them (and, for those over 0.5s, their time in
    etcd, in APF's queues and in its other layers, as the apiserver
    annotates them); those answered with an error, by client, verb,
    resource and code (.auditedFailures); the pods by how many status
    writes each client sent for each, by namespace (.podStatusWrites),
    and each write to a pod written before, timed from the one before,
    with how many first and later writes failed, and, if the policy
    logs watches, how many came after the client opened a watch of pods
    since the write before, and since the pod's binding, and how long
    after its last pod watch opened, against the same pods' first writes,
    and how many after a pod watch that sent the pod's copy from its
    binding (.statusRewrites), and the other clients' writes to each
    pod from its binding (or the client's own write before) to the
    client's first write in the run, for pods written once and again
    (.writesBeforeFirst: a watch delivers each as a copy without that
    write), with how many of those pods had the client open, between the
    binding and the next write, a pod watch asking for the current state
    (it sent the binding's copy again: of pods written once, a copy not
    played again), counting also such watches received before the
    binding whose response started after it, and also those received
    after the client's own next write, before the run's own watch saw
    the pod running; if the policy logs watches, each client's watches
    of each resource opened (and of those, asking for the current state)
    and ended, and those ended before their own timeout, with how long
    they had lived (.auditedWatches);
    the most of kube-scheduler's client tokens its
    requests drew at once, its token bucket replayed over them with the
    profile's QPS and burst (.schedulerTokens: drawn to the burst means
    its limiter held requests); and each
    whole-job restart's teardown split where the apiserver saw it (the
    Job's DELETE received and answered, the first request about the job
    from the client that sent the first worker's DELETE, the workers'
    DELETEs received and answered, the watch seeing them stop).
What did not move in a phase is left out. A source that cannot be read,
or restarts, is named in a warning and left out from there on; an etcd
without --metrics=extensive gets a warning and no call times.

--trace-apiserver D also takes a Go execution trace of kube-apiserver over
the hold's first D (its /debug/pprof/trace; at most 10m; it costs the
apiserver CPU meanwhile, more the busier it is) and records, by verb, the
requests it received and answered in that window (HTTP/2 only): their
time, and of it the time when one of the request's goroutines ran; else
when one was ready but not yet running (for one of the apiserver's
GOMAXPROCS slots, for the kernel to run a thread woken to take one, or
stopped by the GC or the trace itself); else when one waited for etcd;
the same for those of 0.5s or more; how long each wait for etcd went on
after the answer reached the apiserver (at most: after the connection's
reader that ended it last began to wait for bytes, or the wait's start;
at least: after its last read, or the wait's start), and what that
reader did after it was last woken by bytes, or the wait's start
(waiting to run, running or blocked); for a sample of the calls (a
call's first wait, begun just after its request woke the connection's
idle gRPC writer), how long the call took to be written, bounded by the
writer's first write after the wake and its first draining write after
it looked for work; and every goroutine's waits to run
by kind (a request's, the etcd connections' readers and writers, the
rest). The trace is saved to a temporary file as it arrives, read after
the hold (an interrupt that cuts it short leaves it out), then removed.

--trace-etcd D likewise traces etcd (GhostFleet's own fleets run it with
--enable-pprof) and records, by gRPC method, the calls it received and
answered in that window: their time in the call's goroutine, from its
creation as the connection's reader read the call's headers to its end
as the answer went to the connection's writer (grpc_server_handling_seconds
times only the handler's part), split into waiting to run (and of it
before first running), running, blocked receiving the request, blocked
for flow control's quota to send the answer, and blocked on anything
else (a write's raft commit and apply, a read's index, a lock); the time
from the connection reader's read of the call's headers to its start;
a least of the call's time with its whole request read (from the
reader's last read before the call first stopped in its handler to its
end), with how many calls the reader read again for before that stop
(their least leaves out the time before); two lags
sampled at the connection's ends (from a reader's wake by bytes to the
call it starts; from the end of a call that woke a writer to its write);
and every goroutine's waits to run by kind (the calls', the gRPC
connections' readers and writers, the rest).

On a fleet up with --gpu-model dra the pods ask for their GPUs through a
ResourceClaimTemplate (--claim, as load's: count by default, nvlink for
GPUs of one NVLink domain).

Gang scheduling: on a fleet up with --profile gang (or NAME+gang, e.g.
tuned+gang) each job also gets a PodGroup (scheduling.k8s.io/v1alpha2)
whose gang policy's minCount is --pods-per-job, and the job's pods name it
(spec.schedulingGroup): kube-scheduler's own GangScheduling plugin (alpha)
binds a job's pods all together or none, so no job starts partly. --gang
off submits plain jobs there too; --topology keeps each job's pods within
one rack or one block of nodes. ` + "`ghostfleet unload`" + ` removes the PodGroups with
the jobs.

Admission: --admission quota creates every job's pods behind the scheduling
gate ` + workload.AdmissionGate + `, which keeps them out of kube-scheduler's
active and back-off queues, and admits the jobs in order, each once the
fleet's free GPUs (its fake nodes' allocatable GPUs, less those bound pods
of anything else hold, less every admitted job's whole request) cover it,
by removing the gate from its pods, --ungate-workers PATCHes at once (8,
as Kueue's pod-group integration does; 1 sends them one at a time). With
--admit-by suspend it creates each Job suspended instead, so that no pod
of it exists until admission unsuspends it and the Job controller creates
them, as Kueue admits a batch Job. A job that does not fit holds back the
ones after it (strict FIFO). A job waiting there is never tried by the
scheduler, where a gang that cannot fit is retried whenever the scheduler
is idle (experiment F, twenty-fifth part). Jobs not admitted when the run
ends stay held until unloaded. Not with --restart job, nor on a fleet whose
GPUs are DRA devices.

Gang-scheduled and admitted runs follow the fleet's free GPUs with a watch
of every pod, and record for each job that started the time from free GPUs
rising to cover it (a fleet-wide sum, not a placement) to it running whole
(startAfterFit); admitted runs split each job's into the wait for
admission, the gates' removal (or the Job's unsuspending) and the rest
(admission.admitAfterFit, .ungate, .startAfterUngate, which add up per
job, not at their percentiles; .admittedAt and .admittedSpan say when
each job was admitted and over how long), and the rest again at the run's pods
watch seeing the job's pods all created, then all bound (.podsCreated,
.podsBound, .podsRunning). On a fleet that keeps the apiserver's audit
log (a profile with apiServer.auditPolicy), the bound part splits again
at the apiserver receiving the first of those pods' bindings and
answering the last (.toFirstBind, .binds, .bindsSeen: the scheduler's
pod-group cycle, its bindings, the watch). .admission.jobs holds the
same figures job by job, in the order admitted, with each job's bindings
sent over (first to last received) and the slowest one's answer; with
several, the summary names the slowest job.`,
		Example: `  ghostfleet train --jobs 100 --pods-per-job 8 --gpus-per-pod 8
  ghostfleet train --jobs 150 --pods-per-job 8   # more than 1,000 DGX nodes hold: some start partly
  ghostfleet train --jobs 4 --pods-per-job 4 --claim nvlink   # on a fleet up with --gpu-model dra
  ghostfleet train --jobs 150 --pods-per-job 8 --topology rack   # on a fleet up with --profile gang
  ghostfleet train --jobs 150 --pods-per-job 8 --admission quota   # jobs that do not fit wait out of the scheduler's queue
  ghostfleet train --jobs 150 --pods-per-job 8 --admission quota --ungate-workers 1   # each admitted job's gates removed one at a time
  ghostfleet train --jobs 150 --pods-per-job 8 --admission quota --admit-by suspend   # Jobs created suspended, unsuspended on admission
  ghostfleet train --jobs 120 --hold 3m &   # then: ghostfleet fault gpu-xid --nodes 50 --seed 1 --fail-pods
  ghostfleet train --jobs 120 --hold 3m --restart job &   # the same, each broken job restarting whole
  ghostfleet train --jobs 120 --hold 3m --restart job --trace-apiserver 30s &   # and where its requests waited, from a trace
  ghostfleet train --jobs 120 --hold 3m --restart job --trace-etcd 3m &   # and where etcd's calls' time went`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "training jobs")
	fs.IntVar(&o.PodsPerJob, "pods-per-job", o.PodsPerJob, "pods (workers) per job")
	fs.IntVar(&o.GPUsPerPod, "gpus-per-pod", o.GPUsPerPod, "GPUs per pod")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace")
	fs.StringVar(&o.Claim, "claim", "", "how pods ask for GPUs: "+strings.Join(workload.ClaimModes, ", ")+" (as load --claim; default: as the fleet offers them)")
	fs.StringVar(&o.GangMode, "gang", o.GangMode, "gang-schedule each job (a PodGroup with minCount = --pods-per-job): "+strings.Join(runs.GangModes, ", ")+"; auto is on when the fleet's profile turns gang scheduling on (--profile gang, NAME+gang), on refuses a fleet without it")
	fs.StringVar(&o.Admission, "admission", workload.AdmissionNone, "how jobs reach kube-scheduler: "+strings.Join(workload.AdmissionModes, ", ")+" (quota holds each job back, its pods behind the scheduling gate "+workload.AdmissionGate+" or its Job suspended (--admit-by), until the fleet's free GPUs cover the whole job, in order)")
	fs.StringVar(&o.AdmitBy, "admit-by", "", "with --admission quota, how a job is held back: "+strings.Join(workload.AdmitByModes, ", ")+" (default "+workload.AdmitByGate+": its pods gated; "+workload.AdmitBySuspend+": its Job suspended, no pod created until admitted)")
	fs.IntVar(&o.UngateWorkers, "ungate-workers", 0, fmt.Sprintf("with --admission quota by gate, gate removals in flight at once (0: %d, as Kueue; 1: one PATCH at a time; at most %d)", workload.DefaultUngateWorkers, workload.MaxUngateWorkers))
	fs.StringVar(&o.Within, "topology", "", "with gang scheduling, keep each job's pods within one "+strings.Join(runs.Topologies, " or ")+" of nodes (node label "+fleet.LabelRack+" or "+fleet.LabelBlock+"; default: anywhere)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up after this long")
	fs.DurationVar(&o.Stall, "stall", o.Stall, "end when no pod was bound or started for this long (0: never)")
	fs.DurationVar(&o.Hold, "hold", 0, "once every job runs, keep watching them this long and measure what breaks them (0: end at once)")
	fs.StringVar(&o.Restart, "restart", workload.RestartWorker, "with --hold, what a job that loses a worker does: "+workload.RestartWorker+" (the Job controller replaces that worker) or "+workload.RestartJob+" (the whole job starts over: GhostFleet deletes the Job and creates it again, as JobSet's failure policy does)")
	fs.DurationVar(&o.RestartDelay, "restart-delay", 0, "with --restart job, wait this long between the old Job gone and creating it again, as a launcher's backoff (0: at once; at most 10m)")
	fs.DurationVar(&o.TraceAPIServer, "trace-apiserver", 0, "with --hold, take a Go execution trace of kube-apiserver over the hold's first this long (whole seconds, at most --hold and 10m) and record where its requests waited (0: none)")
	fs.DurationVar(&o.TraceEtcd, "trace-etcd", 0, "with --hold, on GhostFleet's own fleet, take a Go execution trace of etcd over the hold's first this long (whole seconds, at most --hold and 10m) and record where its gRPC calls' time went (0: none)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&o.writeWorkload, "write-workload", "", "also write this run's jobs as a workload `FILE` (every job arriving at 0s) for ghostfleet ab")
	_ = cmd.RegisterFlagCompletionFunc("gang", fixed(runs.GangModes...))
	_ = cmd.RegisterFlagCompletionFunc("admission", fixed(workload.AdmissionModes...))
	_ = cmd.RegisterFlagCompletionFunc("admit-by", fixed(workload.AdmitByModes...))
	_ = cmd.RegisterFlagCompletionFunc("topology", fixed(runs.Topologies...))
	_ = cmd.RegisterFlagCompletionFunc("restart", fixed(workload.RestartModes...))
	return cmd
}

func (o *trainOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.writeWorkload != "" {
		if err := o.Check(); err != nil {
			return err
		}
		if err := workload.WriteArrivals(o.writeWorkload, workload.TrainArrivals(o.TrainOptions.TrainOptions)); err != nil {
			return err
		}
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Train(ctx, o.env(p, ""), o.TrainOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printTrain(w, res) }); ferr != nil {
		return ferr
	}
	return err
}

// printSlowestAdmitted names the admitted job (of admitted in all) that
// ran whole last after its fit, with its own parts (the summary's are
// medians over jobs).
func printSlowestAdmitted(w io.Writer, jobs []workload.AdmittedJob, admitted int) {
	j := slices.MaxFunc(jobs, func(x, y workload.AdmittedJob) int { return cmp.Compare(x.StartAfterFit, y.StartAfterFit) })
	fmt.Fprintf(w, "  the slowest, %s (admitted %d of %d): %.2fs = to admission %.2fs + release %.2fs + pods seen created %.2fs, bound %.2fs, running %.2fs\n",
		j.Job, j.Order, admitted, j.StartAfterFit, j.AdmitAfterFit, j.Ungate, j.PodsCreated, j.PodsBound, j.PodsRunning)
	if b := j.BindSplit; b != nil {
		fmt.Fprintf(w, "    its bound part: to the first binding %.2fs, the bindings %.2fs (sent over %.2fs, the slowest answered in %.3fs), seen %.2fs\n",
			b.ToFirstBind, b.Binds, b.Sent, b.ServedMax, b.BindsSeen)
	}
}

func printTrain(w io.Writer, r runs.TrainResult) {
	fmt.Fprintf(w, "train: %d jobs × %d pods × %d GPUs%s — %s after %.1fs\n", r.Jobs, r.PodsPerJob, r.GPUsPerPod, gangWords(r.TrainResult), r.Outcome, r.DurationSeconds)
	fmt.Fprintf(w, "  jobs fully running %d, partly %d, not at all %d\n", r.JobsStarted, r.JobsPartial, r.JobsWaiting)
	if f := r.StartAfterFit; f != nil && f.Count > 0 {
		fmt.Fprintf(w, "  from free GPUs covering one more job to it running whole: p50 %.2fs  p99 %.2fs  max %.2fs (%d jobs)\n", f.P50, f.P99, f.Max, f.Count)
	}
	if a := r.Admission; a != nil {
		if a.By == workload.AdmitBySuspend {
			fmt.Fprintf(w, "  admission %s by suspend: %d jobs admitted, %d still suspended; unsuspendings failed %d, admitted jobs left suspended %d\n", a.Mode, a.JobsAdmitted, a.JobsHeld, a.GateRemovalErrors, a.LeftSuspended)
		} else {
			fmt.Fprintf(w, "  admission %s: %d jobs admitted, %d still held behind the gate; gate removals failed %d, pods of admitted jobs left gated %d (%d removals at once)\n", a.Mode, a.JobsAdmitted, a.JobsHeld, a.GateRemovalErrors, a.LeftGated, a.UngateWorkers)
		}
		if n := len(a.AdmittedAt); n > 1 {
			fmt.Fprintf(w, "  the %d admitted, first to last, over %.2fs\n", n, a.AdmittedSpan)
		}
		if f, g, s := a.AdmitAfterFit, a.Ungate, a.StartAfterUngate; f != nil && f.Count > 0 && g != nil && s != nil {
			release := "removing the gates"
			if a.By == workload.AdmitBySuspend {
				release = "unsuspending the Job"
			}
			fmt.Fprintf(w, "  its parts' medians (each job's add up): to admission %.2fs, %s %.2fs, then to running whole %.2fs (%d jobs)\n", f.P50, release, g.P50, s.P50, f.Count)
			if c, b, n := a.PodsCreated, a.PodsBound, a.PodsRunning; c != nil && b != nil && n != nil {
				fmt.Fprintf(w, "  and that last part's: the pods seen created %.2fs, then bound %.2fs, then running %.2fs\n", c.P50, b.P50, n.P50)
			}
			if f, b, s := a.ToFirstBind, a.Binds, a.BindsSeen; f != nil && b != nil && s != nil {
				fmt.Fprintf(w, "  and the bound part's, from the audit log: to the first binding received %.2fs, the bindings %.2fs, then seen bound %.2fs (%d jobs; %d not split)\n", f.P50, b.P50, s.P50, f.Count, a.BindsUnsplit)
			} else if a.BindsUnsplit > 0 {
				fmt.Fprintf(w, "  the bound part is not split: the audit log lacks bindings of %d jobs' pods\n", a.BindsUnsplit)
			}
		}
		if len(a.Jobs) > 1 {
			printSlowestAdmitted(w, a.Jobs, a.JobsAdmitted)
		}
		if a.WatchError != "" {
			fmt.Fprintf(w, "  admission stopped early: the pods watch ended: %s\n", a.WatchError)
		}
	}
	l := r.StartLatency
	fmt.Fprintf(w, "  time to start a job (all pods running): p50 %.2fs  p99 %.2fs  max %.2fs\n", l.P50, l.P99, l.Max)
	fmt.Fprintf(w, "  GPUs held by partly started jobs: %.0f GPU-seconds, peak %d, still held %d\n", r.PartialGPUSeconds, r.PeakPartialGPUs, r.StrandedGPUs)
	if r.HoldSeconds > 0 {
		fmt.Fprintf(w, "  watched %.0fs after every job ran: %d workers lost, %d jobs broken, %d still broken\n", r.HoldSeconds, r.WorkersEnded, r.JobsBroken, r.JobsDown)
		if r.Restart == workload.RestartJob {
			fmt.Fprintf(w, "  whole-job restarts: %d (workers lost include those a restart stopped), %d failed\n", r.JobRestarts, r.RestartErrors)
		}
		if rc := r.Recovery; rc.Count > 0 {
			fmt.Fprintf(w, "  time to recover a broken job (all workers running again): p50 %.2fs  p99 %.2fs  max %.2fs (%d breaks)\n", rc.P50, rc.P99, rc.Max, rc.Count)
		}
		fmt.Fprintf(w, "  GPUs held by broken jobs' running workers: %.0f GPU-seconds (%.0f by the job's earlier workers, %.0f by replacements)\n", r.BrokenGPUSeconds, r.SurvivorGPUSeconds, r.ReplacementGPUSeconds)
		if td := r.Teardown; td.Count > 0 {
			fmt.Fprintf(w, "  time to stop a broken job's other workers: p50 %.2fs  p99 %.2fs  max %.2fs (%d breaks)\n", td.P50, td.P99, td.Max, td.Count)
		}
		switch st := r.TeardownStages; {
		case st == nil:
		case st.Split == 0:
			fmt.Fprintf(w, "  … at the apiserver: none of %d split (the audit log lacks their Job's or workers' DELETEs)\n", st.Unsplit)
		default:
			fmt.Fprintf(w, "  … at the apiserver (audit log; means of %d split, %d not): %.2fs = the Job's DELETE after %.2fs, its workers' first DELETE %.2fs later, the last-seen worker's %.2fs later, answered in %.2fs, seen by the watch %+.2fs from that answer; the workers' DELETEs: %s\n",
				st.Split, st.Unsplit, st.Total.Mean, st.Notice.Mean, st.ToPodDeletes.Mean, st.PodDeletes.Mean, st.LastDelete.Mean, st.Seen.Mean, counted(st.DeletedBy, 3))
			fmt.Fprintf(w, "    the %.2fs to the workers' first DELETE: the Job's DELETE answered in %.2fs, the deleter's first request about the job %+.2fs from that answer, its first DELETE of a worker %.2fs later; those first requests: %s\n",
				st.ToPodDeletes.Mean, st.JobAnswered.Mean, st.ToDeleter.Mean, st.DeleterWork.Mean, counted(st.DeleterFirst, 2))
		}
		if a := r.Assembly; a.Count > 0 {
			fmt.Fprintf(w, "  first replacement running to all running: p50 %.2fs  p99 %.2fs  max %.2fs (%d breaks)\n", a.P50, a.P99, a.Max, a.Count)
		}
	}
	if r.JobsNotCreated > 0 {
		fmt.Fprintf(w, "  jobs not created (their create failed): %d\n", r.JobsNotCreated)
	}
	for _, phase := range []string{"train", "hold"} {
		if c, ok := r.ControllerManager[phase]; ok {
			fmt.Fprintf(w, "  controller-manager during %s: requests waited %s on their clients' rate limits; busiest work queues: %s\n",
				phase, topTallies(c.RateLimiter, "requests", len(c.RateLimiter)), topTallies(c.Work, "items", 3))
		}
		if a, ok := r.APIServer[phase]; ok {
			fmt.Fprintf(w, "  apiserver during %s: requests took %s; APF queued them %s\n",
				phase, topTallies(a.Requests, "requests", 3), topTallies(a.APFWait, "requests", 2))
			if a.GoSched != nil {
				fmt.Fprintf(w, "    its goroutines' waits to run, one in eight sampled: %.0f (%s)", a.GoSched.Count, longWaits(a.GoSched))
				if p := a.GCPauses; p != nil {
					fmt.Fprintf(w, "; its GC stopped them %.0f times for at least %.2fs", p.Count, p.Sum)
				}
				fmt.Fprintln(w)
			}
			if len(a.TerminatedWatchers) > 0 {
				fmt.Fprintf(w, "    it closed watches whose client fell behind: %s\n", byResource(a.TerminatedWatchers))
			}
		}
		if e, ok := r.Etcd[phase]; ok {
			if e.RPCs == nil {
				fmt.Fprintf(w, "  etcd during %s: calls not timed (etcd runs without --metrics=extensive)", phase)
			} else {
				fmt.Fprintf(w, "  etcd during %s: calls took %s inside etcd", phase, topTallies(e.RPCs, "calls", 2))
			}
			if f := e.WALFsync; f != nil && f.Count > 0 {
				fmt.Fprintf(w, "; WAL synced %.0f times, mean %.1fms", f.Count, 1000*f.Sum/f.Count)
			}
			fmt.Fprintln(w)
		}
		if sc, ok := r.Scheduler[phase]; ok {
			fmt.Fprintf(w, "  scheduler during %s: attempts took %s", phase, topTallies(sc.Attempts, "attempts", 3))
			if len(sc.PodGroupAttempts) > 0 {
				fmt.Fprintf(w, "; pod-group cycles %s", topTallies(sc.PodGroupAttempts, "cycles", 3))
				if g := sc.PodGroupAlgorithm; g != nil {
					fmt.Fprintf(w, ", placing their pods %.2fs", g.Sum)
				}
			}
			if len(sc.RateLimiter) > 0 {
				fmt.Fprintf(w, "; its requests waited %s on its clients' rate limits", topTallies(sc.RateLimiter, "requests", len(sc.RateLimiter)))
			}
			fmt.Fprintln(w)
		}
		if cpu, ok := r.CPU[phase]; ok {
			fmt.Fprintf(w, "  CPU during %s: %s\n", phase, secondsByProcess(cpu))
		}
		if wait, ok := r.RunQueue[phase]; ok {
			fmt.Fprintf(w, "  waiting for a core during %s: %s\n", phase, secondsByProcess(wait))
		}
	}
	if t := r.APIServerTrace; t != nil {
		printAPIServerTrace(w, t)
	}
	if t := r.EtcdTrace; t != nil {
		printEtcdTrace(w, t)
	}
	for _, phase := range []string{"train", "hold"} {
		if c, ok := r.AuditedRequests[phase]; ok {
			fmt.Fprintf(w, "  audit log during %s: %s\n", phase, counted(c, 5))
			fmt.Fprintf(w, "    the apiserver's time on them: %s\n", auditedTimes(c, r.AuditedTimes[phase], 3))
			if f := r.AuditedFailures[phase]; len(f) > 0 {
				fmt.Fprintf(w, "    answered with an error: %s\n", counted(f, 5))
			}
			if ws := r.AuditedWatches[phase]; len(ws) > 0 {
				fmt.Fprintf(w, "    watches: %s\n", watches(ws))
			}
		}
		if t := r.SchedulerTokens[phase]; t != nil {
			fmt.Fprintf(w, "    the scheduler's client drew at most %.0f of its %d tokens (QPS %d), %.1fs into %s, over %d requests\n",
				t.Drawn, t.Burst, t.QPS, t.DrawnAt, phase, t.Requests)
		}
	}
	for _, by := range slices.Sorted(maps.Keys(r.PodStatusWrites)) {
		for _, ns := range slices.Sorted(maps.Keys(r.PodStatusWrites[by])) {
			fmt.Fprintf(w, "  pods in %s by %s's status writes to each: %s\n", ns, by, byCount(r.PodStatusWrites[by][ns]))
			if re := r.StatusRewrites[by][ns]; re != nil {
				fmt.Fprintf(w, "    each write after a pod's first came %.2fs after the one before at the median (%.2fs at the least, %.2fs at most); failed: %d first writes, %d later ones\n",
					re.Gap.P50, re.MinGap, re.Gap.Max, re.FailedFirst, re.FailedLater)
				if watchesLogged(r.AuditedWatches, by+" pods") {
					fmt.Fprintf(w, "    %d of those writes came after %s opened a watch of pods since the write before, %d since the pod's binding\n",
						re.AfterWatchOpened, by, re.AfterWatchSinceBinding)
					if re.BindingVersionSeen > 0 {
						fmt.Fprintf(w, "    of the %d of pods the run saw bound, %d came after %s opened, since the binding, a pod watch asking from before the bound version\n",
							re.BindingVersionSeen, re.AfterWatchFromBeforeBinding, by)
					}
					fmt.Fprintf(w, "    %d came after %s opened, between the pod's binding and the next write to it, a pod watch asking for the current state (which sent the binding's copy); %d counting those received before the binding that started after it, %d also those received after its own next write, before the run saw the pod running\n",
						re.AfterCurrentStateWatch, by, re.AfterCurrentStateWatchStarted, re.AfterCurrentStateWatchBeforeRunningSeen)
					if re.SinceWatchOpened != nil || re.FirstSinceWatchOpened != nil {
						fmt.Fprintf(w, "    from %s's last pod watch opened before each: every later write %s, the same pods' first writes %s\n",
							by, sinceWatch(re.SinceWatchOpened), sinceWatch(re.FirstSinceWatchOpened))
					}
				}
			}
			for _, group := range []string{workload.WrittenOnce, workload.WrittenAgain} {
				if b := r.WritesBeforeFirst[by][ns][group]; b != nil {
					fmt.Fprintf(w, "    the others' writes to each pod written %s (%d), since its binding or the write before, to the first: %s; %s\n",
						group, b.Pods, byCount(b.ByPod), counted(b.Writes, 4))
					if watchesLogged(r.AuditedWatches, by+" pods") {
						fmt.Fprintf(w, "      %d of those pods had %s open, between the binding and the next write to the pod, a pod watch asking for the current state; %d counting those received before the binding that started after it, %d also those received after its own next write, before the run saw the pod running\n",
							b.CurrentStateWatch, by, b.CurrentStateWatchStarted, b.CurrentStateWatchBeforeRunningSeen)
					}
				}
			}
		}
	}
	printRequests(w, r.Requests)
}

// watchesLogged is whether the audit log held watches of key ("kwok-
// controller pods") in any phase: their policy logs them.
func watchesLogged(ws map[string]map[string]*workload.AuditedWatches, key string) bool {
	for _, phase := range ws {
		if _, ok := phase[key]; ok {
			return true
		}
	}
	return false
}

// sinceWatch says how long after a watch opened the writes of p came.
func sinceWatch(p *workload.Percentiles) string {
	if p == nil {
		return "none with one"
	}
	return fmt.Sprintf("%.2fs at the median (%.2fs at p90, %d with one)", p.P50, p.P90, p.Count)
}

// watches lists each client's watches of each resource, the most ended
// first: "kwok-controller pods opened 9 (9 from the current state),
// ended 9 (9 before their timeout, 0 within a second, after 41.20s at
// the median); scheduler pods opened 0, ended 1".
func watches(ws map[string]*workload.AuditedWatches) string {
	keys := slices.Sorted(maps.Keys(ws))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(ws[b].Ended, ws[a].Ended) })
	parts := []string{}
	for _, k := range keys {
		part := fmt.Sprintf("%s opened %d", k, ws[k].Opened)
		if n := ws[k].FromCurrentState; n > 0 {
			part += fmt.Sprintf(" (%d from the current state)", n)
		}
		part += fmt.Sprintf(", ended %d", ws[k].Ended)
		if l := ws[k].EarlyLived; l != nil {
			part += fmt.Sprintf(" (%d before their timeout, %d within a second, after %.2fs at the median)", ws[k].EndedEarly, ws[k].EarlyWithinSecond, l.P50)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// byResource lists counts by resource, the most first: "pods 28,
// leases coordination.k8s.io 1".
func byResource(counts map[string]float64) string {
	parts := []string{}
	for _, k := range runs.MostFirst(counts) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// byCount lists pods by how many writes each had, fewest first: "1890
// with 1, 10 with 2".
func byCount(pods map[string]int) string {
	counts := slices.Collect(maps.Keys(pods))
	slices.SortFunc(counts, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})
	parts := make([]string, 0, len(counts))
	for _, n := range counts {
		parts = append(parts, fmt.Sprintf("%d with %s", pods[n], n))
	}
	return strings.Join(parts, ", ")
}

// secondsByProcess lists seconds by process, the most first:
// "kube-apiserver 40.1s, etcd 12.0s, …".
func secondsByProcess(seconds map[string]float64) string {
	parts := []string{}
	for _, c := range runs.MostFirst(seconds) {
		parts = append(parts, fmt.Sprintf("%s %.1fs", c, seconds[c]))
	}
	return strings.Join(parts, ", ")
}

// longWait is where longWaits starts: the bucket from about a
// millisecond (Go's runtime exposes one from 0.918 ms).
const longWait = 0.0009

// longWaits says how many of w's waits were a millisecond or longer, by
// bucket: "412 of 0.918ms or more, 37 of 10.5ms or more, 0 of 117ms or
// more".
func longWaits(w *workload.Waits) string {
	parts := []string{}
	for i, b := range w.Buckets {
		if b.AtLeast < longWait {
			continue
		}
		n := 0.0
		for _, longer := range w.Buckets[i:] {
			n += longer.Count
		}
		parts = append(parts, fmt.Sprintf("%.0f of %.3gms or more", n, 1000*b.AtLeast))
	}
	if len(parts) == 0 {
		return "no bucket starts at a millisecond or more"
	}
	return strings.Join(parts, ", ")
}

// counted says the n largest counts and their total: "1204 in all
// (generic-garbage-collector get jobs 310, …)".
func counted(m map[string]int, n int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	total := 0
	parts := make([]string, 0, n)
	for i, k := range keys {
		total += m[k]
		if i < n {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%d in all (%s)", total, strings.Join(parts, ", "))
}

// auditedTimes says which n kinds of request the apiserver spent most
// time on, with their mean and the slow ones' split: "generic-garbage-
// collector delete pods 120.3s, 281ms each over 428 (70 over 0.5s: 12%
// of their time in etcd, 0% in APF's queues, most of the other layers'
// in response-write, 40%); …".
func auditedTimes(counts map[string]int, times map[string]workload.AuditedTimes, n int) string {
	keys := slices.Collect(maps.Keys(times))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(times[b].Seconds, times[a].Seconds), strings.Compare(a, b))
	})
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		t := times[k]
		part := fmt.Sprintf("%s %.1fs, %.0fms each over %d", k, t.Seconds, 1000*t.Seconds/float64(max(counts[k], 1)), counts[k])
		if t.Slow > 0 {
			part += fmt.Sprintf(" (%d over 0.5s: %.0f%% of their time in etcd, %.0f%% in APF's queues", t.Slow, 100*t.SlowEtcdSeconds/t.SlowSeconds, 100*t.SlowAPFSeconds/t.SlowSeconds)
			if layers := slices.Collect(maps.Keys(t.SlowOtherSeconds)); len(layers) > 0 {
				top := slices.MaxFunc(layers, func(a, b string) int {
					return cmp.Or(cmp.Compare(t.SlowOtherSeconds[a], t.SlowOtherSeconds[b]), strings.Compare(b, a))
				})
				part += fmt.Sprintf(", most of the other layers' in %s, %.0f%%", top, 100*t.SlowOtherSeconds[top]/t.SlowSeconds)
			}
			part += ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// topTallies says how many seconds the tallies add to and which n keys
// took most: "12.1s in all (DELETE 9.0s over 320 requests, …)".
func topTallies(m map[string]metrics.Tally, of string, n int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b].Sum, m[a].Sum), strings.Compare(a, b)) })
	total := 0.0
	for _, k := range keys {
		total += m[k].Sum
	}
	if len(keys) == 0 {
		return "0s"
	}
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.1fs over %.0f %s", k, m[k].Sum, m[k].Count, of))
	}
	return fmt.Sprintf("%.1fs in all (%s)", total, strings.Join(parts, ", "))
}

// gangWords says how a training run's jobs were scheduled, when as gangs.
func gangWords(r workload.TrainResult) string {
	switch {
	case r.Topology != "":
		return ", gang-scheduled, each job within one " + r.Topology[strings.LastIndexByte(r.Topology, '/')+1:] + " (" + r.Topology + ")"
	case r.Gang:
		return ", gang-scheduled (a PodGroup each)"
	}
	return ""
}

// printAPIServerTrace says, for the busiest verbs in the trace, where
// their requests' time went, and how long the goroutines waited to run.
func printAPIServerTrace(w io.Writer, t *workload.APIServerTrace) {
	fmt.Fprintf(w, "  apiserver trace, the hold's first %.0fs (%.1f MB): requests received and answered in it, their time, and of it running / else waiting to run / else waiting for etcd:\n", t.Seconds, float64(t.Bytes)/1e6)
	count := map[string]float64{}
	for verb, r := range t.Requests {
		count[verb] = float64(r.Count)
	}
	share := func(part, of float64) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*part/of)
	}
	// The busiest verbs, and DELETE, whose time a restart's teardown
	// waits on.
	verbs := runs.MostFirst(count)[:min(4, len(count))]
	if _, ok := t.Requests["delete"]; ok && !slices.Contains(verbs, "delete") {
		verbs = append(verbs, "delete")
	}
	for _, verb := range verbs {
		r := t.Requests[verb]
		fmt.Fprintf(w, "    %s: %d, mean %.0fms: %s / %s / %s", verb, r.Count, 1000*r.Seconds/float64(r.Count),
			share(r.RunningSeconds, r.Seconds), share(r.WaitToRunSeconds, r.Seconds), share(r.EtcdSeconds, r.Seconds))
		if r.Slow > 0 {
			fmt.Fprintf(w, "; %d of 0.5s or more, mean %.2fs: %s / %s / %s", r.Slow, r.SlowSeconds/float64(r.Slow),
				share(r.SlowRunning, r.SlowSeconds), share(r.SlowWaitToRun, r.SlowSeconds), share(r.SlowEtcd, r.SlowSeconds))
		}
		fmt.Fprintln(w)
	}
	for _, verb := range verbs {
		e := t.Requests[verb].EtcdWaits
		if e == nil || e.Count == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s's waits for etcd: %d ended by a reader, in %d requests, %.1fms a request; the answer's hand-over in the apiserver at most %s, at least %s; before the reader's wake %s, then the reader %s waiting to run / %s running / %s blocked",
			verb, e.Count, e.Requests, 1000*e.Seconds/float64(e.Requests), share(e.HandOverAtMostSeconds, e.Seconds), share(e.HandOverAtLeastSeconds, e.Seconds),
			share(e.BeforeWakeSeconds, e.Seconds), share(e.ReaderWaitToRunSeconds, e.Seconds), share(e.ReaderRunningSeconds, e.Seconds), share(e.ReaderBlockedSeconds, e.Seconds))
		if e.NoNetworkWait > 0 {
			fmt.Fprintf(w, "; in %d the reader was not woken by bytes", e.NoNetworkWait)
		}
		if e.Other > 0 {
			fmt.Fprintf(w, "; %d not split (ended otherwise, or on a lock)", e.Other)
		}
		if n := float64(e.SendSampled); n > 0 {
			fmt.Fprintf(w, "; %d sampled (a call's first wait, begun just after its request woke the connection's idle writer), mean %.1fms, the call's send %.2f–%.2fms (the writer's wait to run from the wake to its first write %.2fms)",
				e.SendSampled, 1000*e.SendSampledSeconds/n, 1000*e.SendAtLeastSeconds/n, 1000*e.SendAtMostSeconds/n, 1000*e.SendWriterWaitToRunSeconds/n)
		}
		fmt.Fprintln(w)
	}
	if r := t.EtcdReaders; r != nil && r.Readers > 0 {
		fmt.Fprintf(w, "    etcd connections: %d readers, woken %d times by bytes to read, %d of them by a thread without a P\n", r.Readers, r.NetworkWakes, r.WokenWithoutAnP)
	}
	printWaitsToRun(w, t.WaitsToRun, "requests", "etcd client", "etcd writer", "other")
}

// printWaitsToRun says how long a trace's goroutines of each kind waited
// to run.
func printWaitsToRun(w io.Writer, waits map[string]*workload.TracedWaits, kinds ...string) {
	var out []string
	for _, kind := range kinds {
		if k := waits[kind]; k != nil {
			out = append(out, fmt.Sprintf("%s %d, %.1fs (%d of 10ms or more)", kind, k.Count, k.Seconds, k.AtLeast10ms))
		}
	}
	fmt.Fprintf(w, "    goroutines' waits to run, every one: %s\n", strings.Join(out, "; "))
}

// printEtcdTrace says, for the calls etcd served most in the trace, how
// their goroutines' time split.
func printEtcdTrace(w io.Writer, t *workload.EtcdTrace) {
	fmt.Fprintf(w, "  etcd trace, the hold's first %.0fs (%.1f MB): calls begun and ended in it, a call's time in its goroutine, and of it waiting to run (first) / running / receiving the request / waiting to send / blocked else; then its least time with its whole request read:\n", t.Seconds, float64(t.Bytes)/1e6)
	count := map[string]float64{}
	for method, c := range t.Calls {
		count[method] = float64(c.Count)
	}
	ms := func(s float64, n int) string { return fmt.Sprintf("%.2fms", 1000*s/float64(n)) }
	for _, method := range runs.MostFirst(count)[:min(4, len(count))] {
		c, n := t.Calls[method], t.Calls[method].Count
		fmt.Fprintf(w, "    %s: %d, mean %s: %s (%s) / %s / %s / %s / %s; %s (%d read again before the handler)\n", method, n, ms(c.Seconds, n),
			ms(c.WaitToRunSeconds, n), ms(c.FirstWaitToRunSeconds, n), ms(c.RunningSeconds, n),
			ms(c.ReceivingSeconds, n), ms(c.SendingSeconds, n), ms(c.BlockedSeconds, n), ms(c.AfterRequestReadSeconds, n), c.ReadBeforeHandler)
	}
	lag := func(what string, l *workload.TracedWaits) string {
		if l == nil || l.Count == 0 {
			return what + ": none seen"
		}
		return fmt.Sprintf("%s: %d, mean %s (%d of 10ms or more)", what, l.Count, ms(l.Seconds, l.Count), l.AtLeast10ms)
	}
	fmt.Fprintf(w, "    %s; %s\n", lag("from a reader's wake by bytes to the call it starts", t.Arrivals), lag("from the end of a call that woke a writer to its write", t.AnswerSends))
	printWaitsToRun(w, t.WaitsToRun, "calls", "grpc reader", "grpc writer", "other")
}
