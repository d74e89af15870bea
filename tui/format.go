package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// duration formats d the way kubectl's AGE column does.
func duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// thousands formats n with thousands separators, as the seed's tables do.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len(s))) }

// wrapUpTo indents s by two and wraps it into at most most lines of w,
// words first, a path or a long word broken where it must; a text cut
// short ends in "…", so a verdict never reads as whole when it is not.
func wrapUpTo(style lipgloss.Style, s string, w, most int) []string {
	lines := strings.Split(ansi.Wrap(s, max(w-2, 1), ""), "\n")
	if len(lines) > most {
		lines = lines[:most]
		last := strings.TrimRight(lines[most-1], " ")
		lines[most-1] = ansi.Truncate(last, max(w-3, 1), "") + "…"
	}
	for i, l := range lines {
		lines[i] = "  " + style.Render(strings.TrimRight(l, " "))
	}
	return lines
}
