package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

type cl2Options struct {
	*globals
	runs.CL2Options
	nodes  int
	output string
}

func newCL2Command(g *globals) *cobra.Command {
	o := &cl2Options{globals: g, CL2Options: runs.NewCL2Options()}
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
	fs.StringVar(&o.Config, "config", o.Config, "CL2 test config (--testconfig)")
	fs.StringArrayVar(&o.Overrides, "overrides", nil, "CL2 overrides file (--testoverrides); repeat for more, later ones win")
	fs.IntVar(&o.nodes, "nodes", 0, "CL2's --nodes: what the test sizes itself by (default: the fleet's fake node count)")
	fs.StringVar(&o.Binary, "binary", "", "clusterloader binary (default: $"+cl2.EnvBinary+", then clusterloader or clusterloader2 on PATH)")
	fs.StringVar(&o.Provider, "provider", o.Provider, "CL2's --provider")
	fs.IntVar(&o.PodsPerNode, "pods-per-node", 0, "saturation pods per node (CL2_PODS_PER_NODE; default: the config's, 4)")
	fs.Float64Var(&o.Throughput, "throughput", 0, "saturation pods created per second (CL2_POD_THROUGHPUT; default: the config's, 50)")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "show every line clusterloader logs (it is always kept in the run folder)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json (the run's typed result)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *cl2Options) run(ctx context.Context, extra []string, nodesSet bool) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if nodesSet {
		o.Nodes = &o.nodes
	}
	o.ExtraArgs = extra
	if o.context != "" { // without --kubeconfig the target drops it: refuse it here
		return runs.ErrCL2Context
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.CL2(ctx, o.env(p, ""), o.CL2Options)
	p.Close()
	if res.Dir == "" { // refused before anything ran
		return err
	}
	ferr := o.finish(res, o.output, func(w io.Writer) { printCL2(w, res) })
	if ferr != nil {
		return ferr
	}
	return err
}

func printCL2(w io.Writer, r runs.CL2Result) {
	fmt.Fprintf(w, "cl2: %d nodes — %s (clusterloader exit %d", r.Nodes, r.Outcome, r.ExitCode)
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
			s := runs.CL2Seconds(l.Unit)
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
			r.APIResponsiveness[0].P99*runs.CL2Seconds(r.APIResponsiveness[0].Unit), r.APIResponsiveness[0].Verb, r.APIResponsiveness[0].Resource, r.APIResponsiveness[0].Scope)
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

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
