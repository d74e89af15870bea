package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type podExitOptions struct {
	faultOptions
	runs.FaultOptions
}

func newPodExitCommand(g *globals) *cobra.Command {
	o := &podExitOptions{faultOptions: faultOptions{globals: g}, FaultOptions: runs.NewFaultOptions(fault.PodExit)}
	cmd := &cobra.Command{
		Use:   "pod-exit --exit-code C (--namespace NS | --selector SEL)",
		Short: "Make matching pods' containers terminate with an exit code after a delay plus jitter",
		Long: `Mark the pods of --namespace and/or --selector that run (or are about to)
on GhostFleet's fake nodes so that kwok terminates their containers — or,
with --container, that one — with --exit-code, --reason and --message at a
time of its own choosing between --delay and --delay plus --jitter after
now. Each pod gets its own time, uniformly spread over the jitter. The pod
then fails (exit code 0: succeeds); a Job's controller replaces it.

An NCCL all-reduce test that fails exits with code 3. --init fails the
pods' init container instead (the first, or --container): a pre-flight
check that did not pass, so the app containers never start; the pods must
have an init container (` + "`ghostfleet load --preflight`" + ` starts pods with one).

` + "`ghostfleet fault clear pod-exit`" + ` cancels marked pods that have not failed yet.`,
		Example: `  ghostfleet fault pod-exit --exit-code 3 --reason NCCLTestFailed --message "all_reduce_perf: NCCL WARN NET/IB timeout" --namespace gf-load
  ghostfleet fault pod-exit --exit-code 137 --reason OOMKilled --delay 1m --jitter 30s --selector app=trainer
  ghostfleet fault pod-exit --init --exit-code 1 --reason PreflightFailed --namespace gf-load`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("exit-code") {
				return fmt.Errorf("--exit-code is required: the code the containers exit with, 0-255 (NCCL test failure: 3)")
			}
			return o.run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.ExitCode, "exit-code", 0, "exit code the containers terminate with (0-255)")
	fs.StringVar(&o.Reason, "reason", "", `termination reason, one word (default "Error")`)
	fs.StringVar(&o.Message, "message", "", "termination message")
	fs.StringVar(&o.Container, "container", "", "only this container (default: every container; with --init the first init container)")
	fs.BoolVar(&o.Init, "init", false, "fail the init container: a pre-flight check that did not pass")
	fs.DurationVar(&o.Delay, "delay", 0, "earliest failure, after now")
	fs.DurationVar(&o.Jitter, "jitter", 0, "failures spread uniformly over this long after --delay")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "pods of this namespace")
	fs.StringVarP(&o.Selector, "selector", "l", "", "pods matching this label selector (in every namespace unless --namespace)")
	o.addFlags(cmd)
	return cmd
}

func (o *podExitOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Fault(ctx, o.env(p, ""), o.FaultOptions)
	p.Close()
	return o.finishFault(res, err, func(w io.Writer) { printPodExit(w, res) })
}

func printPodExit(w io.Writer, r runs.FaultResult) {
	what := "containers"
	if r.Spec.Init {
		what = "init containers"
	}
	var from, to string
	if r.NotBefore != nil && r.NotAfter != nil {
		from, to = r.NotBefore.Local().Format(time.TimeOnly), r.NotAfter.Local().Format(time.TimeOnly)
	}
	fmt.Fprintf(w, "pod-exit on %d pods: %s exit %d between %s and %s\n", r.Pods, what, r.Spec.ExitCode, from, to)
}
