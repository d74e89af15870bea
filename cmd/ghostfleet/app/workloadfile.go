package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func newWorkloadCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Write or check a workload file (jobs and their arrival times) for ghostfleet ab",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newWorkloadGenCommand(g), newWorkloadCheckCommand(g))
	return cmd
}

type workloadGenOptions struct {
	*globals
	workload.GenerateOptions
	pods string
	out  string
}

func newWorkloadGenCommand(g *globals) *cobra.Command {
	o := &workloadGenOptions{globals: g, GenerateOptions: workload.GenerateOptions{Seed: 1, Jobs: 20, GPUsPerPod: 8, Gap: 2 * time.Second}, pods: "1,2,4,8"}
	cmd := &cobra.Command{
		Use:   "gen --seed N --jobs N --out FILE",
		Short: "Write a seeded workload file",
		Long: `Write a workload file of --jobs training jobs: arrivals a Poisson process
with a mean gap of --gap (the first at 0; --gap 0: all at once), each job's
pod count drawn evenly from --pods, each pod asking for --gpus-per-pod GPUs
(--claim as train's). The same flags always write the same file.

The file is YAML: version: 1 and one job a line, {name, at, pods,
gpusPerPod, claim}; edit it by hand, ` + "`ghostfleet workload check`" + ` reads it back.`,
		Example: `  ghostfleet workload gen --seed 7 --jobs 20 --pods 2,4,8 --gap 3s --out jobs.yaml
  ghostfleet workload gen --seed 1 --jobs 6 --pods 1,2 --gpus-per-pod 4 --out small.yaml`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return o.run() },
	}
	fs := cmd.Flags()
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "jobs")
	fs.StringVar(&o.pods, "pods", o.pods, "pod counts a job's size is drawn from, comma-separated")
	fs.IntVar(&o.GPUsPerPod, "gpus-per-pod", o.GPUsPerPod, "GPUs per pod")
	fs.DurationVar(&o.Gap, "gap", o.Gap, "mean time between arrivals (0: all at once)")
	fs.StringVar(&o.Claim, "claim", "", "how pods ask for GPUs: "+strings.Join(workload.ClaimModes, ", ")+" (default: as the fleet offers them)")
	fs.StringVar(&o.out, "out", "", "the file to write (\"-\": standard output)")
	return cmd
}

func (o *workloadGenOptions) run() error {
	if o.out == "" {
		return fmt.Errorf("--out is missing: the workload file to write (\"-\": standard output)")
	}
	o.Pods = nil
	for _, s := range strings.Split(o.pods, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--pods %q: %q is not a whole number: give pod counts like 1,2,4", o.pods, s)
		}
		o.Pods = append(o.Pods, n)
	}
	a, err := workload.Generate(o.GenerateOptions)
	if err != nil {
		return err
	}
	if o.out == "-" {
		_, err := o.streams.Out.Write(a.Marshal())
		return err
	}
	if err := workload.WriteArrivals(o.out, a); err != nil {
		return err
	}
	pods, gpus := a.Pods()
	fmt.Fprintf(o.streams.Out, "wrote %s: %d jobs, %d pods, %d GPUs, arriving over %s\n", o.out, len(a.Jobs), pods, gpus, a.Span())
	return nil
}

func newWorkloadCheckCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "check FILE",
		Short:   "Check a workload file and say what it holds",
		Example: `  ghostfleet workload check jobs.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			a, err := workload.ReadArrivals(args[0])
			if err != nil {
				return err
			}
			pods, gpus := a.Pods()
			fmt.Fprintf(g.streams.Out, "%s: %d jobs, %d pods, %d GPUs, arriving over %s\n", args[0], len(a.Jobs), pods, gpus, a.Span())
			return nil
		},
	}
}
