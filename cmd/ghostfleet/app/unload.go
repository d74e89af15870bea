package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

func newUnloadCommand(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "unload",
		Short: "Remove every GhostFleet workload (its namespaces and their pods)",
		Long: `Delete every namespace labelled ghostfleet.io/workloads=true — the pods,
Deployments and Jobs of load, churn and other runs — and wait until they
are gone. Nodes, the cluster and results/ stay.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			p := g.streams.printer(false)
			defer p.Close()
			res, err := runs.Unload(cmd.Context(), g.env(p, ""), runs.UnloadOptions{})
			p.Close()
			if err != nil {
				return err
			}
			return g.finish(res, output, func(w io.Writer) {
				if res.Outcome == runs.Completed {
					fmt.Fprintf(w, "removed %d workload namespaces\n", res.Namespaces)
				}
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}
