package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// Inspector is what the console asks the cluster on demand, outside the
// informers' slim views: one node in full, and the nodes a label or a
// pod phase selects. watch.Inspector is the real one.
type Inspector interface {
	Node(ctx context.Context, name string) (watch.NodeDetail, error)
	Nodes(ctx context.Context, q watch.NodeQuery) (map[string]bool, error)
}

// drillMsg is an answer for the drill-down: a node fetched, a filter's
// matches.
type drillMsg interface{ drill() }

// drillKey handles the map's keys: the cursor, enter, `/`, `:`, and esc
// while a filter holds (it clears the filter before it cancels a run).
func (m *Model) drillKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k, p := m.ctx.keys, m.fleetMap
	move := func(dr, dc int) {
		p.cursor.move(p.lay, p.shown, dr, dc)
		p.out = ""
	}
	switch {
	case key.Matches(msg, k.Up):
		move(-1, 0)
	case key.Matches(msg, k.Down):
		move(1, 0)
	case key.Matches(msg, k.Left):
		move(0, -1)
	case key.Matches(msg, k.Right):
		move(0, 1)
	case key.Matches(msg, k.Open):
		return m.openCell(), true
	case key.Matches(msg, k.Filter):
		m.openPrompt(newPrompt(m.ctx, "/", p.filter.text, m.setFilter))
	case key.Matches(msg, k.Command):
		m.openPrompt(newPrompt(m.ctx, ":", "", m.runCommand))
	case key.Matches(msg, k.Cancel) && p.filter.active():
		m.setFilter("") //nolint:errcheck // an empty filter always parses
		return notify("filter cleared: the map shows every node"), true
	default:
		return nil, false
	}
	return nil, true
}

func (m *Model) openPrompt(p *prompt) {
	p.SetSize(m.w, 1)
	m.prompt, m.footer.prompt = p, p
}

// promptKey gives a key to the open `/` or `:` line.
func (m *Model) promptKey(msg tea.KeyMsg) tea.Cmd {
	pr := m.prompt
	cmd := pr.Update(msg)
	if pr.closed() && m.prompt == pr {
		m.prompt, m.footer.prompt = nil, nil
	}
	return cmd
}

// setFilter applies what was typed after `/`: the map shows only the
// nodes it keeps, the cursor on the first of them.
func (m *Model) setFilter(text string) (tea.Cmd, error) {
	f, err := parseFilter(text)
	if err != nil {
		return nil, err
	}
	p := m.fleetMap
	f.seq = p.filter.seq + 1
	if m.cfg.Inspect != nil {
		f.query = m.cfg.Inspect.Nodes
	} else if f.remote() {
		return nil, fmt.Errorf("filter %q asks the API server: this console has no connection to ask", text)
	}
	p.filter, p.out = f, ""
	p.shown = f.apply(p.fleet)
	p.cursor.shown = f.active()
	return p.filter.refresh(m.ctx.now()), nil
}

// runCommand runs a `:` line: the action its name mirrors, with its
// values for the form's fields, exactly as the key's form would.
func (m *Model) runCommand(line string) (tea.Cmd, error) {
	c, err := parseCommand(line, m.cfg.Actions)
	if err != nil {
		return nil, err
	}
	if c.help {
		m.open(newCommandsHelp(m.ctx, commandsHelp(m.ctx.th, m.cfg.Actions)))
		return nil, nil
	}
	a := c.action
	switch {
	case a.Unavailable != "" && strings.Contains(a.Unavailable, "\n"):
		m.open(newNote(m.ctx, a.Unavailable))
		return nil, nil
	case a.Unavailable != "":
		return nil, fmt.Errorf("%s", a.Unavailable)
	case a.Confirm != "":
		m.open(newConfirm(m.ctx, a.Confirm, false, func() tea.Cmd { return m.activity.start(a, c.values) }))
		return nil, nil
	}
	return m.activity.start(a, c.values), nil
}

// openCell opens the cell under the cursor: a node's details, or the
// list of a group's nodes.
func (m *Model) openCell() tea.Cmd {
	p := m.fleetMap
	p.cursor.shown, p.out = true, ""
	nodes := cellNodes(p.lay, p.shown, p.cursor.place(p.lay, p.shown))
	var fetch func(context.Context, string) (watch.NodeDetail, error)
	if m.cfg.Inspect != nil {
		fetch = m.cfg.Inspect.Node
	}
	switch len(nodes) {
	case 0:
		return notify("no node here to open")
	case 1:
		d := newNodeDetail(m.ctx, nodes[0].Name, fetch)
		m.open(d)
		return d.refresh()
	}
	title := fmt.Sprintf("%s…%s", clean(nodes[0].Name), clean(nodes[len(nodes)-1].Name))
	if r0, r1 := nodes[0].Rack, nodes[len(nodes)-1].Rack; r0 != "" {
		title = clean(r0)
		if r1 != r0 {
			title += "…" + clean(r1)
		}
	}
	m.open(newNodeList(m.ctx, title, nodes, fetch))
	return nil
}

// drill routes an answer to whatever asked.
func (m *Model) drill(msg drillMsg) tea.Cmd {
	switch msg := msg.(type) {
	case filterMatch:
		if m.fleetMap.filter.answer(msg) {
			m.fleetMap.shown = m.fleetMap.filter.apply(m.fleetMap.fleet)
			m.fleetMap.out = ""
		}
	case nodeDetailMsg:
		if m.overlay != nil {
			return m.overlay.Update(msg)
		}
	}
	return nil
}

// drillTick refreshes an open node each second.
func (m *Model) drillTick() tea.Cmd {
	switch o := m.overlay.(type) {
	case *nodeDetail:
		return o.refresh()
	case *nodeList:
		return o.refresh()
	}
	return nil
}
