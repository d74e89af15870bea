package app

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type probeOptions struct {
	*globals
	runs.ProbeOptions
	output string
}

func newProbeCommand(g *globals) *cobra.Command {
	o := &probeOptions{globals: g, ProbeOptions: runs.NewProbeOptions()}
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Time the machine's speed probe alone, on one CPU or any",
		Long: `Time the speed probe every run records at its start and end (` + "`host`" + ` in
run.json): three fixed works on one thread, timed by that thread's CPU
time and the wall clock. The cache work fits a core's own caches, the
memory work spills into the cache the cores share, the DRAM work chases
through 64 MiB, each load waiting for the last. --trials times each
work; the record holds each work's fastest trial, its median and its
wall median, and the machine's CPU time by state over the probe
(/proc/stat), so what ran beside it shows.

No cluster is needed. Run it on an idle machine for its speed, or
beside a known load held to another CPU to see what that load costs
this one: a wall median at its CPU median means the thread kept its
CPU, and a slower CPU median then means the same work took more of the
CPU's time, the cost every process's CPU seconds carry on a busy
machine. The record goes to results/probe-<time>/.`,
		Example: `  ghostfleet probe
  ghostfleet probe --trials 50 --cpu 0
  taskset -c 1 sh -c 'while :; do :; done' & ghostfleet probe --trials 50 --cpu 0 --note 'a shell loop on CPU 1'; kill $!`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Trials, "trials", o.Trials, "times each work is done (1-1000; a round of the three takes 50-70 ms)")
	fs.IntVar(&o.CPU, "cpu", o.CPU, "logical CPU the probe's thread is held to, one this process may run on (taskset -p $$ lists them); -1 for any")
	fs.StringVar(&o.Note, "note", "", "what runs beside the probe, kept in its record (params.note) to tell runs apart")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *probeOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Probe(ctx, o.env(p, ""), o.ProbeOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	return o.finish(res, o.output, func(w io.Writer) { printProbe(w, res, o.CPU) })
}

// printProbe shows each work's times, done on cpu (-1: any allowed),
// and the machine's CPU time beside.
func printProbe(w io.Writer, r runs.ProbeResult, cpu int) {
	on := "any of CPUs " + r.AllowedCPUs
	if cpu >= 0 {
		on = fmt.Sprintf("CPU %d", cpu)
	}
	fmt.Fprintf(w, "%d trials of each work, on %s\n", r.Probe.Trials, on)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORK\tFASTEST (CPU ms)\tMEDIAN (CPU ms)\tMEDIAN (wall ms)")
	for _, t := range []struct {
		name string
		t    record.ProbeTimes
	}{{"cache", r.Probe.Cache}, {"memory", r.Probe.Memory}, {"dram", r.Probe.DRAM}} {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\n", t.name, t.t.CPUMsMin, t.t.CPUMsMedian, t.t.WallMsMedian)
	}
	tw.Flush()
	c := r.CPUSeconds
	fmt.Fprintf(w, "the machine's %d CPUs meanwhile: user %.2f s, system %.2f s, idle %.2f s, steal %.2f s\n", r.CPUs, c["user"], c["system"], c["idle"], c["steal"])
}
