package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// allocation is the pane of GPU, node and pod counts. It changes with the
// data only, so it is drawn once per new view, not per clock tick.
type allocation struct {
	noKeys
	*shared
	size
	fleet   watch.FleetView
	gpuUtil []float64
	bar     progress.Model
	out     string // the memo; "" when stale
}

func newAllocation(c *shared) *allocation {
	return &allocation{shared: c, bar: newBar(c.th, false)}
}

func (p *allocation) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case fleetMsg:
		p.fleet, p.out = watch.FleetView(msg), ""
	case metricsMsg:
		p.gpuUtil, p.out = msg.GPUUtil, ""
	}
	return nil
}

func (p *allocation) SetSize(w, h int) {
	if p.resized(w, h) {
		p.bar.Width, p.out = w-4, ""
	}
}

func (p *allocation) View() string {
	if p.out == "" {
		p.out = box(p.th, "Allocation", p.content(), p.w, p.h)
	}
	return p.out
}

func (p *allocation) content() string {
	th, v := p.th, p.fleet
	frac := 0.0
	if v.GPUs > 0 {
		frac = float64(v.GPUsUsed) / float64(v.GPUs)
	}
	util := ""
	if u, ok := poll.Last(p.gpuUtil); ok {
		util = th.Dim.Render(fmt.Sprintf(" · util %.0f%%", u))
	}
	lines := []string{
		fmt.Sprintf("%s %s / %s  %s%s", th.Bold.Render("GPUs"), thousands(v.GPUsUsed), thousands(v.GPUs), th.Bold.Render(fmt.Sprintf("%.0f%%", 100*frac)), util),
		p.bar.ViewAs(frac),
		fmt.Sprintf("%s %s ready%s%s", th.Bold.Render("Nodes"), thousands(int64(v.Ready)),
			warnIf(th, v.NotReady, " · %s NotReady"), warnIf(th, v.Faulted, " · %s faulted")),
		p.podsLine(p.w - 4),
	}
	if p.h-2 > len(lines) {
		lines = append(lines, p.pendingLine())
	}
	if p.h-3 > len(lines) { // under the title
		lines = append(lines, resourcesLine(th, v, p.w-4))
	}
	return strings.Join(lines, "\n")
}

// allocationRows is the allocation pane's height in a console h high: a
// line more for the pending pods' breakdown when there is room, and one
// more for CPU and memory used against requested.
func allocationRows(h int) int {
	if h >= 40 {
		return 9
	}
	if h >= 32 {
		return 8
	}
	return 7
}

// pendingLine splits the pending pods: not yet on a node (the scheduler's
// queue) and bound but not yet running.
func (p *allocation) pendingLine() string {
	v := p.fleet
	line := fmt.Sprintf("%s %s", p.th.Bold.Render("Pending"), thousands(int64(v.Pending)))
	if v.Pending == 0 {
		return line
	}
	sched := fmt.Sprintf(" · %s to schedule", thousands(int64(v.Unscheduled)))
	start := fmt.Sprintf(" · %s starting", thousands(int64(v.Pending-v.Unscheduled)))
	for _, c := range []string{line + sched + start, line + sched} {
		if ansi.StringWidth(c) <= p.w-4 {
			return c
		}
	}
	return line
}

// podsLine is the pods' phases in w cells: the most detailed wording
// that fits whole, so a cut never leaves a word that reads as another
// ("unsched…" read as unschedulable when it meant not yet bound).
// Failed pods matter more than pending or finished ones: they come
// first.
func (p *allocation) podsLine(w int) string {
	th, v := p.th, p.fleet
	pods := th.Bold.Render("Pods")
	running, pending := thousands(int64(v.Running)), thousands(int64(v.Pending))
	failed := warnIf(th, v.Failed, " · %s failed")
	unbound := parenIf(v.Unscheduled, " (%s to schedule)")
	if p.h-2 > 4 { // the pending line below says it
		unbound = ""
	}
	done := parenIf(v.Succeeded, " · %s done")
	candidates := []string{
		fmt.Sprintf("%s %s running%s · %s pending%s%s", pods, running, failed, pending, unbound, done),
		fmt.Sprintf("%s %s running%s · %s pending%s", pods, running, failed, pending, unbound),
		fmt.Sprintf("%s %s running%s · %s pending%s", pods, running, failed, pending, done),
		fmt.Sprintf("%s %s running%s · %s pending", pods, running, failed, pending),
	}
	for _, c := range candidates {
		if ansi.StringWidth(c) <= w {
			return c
		}
	}
	return fmt.Sprintf("%s %s run%s · %s pend", pods, running, failed, pending)
}

// newBar is a static progress bar in the theme's colors (drawn with
// ViewAs: no animation, so no redraws of its own), with or without the
// percentage after it.
func newBar(th Theme, percent bool) progress.Model {
	opts := []progress.Option{progress.WithSolidFill(th.BarFull), progress.WithColorProfile(th.Profile)}
	if !percent {
		opts = append(opts, progress.WithoutPercentage())
	}
	b := progress.New(opts...)
	b.EmptyColor = th.BarEmpty
	return b
}

func parenIf(n int, format string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, thousands(int64(n)))
}

func warnIf(th Theme, n int, format string) string {
	if n == 0 {
		return ""
	}
	return th.Bad.Render(fmt.Sprintf(format, thousands(int64(n))))
}
