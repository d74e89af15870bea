package app

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ghostfleet/ghostfleet/tui"
	"github.com/ghostfleet/ghostfleet/tui/cast"
)

// snapshotFrame is the file a snapshot's folder gets the console's frame
// in, as text: what slides show next to the snapshot's figures.
const snapshotFrame = "frame.txt"

// keepFrame makes an action's outcome ask the console to save its frame
// in the run's folder (the snapshot key's).
func keepFrame(run func(context.Context, []string, tui.Control) (tui.Outcome, error)) func(context.Context, []string, tui.Control) (tui.Outcome, error) {
	return func(ctx context.Context, v []string, ctl tui.Control) (tui.Outcome, error) {
		out, err := run(ctx, v, ctl)
		if out.Dir != "" {
			out.Frame = snapshotFrame
		}
		return out, err
	}
}

// output is where the console draws: the terminal, or with --record the
// terminal through a cast writer. done flushes and closes the cast; a
// SIGTERM flushes it at once too, in case the runs take long to stop.
func (o *consoleOptions) output(title string) (out io.Writer, done func() error, err error) {
	if o.record == "" {
		return o.streams.Out, func() error { return nil }, nil
	}
	c, err := cast.Create(o.record, o.streams.Out, 120, 40, title)
	if err != nil {
		return nil, nil, err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	stop := make(chan struct{})
	go func() {
		select {
		case <-sig:
			c.Flush()
		case <-stop:
		}
	}()
	return c, func() error {
		signal.Stop(sig)
		close(stop)
		return c.Close()
	}, nil
}
