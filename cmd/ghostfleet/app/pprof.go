package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type pprofOptions struct {
	*globals
	runs.PprofOptions
	output string
}

func newPprofCommand(g *globals) *cobra.Command {
	o := &pprofOptions{globals: g, PprofOptions: runs.NewPprofOptions()}
	cmd := &cobra.Command{
		Use:   "pprof",
		Short: "Capture a CPU profile of every control-plane component at once",
		Long: `Ask kube-apiserver, etcd, kube-scheduler, kube-controller-manager, the
kwok controller and Prometheus for a CPU profile over --duration, all at
once (Go's /debug/pprof/profile, through the addresses and client
certificates kwokctl gave Prometheus), and write them to
results/pprof-<time>/<component>.pprof with run.json listing, per
component, the CPU seconds sampled, the cores that makes over the
capture, and the functions with the most CPU time of their own.

It also reads kube-scheduler's count of pods bound just before and just
after (scheduler_schedule_attempts_total{result="scheduled"} on its
/metrics), and gives each component's CPU per pod bound meanwhile; and,
for kube-scheduler, the CPU time spent with each scheduling plugin on
the stack (noderesources, dynamicresources, …, what the plugin calls
included), so two captures of one run, early and late, show which
plugin's cost per pod grew.

Start it while a load or churn runs to see where that run's CPU goes;
` + "`go tool pprof -top FILE`" + ` or ` + "`go tool pprof -http 127.0.0.1:0 FILE`" + ` read the
files further. etcd serves profiles only when started with --enable-pprof
(GhostFleet's fleets are); a component without profiles is listed with
its error and the others are still captured.`,
		Example: `  ghostfleet load 8000 1 & ghostfleet pprof --duration 30s
  ghostfleet pprof --top 25 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.Duration, "duration", o.Duration, "how long the profiles sample")
	fs.IntVar(&o.Top, "top", o.Top, "functions listed per component")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *pprofOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Pprof(ctx, o.env(p, ""), o.PprofOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	return o.finish(res, o.output, func(w io.Writer) { printPprof(w, res, min(o.Top, 5)) })
}

// printPprof shows the pods bound meanwhile, each component's cores (and
// CPU per pod) and its top n functions, and the scheduler's n busiest
// plugins.
func printPprof(w io.Writer, r runs.PprofResult, n int) {
	if r.PodsUncounted != "" {
		fmt.Fprintf(w, "pods bound during the capture: not counted (%s)\n", r.PodsUncounted)
	} else {
		fmt.Fprintf(w, "pods bound during the capture: %.0f\n", r.PodsScheduled)
	}
	fmt.Fprintf(w, "CPU over %.0fs, busiest component first:\n", r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Components {
		if c.Error != "" {
			fmt.Fprintf(tw, "  %s\t—\t%s\n", c.Component, c.Error)
			continue
		}
		perPod := ""
		if c.CPUMsPerPod > 0 {
			perPod = fmt.Sprintf("%.1f ms per pod", c.CPUMsPerPod)
		}
		fmt.Fprintf(tw, "  %s\t%.2f cores\t%.1f CPU-s sampled\t%s\t%s\n", c.Component, c.Cores, c.CPUSeconds, perPod, c.File)
		for _, f := range c.Top[:min(n, len(c.Top))] {
			fmt.Fprintf(tw, "  \t%4.1f%%\t%.2fs\t%s\n", 100*f.Share, f.CPUSeconds, f.Function)
		}
		plugins := slices.SortedFunc(maps.Keys(c.SchedulerPlugins), func(a, b string) int {
			return cmp.Compare(c.SchedulerPlugins[b], c.SchedulerPlugins[a])
		})
		for _, p := range plugins[:min(n, len(plugins))] {
			fmt.Fprintf(tw, "  \tplugin\t%.2fs\t%s (with what it calls)\n", c.SchedulerPlugins[p], p)
		}
	}
	tw.Flush()
}
