package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// nodeList is a cell of several nodes (a rack or a group of them) opened
// from the map: its nodes one per line, a cursor to move through them,
// enter opens one (esc comes back here), esc goes back to the map.
type nodeList struct {
	*shared
	size
	title  string
	nodes  []watch.NodeCell
	sel    int
	fetch  func(context.Context, string) (watch.NodeDetail, error)
	detail *nodeDetail // the node opened from the list
	done   bool
}

func newNodeList(c *shared, title string, nodes []watch.NodeCell, fetch func(context.Context, string) (watch.NodeDetail, error)) *nodeList {
	return &nodeList{shared: c, title: title, nodes: nodes, fetch: fetch}
}

func (l *nodeList) Update(msg tea.Msg) tea.Cmd {
	if l.detail != nil {
		cmd := l.detail.Update(msg)
		if l.detail.closed() {
			l.detail = nil
		}
		return cmd
	}
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, l.keys.Close):
		l.done = true
	case key.Matches(k, l.keys.Up, l.keys.Left):
		l.sel = max(0, l.sel-1)
	case key.Matches(k, l.keys.Down, l.keys.Right):
		l.sel = min(len(l.nodes)-1, l.sel+1)
	case key.Matches(k, l.keys.PageUp):
		l.sel = max(0, l.sel-(l.h-4))
	case key.Matches(k, l.keys.PageDown):
		l.sel = min(len(l.nodes)-1, l.sel+l.h-4)
	case key.Matches(k, l.keys.Open):
		if len(l.nodes) > 0 {
			l.detail = newNodeDetail(l.shared, l.nodes[l.sel].Name, l.fetch)
			l.detail.SetSize(l.w, l.h)
			return l.detail.refresh()
		}
	}
	return nil
}

// refresh refreshes the node opened from the list, if any.
func (l *nodeList) refresh() tea.Cmd {
	if l.detail != nil {
		return l.detail.refresh()
	}
	return nil
}

func (l *nodeList) closed() bool { return l.done }

func (l *nodeList) SetSize(w, h int) {
	l.resized(w, h)
	if l.detail != nil {
		l.detail.SetSize(w, h)
	}
}

func (l *nodeList) ShortHelp() []key.Binding {
	if l.detail != nil {
		return l.detail.ShortHelp()
	}
	back := l.keys.Close
	back.SetHelp("esc", "back")
	return []key.Binding{l.keys.Open, l.keys.Scroll, back}
}
func (l *nodeList) FullHelp() [][]key.Binding { return [][]key.Binding{l.ShortHelp()} }

func (l *nodeList) View() string {
	if l.detail != nil {
		return l.detail.View()
	}
	th := l.th
	body := l.h - 3
	first := 0
	if body > 0 && l.sel >= body {
		first = l.sel - body + 1
	}
	var lines []string
	for i := first; i < len(l.nodes) && len(lines) < body; i++ {
		n := l.nodes[i]
		mark := "  "
		name := clean(n.Name)
		if i == l.sel {
			mark, name = th.Key.Render("▸ "), th.Bold.Render(name)
		}
		parts := []string{name}
		if n.Rack != "" {
			parts = append(parts, clean(n.Rack))
		}
		parts = append(parts, fmt.Sprintf("%d/%d GPUs", n.Used, n.GPUs), nodeState(th, n))
		lines = append(lines, mark+strings.Join(parts, "  "))
	}
	title := fmt.Sprintf("%s · %d nodes · enter opens one", l.title, len(l.nodes))
	return box(th, title, strings.Join(lines, "\n"), l.w, l.h)
}
