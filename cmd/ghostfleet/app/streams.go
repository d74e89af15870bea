package app

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/tui"
)

// Streams are the command's standard streams, injectable for tests. When
// the console runs a command, its progress and live controls go to the
// console too.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Progress, when set, receives every progress event as well.
	Progress progress.Func
	// Live, when set, receives a running churn so its rate can change.
	Live func(tui.RateControl)
}

// printer returns the progress printer for ErrOut, forwarding to Progress.
func (s Streams) printer(verbose bool) *printer {
	p := newPrinter(s.ErrOut, verbose)
	p.forward = s.Progress
	return p
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// isTerminal reports whether w is a terminal (for live progress lines).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
