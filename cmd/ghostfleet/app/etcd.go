package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

func newEtcdCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Look after the fleet's etcd: recover from its NOSPACE alarm",
		Long: `Commands for the fleet's etcd. When its database reaches
--quota-backend-bytes (a profile's etcd.quotaBackendBytes; kwokctl's
default is 8 GiB) etcd raises the NOSPACE alarm and refuses every write
until the alarm is disarmed: ` + "`ghostfleet status`" + ` says so and exits 1, the
console's SLO line shows it, and runs whose writes it refused say so in
their record.`,
		Example: `  ghostfleet status            # etcd: NOSPACE alarm — writes refused; …
  ghostfleet unload            # delete what filled it, if it is GhostFleet's
  ghostfleet etcd recover`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newEtcdRecoverCommand(g))
	return cmd
}

type etcdRecoverOptions struct {
	*globals
	runs.EtcdRecoverOptions
	output string
}

func newEtcdRecoverCommand(g *globals) *cobra.Command {
	o := &etcdRecoverOptions{globals: g, EtcdRecoverOptions: runs.NewEtcdRecoverOptions()}
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Compact, defragment and disarm etcd's alarm (NOSPACE), reporting its size before and after",
		Long: `Bring the fleet's etcd back from an alarm the way etcd's maintenance
guide does: compact its history to the current revision, defragment the
database (giving the freed pages back, so that the file shrinks below the
quota), then disarm the alarm so that etcd takes writes again. It reports
the database's size before and after, and is recorded as a run
(results/etcd-recover-<time>/run.json).

Compaction and defragmentation free only history and free pages: when the
live data itself nearly fills the quota the alarm comes back at the next
writes, and it says so. Delete what filled it before the recovery
(deleting an object such as a ConfigMap writes nothing, so it works under
NOSPACE) or after it (` + "`ghostfleet unload`" + ` marks namespaces deleted, a write),
then run it again. On a fleet whose etcd has no alarm it says so and
changes nothing. Ctrl-C stops it between steps; each is safe to run again.`,
		Example: `  ghostfleet etcd recover
  ghostfleet etcd recover -o json | jq '.before.dbSize, .after.dbSize'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *etcdRecoverOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if err := o.ownOnly("etcd recover"); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.EtcdRecover(ctx, o.env(p, ""), o.EtcdRecoverOptions)
	p.Close()
	if res.Outcome == "" {
		return err
	}
	ferr := o.finish(res, o.output, func(w io.Writer) {
		fmt.Fprintln(w, res.Summary())
	})
	if ferr != nil {
		return ferr
	}
	return err
}
