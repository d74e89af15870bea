package report

import "strings"

// inert drops the control characters (ESC, BEL, …; not tab or newline)
// from a rendered page. html/template escapes markup but leaves them in
// text, where a cluster's names or messages could carry terminal escapes
// to whoever `cat`s the file; inside the charts' <script> JSON they are
// already written as \u001b and are not touched.
func inert(page string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, page)
}
