package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func newBenchCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that compare side by side in one run",
	}
	cmd.AddCommand(newBenchNodesCommand(g), newBenchLoadCommand(g), newBenchChurnCommand(g))
	return cmd
}

type benchNodesOptions struct {
	*globals
	bins       binaryFlags
	nodes      int
	rounds     int
	gpuProfile string
}

func newBenchNodesCommand(g *globals) *cobra.Command {
	o := &benchNodesOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Time GhostFleet's node creation against `kwokctl scale node`",
		Long: `Create --nodes GPU nodes with GhostFleet's parallel creator and with
` + "`kwokctl scale node`" + `, each on a fresh throwaway cluster (--name, default
ghostfleet-bench, no Prometheus), alternating the two for --rounds rounds.
Prints both times (all created; all Ready) and the ratio of medians, and
writes results/bench-nodes-<time>/bench.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 1000, "nodes per trial")
	fs.IntVar(&o.rounds, "rounds", 1, "rounds; each runs both methods once")
	fs.StringVar(&o.gpuProfile, "gpu-profile", fleet.DefaultGPUProfile, "GPU profile of GhostFleet's nodes (kwokctl's get the same GPU count)")
	o.bins.add(fs)
	return cmd
}

func (o *benchNodesOptions) run(ctx context.Context) error {
	if o.rounds < 1 || o.rounds > 10 {
		return fmt.Errorf("--rounds %d is out of range: allowed are 1-10", o.rounds)
	}
	p := o.streams.printer(false)
	defer p.Close()
	kwokctl, _ := binaries.Lookup(binaries.Kwokctl) // what GhostFleet is compared against
	b, err := o.benchFleet(ctx, o.bins, o.nodes, o.gpuProfile, p.Report, kwokctl)
	if err != nil {
		return err
	}
	res, err := fleet.BenchNodes(ctx, fleet.NodeBenchOptions{
		Cluster: b.Cluster, Nodes: o.nodes, Rounds: o.rounds, Profile: b.GPUProfile,
		Binaries: b.Binaries, Versions: b.Versions, Report: p.Report,
	})
	p.Close()
	if err != nil {
		return err
	}
	w := o.streams.Out
	fmt.Fprintf(w, "%-10s %5s %12s %12s\n", "method", "round", "created (s)", "Ready (s)")
	for _, t := range res.Trials {
		fmt.Fprintf(w, "%-10s %5d %12.2f %12.2f\n", t.Method, t.Round, t.Create, t.Ready)
	}
	fmt.Fprintf(w, "ghostfleet / kwokctl (medians): created %.2f×, Ready %.2f×\n", res.CreateRatio, res.ReadyRatio)
	return writeBench(w, o.resultsDir, "bench-nodes", res.Started, res)
}

const benchCluster = "ghostfleet-bench"

// benchFleet resolves the binaries (with also, of binaries.OnDemand) and
// describes the throwaway fleet.
func (g *globals) benchFleet(ctx context.Context, bins binaryFlags, nodes int, gpuProfile string, report progress.Func, also ...binaries.Binary) (workload.BenchFleet, error) {
	if err := g.ownOnly("bench"); err != nil {
		return workload.BenchFleet{}, err
	}
	if !g.nameSet {
		g.name = benchCluster // the throwaway cluster, unless --name says otherwise
	}
	if nodes < 1 || nodes > fleet.MaxNodes {
		return workload.BenchFleet{}, fmt.Errorf("--nodes %d is out of range: allowed are 1-%d", nodes, fleet.MaxNodes)
	}
	gpu, err := fleet.LookupGPUProfile(gpuProfile)
	if err != nil {
		return workload.BenchFleet{}, err
	}
	port, err := freePort()
	if err != nil {
		return workload.BenchFleet{}, err
	}
	r, err := bins.resolver(report)
	if err != nil {
		return workload.BenchFleet{}, err
	}
	r.Also = append(r.Also, also...)
	set, err := r.Resolve(ctx)
	if err != nil {
		return workload.BenchFleet{}, err
	}
	return workload.BenchFleet{Cluster: g.name, Nodes: nodes, GPUProfile: gpu, PrometheusPort: port,
		Binaries: set, Versions: r.Versions, Report: report}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeBench(w io.Writer, root, kind string, started time.Time, v any) error {
	dir, err := record.NewRunDir(root, kind, started)
	if err != nil {
		return err
	}
	if err := record.WriteJSON(dir, "bench.json", v); err != nil {
		return err
	}
	fmt.Fprintf(w, "written to %s\n", dir)
	return nil
}

type benchLoadOptions struct {
	*globals
	bins       binaryFlags
	nodes      int
	pods       int
	gpus       int
	mode       string
	profiles   []string
	gpuProfile string
	gpuModel   string
	claim      string
	timeout    time.Duration
}

func newBenchLoadCommand(g *globals) *cobra.Command {
	o := &benchLoadOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Run the same load under each control-plane profile and compare",
		Long: `For each --profiles entry, bring up a fresh throwaway fleet (--name,
default ghostfleet-bench) with --nodes GPU nodes and Prometheus, wait
until every node is schedulable (Ready, its not-ready taint lifted), run
` + "`load`" + ` with --pods pods of --gpus GPUs, record each component's CPU time and peak memory (VmHWM)
and what API Priority and Fairness rejected or queued per priority level,
and delete the fleet. Prints the results side by side and the throughput
ratio of the last profile to the first; writes results/bench-load-<time>/bench.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 1000, "GPU nodes in the fleet")
	fs.IntVar(&o.pods, "pods", 8000, "pods to create")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up waiting for each trial's pods to run after this long (40,000 pods on 5,000 nodes need more)")
	fs.IntVar(&o.gpus, "gpus", 1, "GPUs per pod")
	fs.StringVar(&o.mode, "mode", workload.ModePods, "how pods are created: "+strings.Join(workload.LoadModes, ", "))
	fs.StringSliceVar(&o.profiles, "profiles", []string{"default", "tuned"}, "control-plane profiles to compare, in order: built-in names or profile files (FILE.yaml, as --profile-file)")
	fs.StringVar(&o.gpuProfile, "gpu-profile", fleet.DefaultGPUProfile, "GPU profile of the nodes")
	fs.StringVar(&o.gpuModel, "gpu-model", fleet.GPUModelExtended, "how the nodes offer their GPUs: "+strings.Join(fleet.GPUModels, " or ")+" (as up --gpu-model); run the bench once with each to compare them")
	fs.StringVar(&o.claim, "claim", "", "how pods ask for GPUs on a dra fleet (as load --claim; default count)")
	o.bins.add(fs)
	return cmd
}

