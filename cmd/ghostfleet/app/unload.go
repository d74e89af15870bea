package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func newUnloadCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unload",
		Short: "Remove every GhostFleet workload (its namespaces and their pods)",
		Long: `Delete every namespace labelled ghostfleet.io/workloads=true — the pods,
Deployments and Jobs of load, churn and other runs — and wait until they
are gone. Nodes, the cluster and results/ stay.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := g.target().Clientset(true)
			if err != nil {
				return err
			}
			n, err := workload.DeleteAll(cmd.Context(), cs)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "removed %d workload namespaces\n", n)
			return nil
		},
	}
}
