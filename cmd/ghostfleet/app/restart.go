package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

type restartOptions struct {
	*globals
	runs.RestartOptions
	output string
}

func newRestartCommand(g *globals) *cobra.Command {
	o := &restartOptions{globals: g, RestartOptions: runs.NewRestartOptions()}
	cmd := &cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Bring a control-plane component back (or restart it) through kwokctl",
		Long: `Stop COMPONENT of GhostFleet's fleet if it still runs, start it again
with the same command line kwokctl gave it at up (kwokctl's own
per-component stop and start), and wait until it answers: its process
runs, and kube-apiserver's /readyz is ok. COMPONENT is one of etcd,
kube-apiserver, kube-scheduler, kube-controller-manager, kwok-controller,
prometheus (` + "`ghostfleet status`" + ` lists them and whether each runs).

For chaos experiments: kill a component (kill -9 $(cat
~/.kwok/clusters/NAME/pids/COMPONENT.pid)) while a churn runs, then
restart it; hack/chaos.sh does that for each component in turn. The
restart is recorded as a run (results/restart-<time>/run.json), so
snapshots and reports show when the outage ended.`,
		Example: `  ghostfleet restart kube-apiserver
  ghostfleet restart prometheus -o json`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			names, _ := fleet.ComponentNames(cmd.Context(), g.name)
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting for the component to answer after this long")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *restartOptions) run(ctx context.Context, component string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	o.Component = component
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.Restart(ctx, o.env(p, ""), o.RestartOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { fmt.Fprintln(w, res.Summary()) }); ferr != nil {
		return ferr
	}
	return err
}
