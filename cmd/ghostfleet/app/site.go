package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func newSiteCommand(g *globals) *cobra.Command {
	var out, findings string
	cmd := &cobra.Command{
		Use:   "site",
		Short: "Build a static site indexing every run under results/",
		Long: `Write --out/index.html listing every run folder under --results-dir, newest
first, with links to each report and data file, and copy the folders beside
it. --findings (docs/findings.md by default, skipped when that default is
absent) is rendered on the same page beside the run list, its links to run
folders pointing at their copies in the site. The GitHub Pages workflow (.github/workflows/pages.yml) publishes it
whenever results/ changes on main.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("findings") {
				if _, err := os.Stat(findings); errors.Is(err, fs.ErrNotExist) {
					findings = ""
				}
			} else if findings == "" {
				return fmt.Errorf("--findings is empty: give a Markdown file such as docs/findings.md")
			}
			n, err := report.BuildSiteWithFindings(g.resultsDir, out, findings)
			if err != nil {
				return err
			}
			if findings != "" {
				fmt.Fprintf(g.streams.Out, "%d runs indexed in %s/index.html, beside %s\n", n, out, findings)
			} else {
				fmt.Fprintf(g.streams.Out, "%d runs indexed in %s/index.html\n", n, out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "_site", "where the site is written")
	cmd.Flags().StringVar(&findings, "findings", "docs/findings.md", "Markdown findings shown beside the run index")
	return cmd
}
