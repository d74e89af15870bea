package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

type cl2Options struct {
	*globals
	config      string
	overrides   []string
	nodes       int
	binary      string
	provider    string
	podsPerNode int
	throughput  float64
	verbose     bool
	output      string
}

func newCL2Command(g *globals) *cobra.Command {
	o := &cl2Options{globals: g}
	cmd := &cobra.Command{
		Use:   "cl2 [flags] [-- CLUSTERLOADER FLAGS...]",
		Short: "Run ClusterLoader2's density test on the fleet (experiment E) and record it as a run",
		Long: `Run ClusterLoader2 (kubernetes/perf-tests), the upstream scalability
benchmark, against the fleet: by default scenarios/density/config.yaml, a
density test whose pods each take nvidia.com/gpu and can only land on kwok's
fake nodes. It measures PodStartupLatency, SchedulingThroughput and
WaitForControlledPodsRunning, the measurements that need neither SSH to a
master nor CL2's in-cluster Prometheus.

CL2 is not on the Go module proxy, so bring a clusterloader binary built
from perf-tests (run without one for the exact commands). It is looked up
as --binary, else $GHOSTFLEET_CL2, else clusterloader or clusterloader2 on
PATH: an explicit flag wins over the environment, as in kubectl.

It runs with --provider=kind (CL2 has no kwok provider; kind has no SSH to
a master), --nodes (default: the fleet's fake node count),
--skip-cluster-verification (the fake nodes are tainted),
--enable-exec-service=false and --enable-prometheus-server=false (their
pods could not run on fake nodes), and KUBECONFIG set to the fleet's. Flags
after -- go to clusterloader as they are; CL2_* environment variables are
passed through (CL2 reads them as test overrides).

Each run gets a folder results/cl2-<time>/ with CL2's report folder
(report/), its log (clusterloader.log) and run.json, whose result is CL2's
artifacts read back: pod startup latency percentiles per transition,
scheduling throughput, API responsiveness (when CL2 had a Prometheus) and
junit.xml. It exits 1 when clusterloader exits non-zero or junit.xml lists a
failure. Ctrl-C interrupts clusterloader (SIGINT), keeps what it wrote,
records the run as interrupted and deletes the namespaces it had created.`,
		Example: `  # experiment E on the whole fleet
  ghostfleet cl2

  # 100 nodes, 6 GPU pods per node, 200 pods/s
  ghostfleet cl2 --nodes 100 --pods-per-node 6 --throughput 200

  # your own overrides and binary, extra clusterloader flags after --
  ghostfleet cl2 --overrides scenarios/density/overrides.example.yaml \
    --binary ~/perf-tests/clusterloader2/clusterloader -- --port=8001`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q: clusterloader flags go after --", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args, cmd.Flags().Changed("nodes"))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.config, "config", cl2.DefaultConfig, "CL2 test config (--testconfig)")
	fs.StringArrayVar(&o.overrides, "overrides", nil, "CL2 overrides file (--testoverrides); repeat for more, later ones win")
	fs.IntVar(&o.nodes, "nodes", 0, "CL2's --nodes: what the test sizes itself by (default: the fleet's fake node count)")
	fs.StringVar(&o.binary, "binary", "", "clusterloader binary (default: $"+cl2.EnvBinary+", then clusterloader or clusterloader2 on PATH)")
	fs.StringVar(&o.provider, "provider", cl2.DefaultProvider, "CL2's --provider")
	fs.IntVar(&o.podsPerNode, "pods-per-node", 0, "saturation pods per node (CL2_PODS_PER_NODE; default: the config's, 4)")
	fs.Float64Var(&o.throughput, "throughput", 0, "saturation pods created per second (CL2_POD_THROUGHPUT; default: the config's, 50)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show every line clusterloader logs (it is always kept in the run folder)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json (the run record)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *cl2Options) run(ctx context.Context, extra []string, nodesSet bool) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if nodesSet && (o.nodes < 1 || o.nodes > fleet.MaxNodes) {
		return fmt.Errorf("--nodes %d is out of range: allowed are 1-%d (default: the fleet's fake node count)", o.nodes, fleet.MaxNodes)
	}
	if o.podsPerNode < 0 || o.podsPerNode > 1000 {
		return fmt.Errorf("--pods-per-node %d is out of range: allowed are 1-1000 (0: the config's default)", o.podsPerNode)
	}
	if o.throughput < 0 || o.throughput > 5000 {
		return fmt.Errorf("--throughput %g is out of range: allowed are more than 0 and at most 5000 pods/s (0: the config's default)", o.throughput)
	}
	if o.context != "" {
		return errors.New("cl2 runs clusterloader on the kubeconfig's current context; --context is not supported: pass a kubeconfig whose current context is the cluster")
	}
	if err := cl2.CheckFiles(o.config, o.overrides); err != nil {
		if o.config == cl2.DefaultConfig {
			return fmt.Errorf("%w (the default is relative to the GhostFleet repository: run from its root, or pass --config)", err)
		}
		return err
	}
	binary, _, err := cl2.Find(o.binary)
	if err != nil {
		return exitError{code: 1, msg: err.Error()}
	}

	env, capacity, err := o.startWorkload(ctx, o.output, "")
	if err != nil {
		return err
	}
	if !nodesSet {
		o.nodes = capacity.FakeNodes
	}
	if o.nodes > capacity.FakeNodes {
		fmt.Fprintf(o.streams.ErrOut, "warning: --nodes %d is more than the fleet's %d fake nodes: CL2 sizes the test by --nodes, so pods will stay Pending\n", o.nodes, capacity.FakeNodes)
	}
	if perNode := max(o.podsPerNode, 4); capacity.MaxNodeGPUs > 0 && int64(perNode+1) > capacity.MaxNodeGPUs {
		fmt.Fprintf(o.streams.ErrOut, "warning: %d saturation pods per node plus about one latency pod, at 1 GPU each, do not fit nodes of %d GPUs: some will stay Pending\n", perNode, capacity.MaxNodeGPUs)
	}
	set := map[string]any{}
	if o.podsPerNode > 0 {
		set["CL2_PODS_PER_NODE"] = o.podsPerNode
	}
	if o.throughput > 0 {
		set["CL2_POD_THROUGHPUT"] = o.throughput
	}

	p := o.streams.printer(false)
	defer p.Close()
	opts := cl2.Options{
		Binary: binary, Config: o.config, Overrides: o.overrides, Nodes: o.nodes, Provider: o.provider,
		Kubeconfig: env.target.Kubeconfig, Set: set, ExtraArgs: extra,
		ResultsRoot: o.resultsDir, Cluster: env.clusterName(), Profile: env.profile,
		Params: map[string]any{"fakeNodes": capacity.FakeNodes, "totalGPUs": capacity.TotalGPUs},
		Log:    &cl2LogLines{report: p.Report, verbose: o.verbose}, Report: p.Report,
	}
	fmt.Fprintf(o.streams.ErrOut, "• clusterloader %s on %s, --nodes %d\n", binary, env.target, o.nodes)
	rec, dir, runErr := cl2.Run(ctx, opts)
	p.Close()
	if dir == "" { // refused before anything ran
		return runErr
	}
	if o.output == "json" {
		if err := writeJSON(o.streams.Out, rec); err != nil {
			return err
		}
	} else if res, ok := rec.Result.(report.CL2Result); ok {
		printCL2(o.streams.Out, rec, res)
	}
	fmt.Fprintf(o.streams.ErrOut, "run record: %s\n", dir)
	if ctx.Err() != nil {
		o.cleanUpInterrupted(env, rec)
		return exitError{code: 130}
	}
	if runErr != nil {
		return exitError{code: 1, msg: runErr.Error()}
	}
	return nil
}

// cleanUpInterrupted deletes the namespaces an interrupted CL2 run
// created, so its pods stop holding the fleet's GPUs.
func (o *cl2Options) cleanUpInterrupted(env runEnv, rec record.Record) {
	res, _ := rec.Result.(report.CL2Result)
	w := o.streams.ErrOut
	if res.NamespacePrefix == "" {
		fmt.Fprintln(w, "interrupted before ClusterLoader2 created any namespace")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted, err := cl2.DeleteNamespaces(ctx, env.clients.Admin, res.NamespacePrefix)
	if err != nil {
		fmt.Fprintf(w, "interrupted: ClusterLoader2's namespaces %s-* may be left (%v); delete them with kubectl --kubeconfig %s delete namespace NAME\n", res.NamespacePrefix, err, env.target.Kubeconfig)
		return
	}
	fmt.Fprintf(w, "interrupted: deleting the %d namespace(s) ClusterLoader2 created, %s-* (their pods go with them)\n", len(deleted), res.NamespacePrefix)
}

// cl2LogLines shows clusterloader's output: every line with --verbose,
// else only its errors (klog's E and F lines); steps come as progress.
type cl2LogLines struct {
	report  progress.Func
	verbose bool
	partial []byte
}

var klogError = regexp.MustCompile(`^[EF]\d{4} `)

func (l *cl2LogLines) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		switch {
		case klogError.MatchString(line):
			l.report(progress.Event{Kind: progress.Warn, Message: "clusterloader: " + line})
		case l.verbose:
			l.report(progress.Event{Kind: progress.Info, Message: "clusterloader: " + line})
		}
	}
}

