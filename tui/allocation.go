package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"

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
		// Failed pods matter more than finished ones: they come first.
		fmt.Sprintf("%s %s running · %s pending%s%s%s", th.Bold.Render("Pods"), thousands(int64(v.Running)), thousands(int64(v.Pending)),
			parenIf(v.Unscheduled, " (%s unscheduled)"), warnIf(th, v.Failed, " · %s failed"), parenIf(v.Succeeded, " · %s done")),
	}
	return strings.Join(lines, "\n")
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
