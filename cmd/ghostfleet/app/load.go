package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

type loadOptions struct {
	*globals
	runs.LoadOptions
	output        string
	prometheusURL string
}

func newLoadCommand(g *globals) *cobra.Command {
	o := &loadOptions{globals: g, LoadOptions: runs.NewLoadOptions()}
	cmd := &cobra.Command{
		Use:   "load N G",
		Short: "Create N pods of G GPUs each, time them to Running, and say what limited them",
		Long: `Create N pods each requesting G nvidia.com/gpu (as limits), placed only on
kwok's fake nodes, and wait until all run (or --timeout). Reports the time
to create, schedule and run them all, the throughput, pods left
unschedulable, every request's outcome (APF's 429s counted, never retried)
and a verdict: is the scheduler slow, or underfed? With Prometheus the
verdict adds the scheduler's active-queue peak, attempts per second, its
pod-group (gang) cycles and their time, its CPU, and the pods that entered
its active queue by why (new, back-off ended, taken from back-off while
idle, pulled in with their pod group) over the run.

A burst (the default) sends every pod at once, from --workers in parallel:
it asks how fast the fleet fills. --rate R paces creation at R pods/s,
open loop: a steady-state run, the only kind the upstream pod startup SLO
(p99 ≤ 5s, sig-scalability pod_startup_latency.md) is defined on — keep R
below what the fleet schedules, as ClusterLoader2 does with its latency pods.

Pod startup latency p50/p90/p99 is split as ClusterLoader2's
PodStartupLatency splits it: create→schedule, schedule→run and pod_startup
(create→run). create is just before GhostFleet sent the pod (client clock,
ms; a pod a controller created: its creationTimestamp, whole seconds);
schedule and run are when GhostFleet's watch first saw the pod bound and
Running (ms). docs/measurements.md has every figure's definition.

--claim says how pods ask for their G GPUs. none: the extended resource
nvidia.com/gpu (fleets up with --gpu-model extended). The others need a
fleet up with --gpu-model dra and give the run one ResourceClaimTemplate
(in its namespace, named after the run) that every pod references in
spec.resourceClaims; the controller-manager makes each pod its claim and
the scheduler's DynamicResources plugin allocates it:
  count          exactly G GPUs of DeviceClass gpu.nvidia.com (G=1: one GPU)
  product=NAME   G GPUs whose productName is NAME (NVIDIA-H100-80GB-HBM3 or
                 "NVIDIA H100 80GB HBM3"), by a CEL selector
  match=ATTR     G GPUs that share device attribute ATTR (matchAttribute)
  nvlink         G GPUs of one NVLink domain (match=nvlinkDomain); a claim is
                 allocated on one node, so on DGX profiles this is the node
Without --claim pods ask as the fleet offers: none, or count on a fleet of
DRA nodes. A claim no node can satisfy (more GPUs than a node has, a
product no node has) is refused before anything is created; with
--allow-unschedulable it runs, and the load ends once every pod not
running is unschedulable and nothing has moved for 20s, with the
scheduler's reason.

--mode pods creates bare pods; --mode deployment creates one Deployment of
N replicas (the seed's approach: the controller-manager's client QPS then
paces pod creation); --mode job one Indexed Job.

Requests are sent as the ServiceAccount ghostfleet-load, so API Priority and
Fairness treats them as tenant traffic. The run record is written to
results/load-<time>/run.json.`,
		Example: `  ghostfleet load 8000 1
  ghostfleet load 600 1 --rate 20      # steady state: the pod startup SLO's question
  ghostfleet load 8000 1 --mode deployment -o json
  ghostfleet load 100 8 --claim nvlink   # on a fleet up with --gpu-model dra`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Mode, "mode", o.Mode, "how pods are created: "+strings.Join(workload.LoadModes, ", "))
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace (created, labelled as GhostFleet's)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting for pods to run after this long")
	fs.IntVar(&o.Workers, "workers", o.Workers, "parallel creates in a burst (pods mode without --rate)")
	fs.Float64Var(&o.Rate, "rate", 0, "pace creation at this many pods/s, open loop (steady state); 0 sends all at once (a burst)")
	fs.StringVar(&o.Claim, "claim", "", "how pods ask for GPUs: "+strings.Join(workload.ClaimModes, ", ")+" (default: as the fleet offers them)")
	fs.BoolVar(&o.AllowUnschedulable, "allow-unschedulable", false, "run even when no node could satisfy a pod (G more than any node has, a product no node has)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster, for the verdict")
	fs.BoolVar(&o.Preflight, "preflight", false, "give each pod a pre-flight init container (for fault pod-exit --init)")
	_ = cmd.RegisterFlagCompletionFunc("mode", fixed(workload.LoadModes...))
	_ = cmd.RegisterFlagCompletionFunc("claim", fixed(workload.ClaimCount, workload.ClaimNVLink, workload.ClaimNone, workload.ClaimProduct+"=", workload.ClaimMatch+"="))
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *loadOptions) run(ctx context.Context, args []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var err error
	if o.Pods, err = runs.Int("pod count", args[0]); err != nil {
		return err
	}
	if o.GPUs, err = runs.Int("GPUs per pod", args[1]); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Load(ctx, o.env(p, o.prometheusURL), o.LoadOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printLoad(w, res.LoadResult) }); ferr != nil {
		return ferr
	}
	switch {
	case err != nil:
		return err
	case res.TimedOut:
		return exitError{code: 1, msg: fmt.Sprintf("timed out after %s: %d of %d pods running", o.Timeout, res.Running, res.Pods)}
	case res.Unschedulable > 0 && !res.Interrupted:
		return exitError{code: 1, msg: fmt.Sprintf("%d of %d pods unschedulable: %s", res.Unschedulable, res.Pods, res.UnschedulableReason)}
	}
	return nil
}

