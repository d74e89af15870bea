package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func newReportCommand(g *globals) *cobra.Command {
	var compare bool
	cmd := &cobra.Command{
		Use:   "report [DIR] | report --compare A B",
		Short: "Render a snapshot folder as one self-contained HTML report",
		Long: `Render DIR/report.html from the snapshot in DIR (default: the newest
results/snapshot-* folder): the SLO table, the runs in the window, a chart
per catalog query with the runs' phases shaded and SLO thresholds drawn, and
every run's parameters. The file has its scripts and styles inline and
fetches nothing: open it anywhere, mail it, publish it.

With --compare A B it writes results/compare-<time>/ (compare.json and
report.html): every SLO and catalog query's worst value in snapshot A and
in B side by side, with B − A and B / A.`,
		Example: `  ghostfleet snapshot && ghostfleet report
  ghostfleet report results/snapshot-20261129-175547
  ghostfleet report --compare results/snapshot-A results/snapshot-B`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if compare {
				if len(args) != 2 {
					return fmt.Errorf("--compare takes two snapshot folders, A and B; got %d", len(args))
				}
				out, err := report.Compare(g.resultsDir, args[0], args[1])
				if err != nil {
					return err
				}
				fmt.Fprintln(g.streams.Out, out)
				return nil
			}
			if len(args) > 1 {
				return fmt.Errorf("report takes one snapshot folder (or --compare A B); got %d", len(args))
			}
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			} else {
				var err error
				if dir, err = report.LatestSnapshot(g.resultsDir); err != nil {
					return err
				}
			}
			out, err := report.Report(dir)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.streams.Out, out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two snapshots: report --compare A B")
	return cmd
}
