package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
)

type cleanOptions struct {
	*globals
	verbose bool
}

func newCleanCommand(g *globals) *cobra.Command {
	o := &cleanOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Stop and delete the fleet's cluster and all its processes",
		Long: `Stop every process of GhostFleet's cluster and delete the cluster's
files. results/ and the binary cache are kept, so the next ` + "`ghostfleet up`" + `
takes seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	return cmd
}

func (o *cleanOptions) run(ctx context.Context) error {
	if err := o.ownOnly("clean"); err != nil {
		return err
	}
	out := o.streams.Out
	if !fleet.Exists(ctx, o.name) {
		fmt.Fprintf(out, "nothing to clean: fleet %q does not exist\n", o.name)
		return nil
	}
	p := o.streams.printer(o.verbose)
	defer p.Close()
	if err := fleet.Delete(ctx, o.name, p.Report); err != nil {
		return fmt.Errorf("deleting fleet %q: %w", o.name, err)
	}
	p.Close()
	cache, _ := binaries.DefaultCacheRoot()
	fmt.Fprintf(out, "fleet %q deleted; kept results/ and the binary cache (%s)\n", o.name, cache)
	return nil
}
