package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// nodeDetail is one node in full, in the map's place: fetched through the
// Inspector when it opens and again each second while it is open (the
// root's clock calls refresh), so a condition that changes shows. esc
// goes back; up/down scroll.
type nodeDetail struct {
	*shared
	size
	name     string
	fetch    func(context.Context, string) (watch.NodeDetail, error)
	d        watch.NodeDetail
	have     bool
	err      string
	inFlight bool
	scroll   int
	done     bool
}

// nodeDetailMsg is a fetched node.
type nodeDetailMsg struct {
	name string
	d    watch.NodeDetail
	err  error
}

func (nodeDetailMsg) drill() {}

func newNodeDetail(c *shared, name string, fetch func(context.Context, string) (watch.NodeDetail, error)) *nodeDetail {
	return &nodeDetail{shared: c, name: name, fetch: fetch}
}

// refresh fetches the node again unless a fetch is under way.
func (n *nodeDetail) refresh() tea.Cmd {
	if n.inFlight || n.fetch == nil || n.done {
		return nil
	}
	n.inFlight = true
	name, fetch := n.name, n.fetch
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := fetch(ctx, name)
		return nodeDetailMsg{name, d, err}
	}
}

func (n *nodeDetail) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case nodeDetailMsg:
		if msg.name != n.name {
			return nil
		}
		n.inFlight = false
		if msg.err != nil {
			n.err = msg.err.Error() // the last good view stays under it
			return nil
		}
		n.d, n.have, n.err = msg.d, true, ""
	case tea.KeyMsg:
		k := n.keys
		switch {
		case key.Matches(msg, k.Close):
			n.done = true
		case key.Matches(msg, k.Up):
			n.scroll = max(0, n.scroll-1)
		case key.Matches(msg, k.Down):
			n.scroll++
		case key.Matches(msg, k.PageUp):
			n.scroll = max(0, n.scroll-(n.h-4))
		case key.Matches(msg, k.PageDown):
			n.scroll += n.h - 4
		}
	}
	return nil
}

func (n *nodeDetail) closed() bool     { return n.done }
func (n *nodeDetail) SetSize(w, h int) { n.resized(w, h) }

func (n *nodeDetail) ShortHelp() []key.Binding {
	back := n.keys.Close
	back.SetHelp("esc", "back")
	return []key.Binding{back, n.keys.Scroll}
}
func (n *nodeDetail) FullHelp() [][]key.Binding { return [][]key.Binding{n.ShortHelp()} }

func (n *nodeDetail) View() string {
	th := n.th
	title := "Node " + clean(n.name)
	if n.have {
		title += " · as of " + n.d.At.Format("15:04:05")
	}
	var lines []string
	switch {
	case n.fetch == nil:
		lines = []string{th.Dim.Render("details need the cluster: this console has no connection to ask")}
	case !n.have && n.err == "":
		lines = []string{th.Dim.Render("asking the API server…")}
	case n.have:
		lines = detailLines(th, n.d, n.w-4)
	}
	if n.err != "" {
		lines = append([]string{th.Bad.Render(clean(n.err))}, lines...)
	}
	body := n.h - 3
	n.scroll = min(n.scroll, max(0, len(lines)-body))
	shown := lines[n.scroll:]
	if len(shown) > body && body > 0 {
		shown = append(shown[:body-1:body-1], th.Dim.Render(fmt.Sprintf("↓ %d more lines (j/↓, pgdn)", len(lines)-n.scroll-body+1)))
	}
	return box(th, title, strings.Join(shown, "\n"), n.w, n.h)
}

