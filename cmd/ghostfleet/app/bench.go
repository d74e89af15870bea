package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/results"
)

func newBenchCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that compare side by side in one run",
	}
	cmd.AddCommand(newBenchNodesCommand(g))
	return cmd
}

type benchNodesOptions struct {
	*globals
	bins       binaryFlags
	nodes      int
	rounds     int
	gpuProfile string
	resultsDir string
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
	fs.StringVar(&o.resultsDir, "results-dir", results.DefaultRoot, "where the run folder is written")
	o.bins.add(fs)
	return cmd
}

func (o *benchNodesOptions) run(ctx context.Context) error {
	if err := o.ownOnly("bench nodes"); err != nil {
		return err
	}
	if !o.globals.nameSet {
		o.name = "ghostfleet-bench"
	}
	if o.nodes < 1 || o.nodes > fleet.MaxNodes {
		return fmt.Errorf("--nodes %d is out of range: allowed are 1-%d", o.nodes, fleet.MaxNodes)
	}
	if o.rounds < 1 || o.rounds > 10 {
		return fmt.Errorf("--rounds %d is out of range: allowed are 1-10", o.rounds)
	}
	gpu, err := fleet.LookupGPUProfile(o.gpuProfile)
	if err != nil {
		return err
	}
	p := newPrinter(o.streams.ErrOut, false)
	defer p.Close()
	r, err := o.bins.resolver(p.Report)
	if err != nil {
		return err
	}
	set, err := r.Resolve(ctx)
	if err != nil {
		return err
	}
	res, err := fleet.BenchNodes(ctx, fleet.NodeBenchOptions{
		Cluster: o.name, Nodes: o.nodes, Rounds: o.rounds, Profile: gpu,
		Binaries: set, Versions: r.Versions, Report: p.Report,
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
	dir, err := results.NewRunDir(o.resultsDir, "bench-nodes", res.Started)
	if err != nil {
		return err
	}
	if err := results.WriteJSON(dir, "bench.json", res); err != nil {
		return err
	}
	fmt.Fprintf(w, "written to %s\n", dir)
	return nil
}
