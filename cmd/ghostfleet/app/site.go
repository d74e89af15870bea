package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func newSiteCommand(g *globals) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "site",
		Short: "Build a static site indexing every run under results/",
		Long: `Write --out/index.html listing every run folder under --results-dir, newest
first, with links to each report and data file, and copy the folders beside
it. The GitHub Pages workflow (.github/workflows/pages.yml) publishes it
whenever results/ changes on main.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := report.BuildSite(g.resultsDir, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "%d runs indexed in %s/index.html\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "_site", "where the site is written")
	return cmd
}
