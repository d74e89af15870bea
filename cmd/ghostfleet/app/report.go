package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/results"
)

func newReportCommand(g *globals) *cobra.Command {
	var resultsDir string
	cmd := &cobra.Command{
		Use:   "report [DIR]",
		Short: "Render a snapshot folder as one self-contained HTML report",
		Long: `Render DIR/report.html from the snapshot in DIR (default: the newest
results/snapshot-* folder): the SLO table, the runs in the window, a chart
per catalog query with the runs' phases shaded and SLO thresholds drawn, and
every run's parameters. The file has its scripts and styles inline and
fetches nothing: open it anywhere, mail it, publish it.`,
		Example: `  ghostfleet snapshot && ghostfleet report
  ghostfleet report results/snapshot-20261129-175547`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			} else {
				var err error
				if dir, err = results.LatestSnapshot(resultsDir); err != nil {
					return err
				}
			}
			out, err := results.Report(dir)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.streams.Out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&resultsDir, "results-dir", results.DefaultRoot, "where the newest snapshot is looked for")
	return cmd
}