func printLoad(w io.Writer, r workload.LoadResult) {
	status := ""
	switch {
	case r.Interrupted:
		status = " — interrupted"
	case r.TimedOut:
		status = " — timed out"
	}
	pattern := r.Pattern
	if r.TargetRate > 0 {
		pattern = fmt.Sprintf("%s, %g pods/s", r.Pattern, r.TargetRate)
	}
	fmt.Fprintf(w, "load: %d pods × %d GPU (%s mode, %s%s)%s\n", r.Pods, r.GPUsPerPod, r.Mode, pattern, claimWords(r.Claim), status)
	if r.CreateSeconds > 0 {
		fmt.Fprintf(w, "  all created   %7.2fs  (%.0f pods/s)\n", r.CreateSeconds, r.CreateRate)
	} else {
		fmt.Fprintln(w, "  not all created")
	}
	if r.Scheduled == r.Pods {
		fmt.Fprintf(w, "  all scheduled %7.2fs  (%.0f pods/s)\n", r.ScheduleSeconds, r.ScheduleRate)
	} else {
		fmt.Fprintf(w, "  %d of %d scheduled, the last at %.2fs (%.0f pods/s)\n", r.Scheduled, r.Pods, r.ScheduleSeconds, r.ScheduleRate)
	}
	if r.Running == r.Pods {
		fmt.Fprintf(w, "  all running   %7.2fs  (%.0f pods/s overall)\n", r.DurationSeconds, r.PodsPerSecond)
	} else {
		fmt.Fprintf(w, "  %d of %d running, the last at %.2fs\n", r.Running, r.Pods, r.DurationSeconds)
	}
	fmt.Fprintf(w, "  scheduled %d, running %d, unschedulable %d, failed %d, create errors %d\n",
		r.Scheduled, r.Running, r.Unschedulable, r.Failed, r.CreateErrors)
	if r.UnschedulableReason != "" {
		fmt.Fprintf(w, "  unschedulable: %s\n", r.UnschedulableReason)
	}
	printRequests(w, r.Requests)
	s := r.StartupLatency
	if s.PodStartup.Count == 0 {
		fmt.Fprintln(w, "  pod startup: no pod ran, nothing to measure")
	} else {
		fmt.Fprintf(w, "  startup latency (s), %d pods  p50      p90      p99\n", s.PodStartup.Count)
		for _, row := range []struct {
			name string
			p    workload.Percentiles
		}{
			{"create→schedule", s.CreateToSchedule},
			{"schedule→run", s.ScheduleToRun},
			{"pod_startup", s.PodStartup},
		} {
			fmt.Fprintf(w, "    %-20s %8.3f %8.3f %8.3f\n", row.name, row.p.P50, row.p.P90, row.p.P99)
		}
		fmt.Fprintf(w, "  create times: %s\n", s.CreateTime)
		fmt.Fprintf(w, "  %s\n", startupJudgement(r))
	}
	fmt.Fprintf(w, "  verdict (%s): %s\n", r.Verdict.Source, r.Verdict.Explanation)
}

// startupJudgement holds a steady run against the pod startup SLO and
// says why a burst is not held against it.
func startupJudgement(r workload.LoadResult) string {
	p99 := r.StartupLatency.PodStartup.P99
	switch r.Pattern {
	case workload.PatternAboveCapacity:
		return fmt.Sprintf("pod_startup p99 %.2fs: paced faster than the scheduler binds (pods queued), so not steady state and not judged against the pod startup SLO; lower --rate", p99)
	case workload.PatternBurst:
		return fmt.Sprintf("pod_startup p99 %.2fs: a burst, not judged against the pod startup SLO (defined for steady state; use --rate)", p99)
	}
	verb := "meets"
	if p99 > report.PodStartupThreshold {
		verb = "misses"
	}
	return fmt.Sprintf("pod_startup p99 %.2fs %s the upstream pod startup SLO (p99 ≤ %gs in steady state)", p99, verb, report.PodStartupThreshold)
}

// claimWords is ", claim MODE" for a header line when pods asked through
// DRA claims, and nothing for nvidia.com/gpu.
func claimWords(claim string) string {
	if claim == "" || claim == workload.ClaimNone {
		return ""
	}
	return ", claim " + claim
}
