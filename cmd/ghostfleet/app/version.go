package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
)

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the component versions GhostFleet pins",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := binaries.Pinned()
			fmt.Fprintf(g.streams.Out, "kubernetes %s\netcd %s\nkwok %s\nprometheus %s\n", v.Kubernetes, v.Etcd, v.Kwok, v.Prometheus)
			return nil
		},
	}
}
