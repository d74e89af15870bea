package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// clean makes text from the cluster safe to draw: a label, a condition's
// message, a pod's name or a container's reason is anyone's string, and
// an escape sequence in it would move the cursor, recolor or retitle the
// terminal. Escape sequences go; other control characters (newlines and
// tabs included: every field is drawn on one line) become spaces.
func clean(s string) string {
	s = ansi.Strip(s)
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

// isControl is a C0 or C1 control character, or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f }