func printCL2(w io.Writer, rec record.Record, r report.CL2Result) {
	nodes := 0
	if p, ok := rec.Params.(cl2.Params); ok {
		nodes = p.Nodes
	}
	fmt.Fprintf(w, "cl2: %d nodes — %s (clusterloader exit %d", nodes, rec.Outcome, r.ExitCode)
	if r.JUnit != nil {
		fmt.Fprintf(w, "; junit: %d tests, %d failed", r.JUnit.Tests, r.JUnit.Failures+r.JUnit.Errors)
	}
	fmt.Fprintln(w, ")")
	if len(r.PodStartupLatency) > 0 {
		fmt.Fprintln(w, "  pod startup latency (s)              p50      p90      p99")
		last := ""
		for _, l := range r.PodStartupLatency {
			if l.Measurement != last {
				fmt.Fprintf(w, "    %s\n", l.Measurement)
				last = l.Measurement
			}
			s := seconds(l.Unit)
			note := ""
			if l.Metric == "pod_startup" {
				verdict := "meets"
				if l.P99*s > report.PodStartupThreshold {
					verdict = "misses"
				}
				note = fmt.Sprintf("  %s the 5s SLO", verdict)
			}
			fmt.Fprintf(w, "      %-26s %8.3f %8.3f %8.3f%s\n", l.Metric, l.P50*s, l.P90*s, l.P99*s, note)
		}
	} else {
		fmt.Fprintln(w, "  pod startup latency: none reported")
	}
	for _, t := range r.SchedulingThroughput {
		fmt.Fprintf(w, "  scheduling throughput (pods/s)  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n", t.Perc50, t.Perc90, t.Perc99, t.Max)
	}
	if len(r.SchedulingThroughput) == 0 {
		fmt.Fprintln(w, "  scheduling throughput: none reported")
	}
	if n := len(r.APIResponsiveness); n > 0 {
		fmt.Fprintf(w, "  API responsiveness: %d resource/verb lines, slowest p99 %.3fs (%s %s %s)\n", n,
			r.APIResponsiveness[0].P99*seconds(r.APIResponsiveness[0].Unit), r.APIResponsiveness[0].Verb, r.APIResponsiveness[0].Resource, r.APIResponsiveness[0].Scope)
	}
	if r.JUnit != nil {
		for _, f := range r.JUnit.Failed {
			fmt.Fprintf(w, "  failed: %s\n    %s\n", f.Name, firstLine(f.Message))
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  unreadable artifact: %s\n", p)
	}
}

// seconds converts a CL2 unit to seconds.
func seconds(unit string) float64 {
	switch unit {
	case "ms":
		return 0.001
	case "us", "µs":
		return 0.000001
	}
	return 1
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