func (o *benchLoadOptions) run(ctx context.Context) error {
	var profiles []fleet.ComponentProfile
	for _, name := range o.profiles {
		p, err := fleet.ProfileByNameOrFile(name)
		if err != nil {
			return err
		}
		profiles = append(profiles, p)
	}
	opts := workload.LoadOptions{Namespace: "gf-load", Pods: o.pods, GPUs: o.gpus, Mode: o.mode, Timeout: o.timeout, Claim: o.claim}
	gpu, err := fleet.LookupGPUProfile(o.gpuProfile)
	if err != nil {
		return err
	}
	if err := fleet.CheckGPUModel(o.gpuModel); err != nil {
		return err
	}
	gpus := int64(o.nodes * gpu.GPUs)
	capacity := workload.Capacity{FakeNodes: o.nodes, TotalGPUs: gpus, FreeGPUs: gpus, MaxNodeGPUs: int64(gpu.GPUs)}
	if o.gpuModel == fleet.GPUModelDRA {
		capacity = workload.Capacity{FakeNodes: o.nodes, Devices: gpus, FreeDevices: gpus, MaxNodeDevices: int64(gpu.GPUs),
			Products: map[string]int64{gpu.DeviceName: gpus}}
	}
	warnings, err := opts.Validate(capacity, false)
	if err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	for _, w := range warnings {
		p.Report(progress.Event{Kind: progress.Warn, Message: w})
	}
	b, err := o.benchFleet(ctx, o.bins, o.nodes, o.gpuProfile, p.Report)
	if err != nil {
		return err
	}
	b.GPUModel = o.gpuModel
	res, err := workload.BenchLoad(ctx, b, profiles, opts)
	p.Close()
	if err != nil {
		return err
	}
	w := o.streams.Out
	fmt.Fprintf(w, "load %d pods × %d GPU (%s mode%s) on %d nodes, GPUs as %s\n", o.pods, o.gpus, o.mode, claimWords(opts.Claim), o.nodes, gpuModelWords(o.gpuModel))
	fmt.Fprintf(w, "%-8s %9s %9s %9s %9s %9s  %-10s %s\n", "profile", "sched/s", "all run s", "p50 s", "p99 s", "backlog", "bottleneck", "CPU s (apiserver, etcd, scheduler, ctrl-mgr, kwok, ghostfleet)")
	for _, t := range res.Trials {
		r := t.Result
		fmt.Fprintf(w, "%-8s %9.1f %9.1f %9.2f %9.2f %9.0f  %-10s %.0f, %.0f, %.0f, %.0f, %.0f, %.0f\n", t.Profile, r.ScheduleRate, r.DurationSeconds,
			r.StartupLatency.PodStartup.P50, r.StartupLatency.PodStartup.P99, r.Verdict.MaxPending, r.Verdict.Bottleneck,
			t.CPU["kube-apiserver"], t.CPU["etcd"], t.CPU["kube-scheduler"], t.CPU["kube-controller-manager"], t.CPU["kwok-controller"], t.CPU[fleet.SelfComponent])
		fmt.Fprintf(w, "         CPU per scheduled pod: %.1f ms in the control plane (apiserver %.1f, etcd %.1f, scheduler %.1f, ctrl-mgr %.1f, kwok %.1f)\n",
			t.ControlPlanePerPod, t.CPUPerPod["kube-apiserver"], t.CPUPerPod["etcd"], t.CPUPerPod["kube-scheduler"], t.CPUPerPod["kube-controller-manager"], t.CPUPerPod["kwok-controller"])
		fmt.Fprintf(w, "         peak RSS MiB: apiserver %.0f, etcd %.0f, scheduler %.0f, ctrl-mgr %.0f, kwok %.0f, prometheus %.0f\n",
			t.PeakRSS["kube-apiserver"], t.PeakRSS["etcd"], t.PeakRSS["kube-scheduler"], t.PeakRSS["kube-controller-manager"], t.PeakRSS["kwok-controller"], t.PeakRSS["prometheus"])
		fmt.Fprintf(w, "         APF rejected %v, max queued %v\n", nonZero(t.APF.Rejected), nonZero(t.APF.MaxInQueue))
		fmt.Fprintf(w, "         the fresh fleet's nodes were Ready after %.1fs and schedulable after %.1fs, before the load began\n", t.NodesReadySeconds, t.NodesSchedulableSeconds)
	}
	if res.ThroughputRatio > 0 {
		fmt.Fprintf(w, "%s / %s throughput: %.2f×\n", res.Trials[len(res.Trials)-1].Profile, res.Trials[0].Profile, res.ThroughputRatio)
	}
	return writeBench(w, o.resultsDir, "bench-load", res.Started, res)
}