// detailLines draws d in lines of at most w cells; every string from the
// cluster is cleaned of escape sequences first.
func detailLines(th Theme, d watch.NodeDetail, w int) []string {
	state := []string{th.Good.Render("Ready")}
	if !d.Ready {
		state[0] = th.Bad.Render("NotReady")
	}
	if d.Cordoned {
		state = append(state, th.Warn.Render("cordoned"))
	}
	gpus := fmt.Sprintf("%s %d used / %d allocatable / %d", th.Bold.Render("GPUs"), d.GPUUsed, d.GPUAlloc, d.GPUCapacity)
	if d.GPUAlloc < d.GPUCapacity {
		gpus += th.Bad.Render(fmt.Sprintf(" (%d out of service)", d.GPUCapacity-d.GPUAlloc))
	}
	lines := []string{strings.Join(state, " ") + " · " + gpus}

	// Why a node is faulted comes first, whole: wrapped, never cut.
	var normal []string
	for _, c := range d.Conditions {
		if !c.Abnormal {
			normal = append(normal, clean(c.Type)+"="+clean(c.Status))
			continue
		}
		line := th.Bad.Render("✗ " + clean(c.Type) + " " + clean(c.Status))
		if c.Reason != "" {
			line += " " + th.Bold.Render(clean(c.Reason))
		}
		if c.Message != "" {
			line += ": " + strings.TrimSpace(clean(c.Message))
		}
		if !c.Since.IsZero() {
			line += th.Dim.Render(" · since " + c.Since.Local().Format("15:04:05"))
		}
		lines = append(lines, wrapped(line, w)...)
	}

	var labels []string
	for _, l := range d.Labels {
		labels = append(labels, th.Dim.Render(clean(l.Key)+"=")+clean(l.Value))
	}
	lines = append(lines, th.Bold.Render("Labels"))
	lines = append(lines, packed(labels, w)...)
	if len(normal) > 0 {
		lines = append(lines, th.Bold.Render("Conditions")+" "+th.Good.Render("✓"))
		lines = append(lines, packed(normal, w)...)
	}

	if len(d.Taints) > 0 {
		lines = append(lines, th.Bold.Render("Taints"))
		var taints []string
		for _, t := range d.Taints {
			taints = append(taints, clean(t))
		}
		lines = append(lines, packed(taints, w)...)
	}

	counts := map[string]int{}
	for _, p := range d.Pods {
		counts[p.Phase]++
	}
	head := fmt.Sprintf("Pods %d", len(d.Pods))
	for _, ph := range []string{"Failed", "Pending", "Running", "Succeeded"} {
		if counts[ph] > 0 {
			head += fmt.Sprintf(" · %d %s", counts[ph], strings.ToLower(ph))
		}
	}
	lines = append(lines, th.Bold.Render(head))
	for _, p := range d.Pods {
		phase := pad(clean(p.Phase), 9)
		switch p.Phase {
		case "Failed":
			phase = th.Bad.Render(phase)
		case "Pending":
			phase = th.Warn.Render(phase)
		}
		line := fmt.Sprintf("  %s %s %dGPU", phase, clean(p.Namespace+"/"+p.Name), p.GPUs)
		if p.Reason != "" {
			line += " " + clean(p.Reason)
		}
		lines = append(lines, line)
		for _, e := range p.Exits {
			exit := fmt.Sprintf("    %s exit %d", clean(e.Container), e.ExitCode)
			if e.Reason != "" {
				exit += " " + clean(e.Reason)
			}
			if e.Message != "" {
				exit += ": " + clean(e.Message)
			}
			lines = append(lines, wrapped(th.Bad.Render(exit), w)...)
		}
	}
	return lines
}

// wrapped is line wrapped to w, its later lines indented by four.
func wrapped(line string, w int) []string {
	out := strings.Split(ansi.Wrap(line, max(w-4, 10), " "), "\n")
	for i := range out {
		if i == 0 {
			out[i] = "  " + out[i]
		} else {
			out[i] = "    " + out[i]
		}
	}
	return out
}

// packed joins items two spaces apart into as few lines of w as they fit,
// each indented by two.
func packed(items []string, w int) []string {
	var lines []string
	line := ""
	for _, it := range items {
		switch {
		case line == "":
			line = "  " + it
		case ansi.StringWidth(line)+2+ansi.StringWidth(it) > w:
			lines = append(lines, line)
			line = "  " + it
		default:
			line += "  " + it
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
