package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// orUnavailable is s, or, when query id's component cannot be read on
// this cluster (a managed control plane hides the scheduler's /metrics),
// s without values saying so and why: neither "no data yet" nor a flat
// zero.
func (s spark) orUnavailable(m poll.MetricsView, id string) spark {
	why, ok := m.NotAvailable(id)
	if !ok {
		return s
	}
	s.values, s.detail, s.captions, s.detailCaptions = nil, "", nil, nil
	s.noLimit = ""
	s.note, s.wrapNote, s.why = metrics.NotAvailable(why), true, why
	return s
}

// noteBody is a chart's body without values: its note, dim. A note
// that must be read whole (not available, and why) is wrapped over the
// pane's h rows of w; where it does not fit, the reason is shortened to
// its head ("scheduler /metrics unreachable"): snapshots and reports
// keep it whole.
func noteBody(th Theme, s spark, w, h int) string {
	note := s.note
	if note == "" {
		note = "no data yet"
	}
	if !s.wrapNote || w < 1 {
		return th.Dim.Render(note)
	}
	lines := wrapWords(note, w)
	if len(lines) > h && s.why != "" {
		head, _, _ := strings.Cut(s.why, ": ")
		lines = wrapWords(metrics.NotAvailable(head), w)
	}
	for i, l := range lines {
		lines[i] = th.Dim.Render(l)
	}
	return strings.Join(lines, "\n")
}

// wrapWords breaks text at spaces into lines of at most w cells; a word
// longer than w is cut across lines.
func wrapWords(text string, w int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		for ansi.StringWidth(word) > w {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			lines, word = append(lines, ansi.Truncate(word, w, "")), ansi.TruncateLeft(word, w, "")
		}
		switch {
		case line == "":
			line = word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
