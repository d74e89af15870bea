package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
)

type podExitOptions struct {
	faultOptions
	spec fault.Spec
}

func newPodExitCommand(g *globals) *cobra.Command {
	o := &podExitOptions{faultOptions: faultOptions{globals: g}, spec: fault.Spec{Kind: fault.PodExit}}
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
	fs.IntVar(&o.spec.ExitCode, "exit-code", 0, "exit code the containers terminate with (0-255)")
	fs.StringVar(&o.spec.Reason, "reason", "", `termination reason, one word (default "Error")`)
	fs.StringVar(&o.spec.Message, "message", "", "termination message")
	fs.StringVar(&o.spec.Container, "container", "", "only this container (default: every container; with --init the first init container)")
	fs.BoolVar(&o.spec.Init, "init", false, "fail the init container: a pre-flight check that did not pass")
	fs.DurationVar(&o.spec.Delay, "delay", 0, "earliest failure, after now")
	fs.DurationVar(&o.spec.Jitter, "jitter", 0, "failures spread uniformly over this long after --delay")
	fs.StringVarP(&o.spec.Namespace, "namespace", "n", "", "pods of this namespace")
	fs.StringVarP(&o.spec.Selector, "selector", "l", "", "pods matching this label selector (in every namespace unless --namespace)")
	o.addFlags(cmd)
	return cmd
}

func (o *podExitOptions) run(ctx context.Context) error {
	if err := o.spec.Validate(); err != nil {
		return err
	}
	env, c, err := o.clients()
	if err != nil {
		return err
	}
	rec, err := fault.Apply(ctx, c, o.spec)
	return o.finish(ctx, env, rec, err, func(w io.Writer, r fault.Result) {
		what := "containers"
		if o.spec.Init {
			what = "init containers"
		}
		fmt.Fprintf(w, "pod-exit on %d pods: %s exit %d between %s and %s\n", r.Pods, what, o.spec.ExitCode,
			r.NotBefore.Local().Format(time.TimeOnly), r.NotAfter.Local().Format(time.TimeOnly))
	})
}
