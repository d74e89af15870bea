package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics"
)

type attachOptions struct {
	*globals
	runs.AttachOptions
	binaryFlags
	output string
}

func newAttachCommand(g *globals) *cobra.Command {
	o := &attachOptions{globals: g, AttachOptions: runs.NewAttachOptions()}
	cmd := &cobra.Command{
		Use:   "attach --kubeconfig F [--context C]",
		Short: "Prepare an existing cluster for GhostFleet's fake GPU nodes, loads and faults",
		Long: fmt.Sprintf(`Prepare a cluster GhostFleet did not create so that nodes, load, churn,
train, binpack and fault work on it as on GhostFleet's own fleet:

  - kwok's CRDs Stage, Metric and ClusterResourceUsage, those missing
    (from kwok v0.8.0's own manifests; CRDs already there are left alone),
  - GhostFleet's kwok stages (node and pod lifecycles, GPU and pod faults;
    with --dcgm the DCGM Metric),
  - the namespaces %s (the attachment record: which CRDs GhostFleet
    installed) and gf-load with the load ServiceAccount ghostfleet-load
    and its Role,
  - a kwok controller run on THIS machine against the cluster's API
    server (the cached kwok binary, in its own session; pid file, log and
    a copy of the context's kubeconfig under
    ~/.local/state/ghostfleet/attached/), managing only the nodes that
    carry %s — the nodes GhostFleet creates; never all nodes.

Everything attach creates is labelled %s=true; detach removes exactly
that. Attach refuses to replace a namespace or kwok stage that is not
GhostFleet's.

The first attach to a cluster is GhostFleet's first write there: it names
the cluster and its API server and asks before writing (on a terminal),
or needs %s (in scripts). Attaching again repairs what is missing and
restarts a kwok controller that stopped. status shows the controller.

--kwok-shards K runs K local kwok controllers instead of one, each owning
a disjoint slice of GhostFleet's nodes through kwok's own node selection
(whole 32-node blocks: block b belongs to shard b mod K); attaching again
with another K stops the old shards before starting the new ones.
--remote-shards R leaves the last R of them to other machines: attach
prints the `+"`ghostfleet kwok-shard`"+` command that runs each there, and
status judges them by their nodes' leases.

Of an attached cluster GhostFleet knows only the apiserver's URL. Managed
control planes hide the scheduler's, controller-manager's and etcd's
/metrics; --metrics says how the direct scrape (snapshot and console
without Prometheus) looks for them: probe (the default) tries each
through the apiserver's proxy to its pod in kube-system, as kubeadm runs
them; apiserver-only declares them hidden. Either way their queries show
as "not available on this cluster" with the reason, while the API latency
SLIs, APF and pod startup (from the watch) keep working. attach says
what answered.`, fleet.AttachNamespace, fleet.KwokNodeSelector, fleet.LabelManaged, runs.ConsentFlag),
		Example: `  ghostfleet attach --kubeconfig ~/.kube/big.yaml --context perf
  ghostfleet nodes 1000 --kubeconfig ~/.kube/big.yaml --context perf
  ghostfleet load 8000 1 --kubeconfig ~/.kube/big.yaml --context perf
  ghostfleet detach --kubeconfig ~/.kube/big.yaml --context perf
  ghostfleet attach --kubeconfig k.yaml --i-know-this-is-real -o json   # in a script
  ghostfleet attach --kubeconfig k.yaml --kwok-shards 2
  ghostfleet attach --kubeconfig k.yaml --kwok-shards 4 --remote-shards 2   # shards 3 and 4 elsewhere
  ghostfleet attach --kubeconfig eks.yaml --metrics apiserver-only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			if g.kubeconfig == "" {
				return fmt.Errorf("attach needs --kubeconfig F: the cluster to prepare (GhostFleet never reads $KUBECONFIG or ~/.kube/config)")
			}
			o.Binaries = o.binaryFlags.binaries()
			env := g.env(nil, "")
			if !env.RealCluster && isTerminal(g.streams.ErrOut) && isTerminalReader(g.streams.In) {
				if _, err := env.Target.Server(); err != nil {
					return err
				}
				env.RealCluster = ask(g.streams.In, g.streams.ErrOut, runs.AttachQuestion(env.Target))
				if !env.RealCluster {
					return fmt.Errorf("not attached: nothing was written")
				}
			}
			p := g.streams.printer(false)
			defer p.Close()
			env.Reporter = cliReporter{p}
			res, err := runs.Attach(cmd.Context(), env, o.AttachOptions)
			p.Close()
			if err != nil {
				return err
			}
			return g.finish(res, o.output, func(w io.Writer) { printAttach(w, res) })
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.DCGM, "dcgm", false, "also install the DCGM Metric: each GhostFleet node's dcgm-exporter series, served by the local kwok controller")
	fs.IntVar(&o.DCGMGPUs, "dcgm-gpus", o.DCGMGPUs, "with --dcgm: GPUs per node the series describe")
	fs.IntVar(&o.KwokShards, "kwok-shards", o.KwokShards, fmt.Sprintf("local kwok controllers sharing the nodes, each owning whole 32-node blocks (1-%d)", fleet.MaxKwokShards))
	fs.IntVar(&o.RemoteShards, "remote-shards", 0, "of the --kwok-shards, how many (the last ones) run on other machines with `ghostfleet kwok-shard` instead of here")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace to make ready (load ServiceAccount and Role)")
	fs.StringVar(&o.Metrics, "metrics", o.Metrics, "where the components' /metrics are: probe (through the apiserver's pod proxy) or apiserver-only (the others hidden)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	o.binaryFlags.add(fs)
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	_ = cmd.RegisterFlagCompletionFunc("metrics", fixed(fleet.MetricsModes...))
	return cmd
}

func printAttach(w io.Writer, r runs.AttachResult) {
	if r.Outcome != runs.Completed {
		fmt.Fprintf(w, "attach %s: %s\n", r.Server, r.Outcome)
		return
	}
	how := "attached"
	if r.Again {
		how = "attached again"
	}
	fmt.Fprintf(w, "%s %s (%s)\n", how, r.Server, r.Cluster)
	fmt.Fprintf(w, "  CRDs installed: %s; already there, left alone: %s\n", listOrNone(r.CRDsInstalled), listOrNone(r.CRDsKept))
	fmt.Fprintf(w, "  kwok stages: %d installed or updated\n", r.Stages)
	if r.DCGM {
		fmt.Fprintln(w, "  DCGM Metric installed")
	}
	fmt.Fprintf(w, "  workload namespace %s with ServiceAccount ghostfleet-load\n", r.Namespace)
	state := "started"
	if r.KwokAlready {
		state = "already running"
	}
	if len(r.KwokPIDs) > 1 {
		fmt.Fprintf(w, "  %d kwok controllers %s here (pids %v), sharing %s by 32-node block (block b to shard b mod %d); logs in %s\n", len(r.KwokPIDs), state, r.KwokPIDs, r.NodeSelector, len(r.KwokPIDs), r.StateDir)
	} else {
		fmt.Fprintf(w, "  kwok controller %s here: pid %d, nodes %s, log %s\n", state, r.KwokPID, r.NodeSelector, r.KwokLog)
	}
	for _, c := range r.RemoteShards {
		fmt.Fprintf(w, "  remote shard: run on another machine, with this kubeconfig copied there: %s\n", c)
	}
	for _, m := range r.Metrics {
		switch {
		case m.Available:
			fmt.Fprintf(w, "  metrics: %s /metrics answers\n", m.Component)
		case m.Hidden:
			fmt.Fprintf(w, "  metrics: %s queries %s\n", m.Component, metrics.NotAvailable(m.Reason))
		default:
			fmt.Fprintf(w, "  metrics: %s\n", m.Reason)
		}
	}
	fmt.Fprintln(w, "next: ghostfleet nodes N --kubeconfig ... ; ghostfleet detach --kubeconfig ... removes it all")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func newDetachCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "detach --kubeconfig F [--context C]",
		Short: "Remove everything GhostFleet put on an attached cluster, and nothing else",
		Long: fmt.Sprintf(`Undo attach: delete GhostFleet's workload namespaces (their pods go first,
while the local kwok controller still runs) and every node GhostFleet
created (label %s and kwok's fake-node annotation), stop the
local kwok controller, delete GhostFleet's kwok stages, Metrics and
ClusterResourceUsages, the CRDs that attach installed (as its record in
namespace %s says; CRDs that were there before stay) and that
namespace. Everything is found by the label %s=true: nodes,
namespaces and objects GhostFleet did not create are never touched.

Detaching a cluster that is not attached removes nothing and succeeds;
it prints what it removed. When the API server does not answer, the
local kwok controller is still stopped.`, fleet.KwokNodeSelector, fleet.AttachNamespace, fleet.LabelManaged),
		Example: `  ghostfleet detach --kubeconfig ~/.kube/big.yaml --context perf
  ghostfleet detach --kubeconfig k.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if g.kubeconfig == "" {
				return fmt.Errorf("detach needs --kubeconfig F: the attached cluster to clean (GhostFleet's own fleets go with `ghostfleet clean`)")
			}
			p := g.streams.printer(false)
			defer p.Close()
			res, err := runs.Detach(cmd.Context(), g.env(p, ""), runs.DetachOptions{})
			p.Close()
			if err != nil {
				return err
			}
			return g.finish(res, output, func(w io.Writer) { printDetach(w, res) })
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func printDetach(w io.Writer, r runs.DetachResult) {
	if r.Outcome != runs.Completed {
		fmt.Fprintf(w, "detach %s: %s\n", r.Server, r.Outcome)
		return
	}
	if r.Removed.Count() == 0 && !r.KwokStopped {
		fmt.Fprintf(w, "%s: nothing of GhostFleet's there; nothing removed\n", r.Server)
		return
	}
	fmt.Fprintf(w, "detached %s: removed %s\n", r.Server, r.Removed)
	kinds := make([]string, 0, len(r.Removed))
	for k := range r.Removed {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		names := r.Removed[k]
		shown := names
		if len(shown) > 6 {
			shown = append(slices.Clone(names[:6]), fmt.Sprintf("… %d more", len(names)-6))
		}
		fmt.Fprintf(w, "  %s: %s\n", k, strings.Join(shown, ", "))
	}
	if r.KwokStopped {
		fmt.Fprintln(w, "  local kwok controller stopped")
	}
}

// isTerminalReader reports whether r is a terminal one can ask on.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// ask asks a yes/no question; only "y" or "yes" is yes.
func ask(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// attachedNodes says why the console's `n` cannot scale the target (""
// when it can): an attached cluster needs attach, and its kwok
// controller running here, first.
func attachedNodes(t fleet.Target) string {
	if !t.Attached() {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := runs.CheckAttached(ctx, runs.Env{Target: t}); err != nil {
		return "n: " + err.Error()
	}
	return ""
}
