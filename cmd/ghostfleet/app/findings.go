package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/findings"
)

func newFindingsCommand(g *globals) *cobra.Command {
	var root string
	var check bool
	cmd := &cobra.Command{
		Use:   "findings [FILE]",
		Short: "Regenerate the figure tables of docs/findings.md from the committed runs",
		Long: `Every figure table in FILE (default docs/findings.md) is a block that
names its run folders under results/ and, per row, where in each run's JSON
the figure is; this command makes each table again from those files: every
run's value (linked to its folder), the median (and the mean, for a block
with "mean: true", where parts add up to a whole), and the spread, marked
noisy when a run lands more than 20 % from the median. Text outside the
blocks is left as it is.

With --check nothing is written: it exits 1 when FILE differs from what
its runs give (CI's test does the same).`,
		Example: "  ghostfleet findings\n  ghostfleet findings --check",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := filepath.Join(root, "docs", "findings.md")
			if len(args) == 1 {
				file = args[0]
			}
			doc, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			docDir, err := filepath.Rel(root, filepath.Dir(file))
			if err != nil {
				return fmt.Errorf("%s is not inside --root %s: %w", file, root, err)
			}
			out, err := findings.Generate(doc, root, docDir)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			switch {
			case bytes.Equal(out, doc):
				fmt.Fprintf(g.streams.ErrOut, "%s: every table matches its runs\n", file)
				return nil
			case check:
				return fmt.Errorf("%s differs from what its runs give: run `ghostfleet findings` and commit the result", file)
			}
			if err := os.WriteFile(file, out, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(g.streams.ErrOut, "%s: tables regenerated from their runs\n", file)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", ".", "the checkout the run paths are relative to")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 when the file differs from what its runs give")
	return cmd
}
