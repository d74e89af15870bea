package app

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Streams are the command's standard streams, injectable for tests.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// printer returns the progress printer for ErrOut.
func (s Streams) printer(verbose bool) *printer { return newPrinter(s.ErrOut, verbose) }

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// isTerminal reports whether w is a terminal (for live progress lines).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