// nonZero drops the zero entries and rounds the rest (Prometheus's
// increase() extrapolates to fractions).
func nonZero(m map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if n := int(math.Round(v)); n != 0 {
			out[k] = n
		}
	}
	return out
}

// countsText prints counts by kind as "429=12 timeout=3", or "none".
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

type benchChurnOptions struct {
	*globals
	bins       binaryFlags
	nodes      int
	rates      []float64
	duration   time.Duration
	profile    string
	gpuProfile string
}

func newBenchChurnCommand(g *globals) *cobra.Command {
	o := &benchChurnOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "Churn at several rates on one fresh fleet: achieved vs target",
		Long: `Bring up a fresh throwaway fleet (--name, default ghostfleet-bench), run
open-loop churn at each of --rates for --duration, and print achieved vs
target rates, errors, latency, each component's CPU time and what API
Priority and Fairness rejected or queued; writes
results/bench-churn-<time>/bench.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 1000, "GPU nodes in the fleet")
	fs.Float64SliceVar(&o.rates, "rates", []float64{50, 100, 200}, "churn rates to run, pods/s")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long each rate runs")
	fs.StringVar(&o.profile, "profile", "default", "control-plane profile: a built-in name or a profile file (FILE.yaml, as --profile-file)")
	fs.StringVar(&o.gpuProfile, "gpu-profile", fleet.DefaultGPUProfile, "GPU profile of the nodes")
	o.bins.add(fs)
	return cmd
}

func (o *benchChurnOptions) run(ctx context.Context) error {
	profile, err := fleet.ProfileByNameOrFile(o.profile)
	if err != nil {
		return err
	}
	opts := workload.ChurnOptions{Namespace: "gf-churn", Duration: o.duration, GPUs: 1}
	for _, r := range o.rates {
		o := opts
		o.Rate = r
		if err := o.Validate(); err != nil {
			return err
		}
	}
	p := o.streams.printer(false)
	defer p.Close()
	b, err := o.benchFleet(ctx, o.bins, o.nodes, o.gpuProfile, p.Report)
	if err != nil {
		return err
	}
	res, err := workload.BenchChurn(ctx, b, profile, o.rates, opts)
	p.Close()
	if err != nil {
		return err
	}
	w := o.streams.Out
	fmt.Fprintf(w, "churn on %d nodes, profile %s, %s per rate\n", o.nodes, o.profile, o.duration)
	fmt.Fprintf(w, "%7s %9s %9s %8s %10s %10s  %-12s %s\n", "target", "created/s", "deleted/s", "achieved", "create p99", "delete p99", "errors", "CPU s (apiserver, etcd, scheduler, kwok, ghostfleet)")
	for _, t := range res.Trials {
		r := t.Result
		fmt.Fprintf(w, "%7g %9.1f %9.1f %7.1f%% %9.3fs %9.3fs  %-12s %.0f, %.0f, %.0f, %.0f, %.0f\n", t.Rate, r.AchievedCreateRate, r.AchievedDeleteRate, 100*r.CreateRatio,
			r.Latency[workload.VerbCreate].P99, r.Latency[workload.VerbDelete].P99, countsText(r.Errors),
			t.CPU["kube-apiserver"], t.CPU["etcd"], t.CPU["kube-scheduler"], t.CPU["kwok-controller"], t.CPU[fleet.SelfComponent])
		fmt.Fprintf(w, "        CPU per pod created and deleted: %.1f ms in the control plane\n", t.ControlPlanePerPod)
		fmt.Fprintf(w, "        APF rejected %v, max queued %v\n", nonZero(t.APF.Rejected), nonZero(t.APF.MaxInQueue))
	}
	return writeBench(w, o.resultsDir, "bench-churn", res.Started, res)
}
