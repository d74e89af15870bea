package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
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

On an A/B folder (results/ab-<time>, written by ` + "`ghostfleet ab`" + `) it draws
that run's report.html again from its run.json.

With --compare A B it writes results/compare-<time>/ (compare.json and
report.html): every SLO and catalog query's worst value in snapshot A and
in B side by side, with B − A and B / A.`,
		Example: `  ghostfleet snapshot && ghostfleet report
  ghostfleet report results/snapshot-20261129-175547
  ghostfleet report results/ab-20261201-025932
  ghostfleet report --compare results/snapshot-A results/snapshot-B`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var o runs.ReportOptions
			switch {
			case compare:
				o.Compare = append([]string{}, args...) // not nil: a comparison, which Validate counts
			case len(args) > 1:
				return fmt.Errorf("report takes one snapshot folder (or --compare A B); got %d", len(args))
			case len(args) == 1:
				o.Snapshot = args[0]
			}
			res, err := runs.Report(cmd.Context(), runs.Env{Target: g.target(), ResultsDir: g.resultsDir}, o)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.streams.Out, res.File)
			return nil
		},
	}
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two snapshots: report --compare A B")
	return cmd
}
