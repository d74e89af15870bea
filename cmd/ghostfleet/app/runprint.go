package app

import (
	"strings"
	"text/tabwriter"
)

// tabulate aligns tab-separated rows into columns (two spaces apart) and
// returns them as lines, so that a caller can print other lines between
// them without breaking the columns.
func tabulate(rows []string) []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		tw.Write([]byte(r + "\n"))
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(rows) == 0 {
		return nil
	}
	return lines
}
