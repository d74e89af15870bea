package app

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// printer renders progress events. On a terminal the open step is one
// line redrawn every 250ms with its elapsed time; elsewhere (CI logs) it
// prints the step, a heartbeat line every 30s, and the result, so a
// several-minute build never looks hung in either.
type printer struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	verbose bool

	step     string
	message  string
	started  time.Time
	estimate time.Duration
	done     int
	total    int
	lastBeat time.Time

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

const heartbeat = 30 * time.Second

func newPrinter(w io.Writer, verbose bool) *printer {
	p := &printer{w: w, tty: isTerminal(w), verbose: verbose, stop: make(chan struct{})}
	p.wg.Add(1)
	go p.tick()
	return p
}

// Close stops redrawing; it is safe to call more than once, so commands
// can close before printing their result and again on return.
func (p *printer) Close() {
	p.closeOnce.Do(func() {
		close(p.stop)
		p.wg.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.clearLine()
	})
}

func (p *printer) tick() {
	defer p.wg.Done()
	interval := 250 * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.step != "" {
				if p.tty {
					p.redraw()
				} else if time.Since(p.lastBeat) >= heartbeat {
					p.lastBeat = time.Now()
					fmt.Fprintf(p.w, "  … still %s\n", p.status())
				}
			}
			p.mu.Unlock()
		}
	}
}

// Report handles one event; it is a progress.Func.
func (p *printer) Report(e progress.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case progress.Start:
		p.clearLine()
		p.step, p.message, p.started, p.estimate = e.Step, e.Message, time.Now(), e.Estimate
		p.done, p.total, p.lastBeat = 0, 0, time.Now()
		if p.tty {
			p.redraw()
		} else {
			fmt.Fprintf(p.w, "• %s%s\n", e.Message, p.estimateText())
		}
	case progress.Update:
		if e.Step == p.step {
			p.done, p.total = e.Done, e.Total
		}
	case progress.Finish:
		p.clearLine()
		counts := ""
		if e.Step == p.step && p.total > 0 {
			counts = fmt.Sprintf(", %d/%d", p.done, p.total)
		}
		fmt.Fprintf(p.w, "✓ %s (%s%s)\n", e.Message, round(e.Elapsed), counts)
		if e.Step == p.step {
			p.step = ""
		}
	case progress.Info:
		if !p.verbose && strings.HasPrefix(e.Message, "kwokctl: ") {
			return
		}
		p.clearLine()
		fmt.Fprintf(p.w, "  %s\n", e.Message)
		p.redraw()
	case progress.Warn:
		p.clearLine()
		fmt.Fprintf(p.w, "! %s\n", e.Message)
		p.redraw()
	}
}

func (p *printer) status() string {
	s := fmt.Sprintf("%s: %s elapsed", p.message, round(time.Since(p.started)))
	if p.total > 0 {
		s += fmt.Sprintf(", %d/%d", p.done, p.total)
	}
	return s + p.estimateText()
}

func (p *printer) estimateText() string {
	if p.estimate <= 0 {
		return ""
	}
	return fmt.Sprintf(" (typically ~%s)", round(p.estimate))
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func (p *printer) redraw() {
	if !p.tty || p.step == "" {
		return
	}
	frame := spinner[int(time.Since(p.started)/(100*time.Millisecond))%len(spinner)]
	fmt.Fprintf(p.w, "\r\x1b[K%c %s", frame, p.status())
}

func (p *printer) clearLine() {
	if p.tty && p.step != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Millisecond)
	}
}
