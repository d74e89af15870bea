package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/guptarohit/asciigraph"
	"github.com/muesli/termenv"
)

// levels is how many shades the fleet map uses for GPU allocation: 0
// (idle) through 8 GPUs of an 8-GPU node; other node sizes scale to it.
const levels = 9

// Theme holds every style of the console. The colored theme is high
// contrast for projectors (bright on the terminal's own background); the
// plain theme, chosen when NO_COLOR is set, relies on glyphs alone.
type Theme struct {
	Color bool

	Title, Header, Footer, Key, Dim, Bold, Good, Warn, Bad lipgloss.Style
	Pane, PaneTitle                                        lipgloss.Style

	// BarFull and BarEmpty color the progress bars (bubbles/progress,
	// which colors through termenv): Profile is lipgloss's when colored,
	// Ascii when plain, so the bars follow the rest of the theme.
	BarFull, BarEmpty string
	Profile           termenv.Profile

	// Cells are the fleet map's styles by allocation level; NotReady and
	// Faulted mark nodes whose state matters more than their load.
	Cells             [levels]lipgloss.Style
	NotReady, Faulted lipgloss.Style

	// Graph colors the sparklines' series and limit line (none when plain).
	Graph []asciigraph.Option
}

// Glyphs carry the allocation level without color: the map stays readable
// in NO_COLOR terminals and screenshots in black and white.
var (
	cellGlyphs    = [levels]string{"·", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}
	notReadyGlyph = "✗"
	faultedGlyph  = "!"
)

// NewTheme returns the colored theme, or the plain one when color is false.
func NewTheme(color bool) Theme {
	s := lipgloss.NewStyle
	t := Theme{
		Color:     color,
		Title:     s().Bold(true),
		Header:    s().Bold(true),
		Footer:    s(),
		Key:       s().Bold(true),
		Dim:       s(),
		Bold:      s().Bold(true),
		Good:      s().Bold(true),
		Warn:      s().Bold(true),
		Bad:       s().Bold(true),
		Pane:      s().Border(lipgloss.RoundedBorder()).Padding(0, 1),
		PaneTitle: s().Bold(true),
		Profile:   termenv.Ascii,
		NotReady:  s().Bold(true),
		Faulted:   s().Bold(true),
	}
	for i := range t.Cells {
		t.Cells[i] = s()
	}
	if !color {
		return t
	}
	// ANSI 256 colors degrade to the 16 basic ones on older terminals.
	c := func(s string) lipgloss.Color { return lipgloss.Color(s) }
	t.Title = t.Title.Foreground(c("16")).Background(c("45")).Padding(0, 1)
	t.Header = t.Header.Foreground(c("231"))
	t.Footer = t.Footer.Foreground(c("250"))
	t.Key = t.Key.Foreground(c("45"))
	t.Dim = t.Dim.Foreground(c("244"))
	t.Good = t.Good.Foreground(c("46"))
	t.Warn = t.Warn.Foreground(c("220"))
	t.Bad = t.Bad.Foreground(c("196"))
	t.Pane = t.Pane.BorderForeground(c("39"))
	t.PaneTitle = t.PaneTitle.Foreground(c("45"))
	t.BarFull, t.BarEmpty, t.Profile = "46", "238", lipgloss.ColorProfile()
	for i, col := range []string{"240", "22", "28", "34", "40", "46", "118", "190", "226"} {
		t.Cells[i] = s().Foreground(c(col))
	}
	t.NotReady = t.NotReady.Foreground(c("196"))
	t.Faulted = t.Faulted.Foreground(c("201"))
	t.Graph = []asciigraph.Option{asciigraph.SeriesColors(asciigraph.Aqua, asciigraph.Red), asciigraph.AxisColor(asciigraph.Gray), asciigraph.LabelColor(asciigraph.Silver)}
	return t
}
