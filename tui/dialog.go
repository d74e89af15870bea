package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// confirm is a pending yes/no question: quitting with runs active, or an
// action that asks first. Any key but a yes is a no.
type confirm struct {
	*shared
	size
	question string
	yes      func() tea.Cmd
	quit     bool // q (and ctrl+c, at the root) answer yes too
	done     bool
}

func newConfirm(c *shared, question string, quit bool, yes func() tea.Cmd) *confirm {
	return &confirm{shared: c, question: question, quit: quit, yes: yes}
}

func (c *confirm) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	c.done = true
	if key.Matches(k, c.keys.Yes) || c.quit && key.Matches(k, c.keys.Quit) {
		return c.yes()
	}
	return nil
}

func (c *confirm) closed() bool     { return c.done }
func (c *confirm) SetSize(w, h int) { c.resized(w, h) }

func (c *confirm) ShortHelp() []key.Binding {
	yes, no := c.keys.Yes, c.keys.No
	if c.quit {
		yes.SetHelp("y/q", "quit")
		no.SetHelp("any other key", "stay")
	}
	return []key.Binding{yes, no}
}
func (c *confirm) FullHelp() [][]key.Binding { return [][]key.Binding{c.ShortHelp()} }

func (c *confirm) View() string {
	return box(c.th, "Confirm", c.th.Warn.Width(c.w-4).Render(c.question), c.w, c.h)
}

// note is a longer message in the map's place (why an action is not
// available, and what to do); any key closes it.
type note struct {
	*shared
	size
	text string
	done bool
}

func newNote(c *shared, text string) *note { return &note{shared: c, text: text} }

func (n *note) Update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(tea.KeyMsg); ok {
		n.done = true
	}
	return nil
}

func (n *note) closed() bool     { return n.done }
func (n *note) SetSize(w, h int) { n.resized(w, h) }

func (n *note) ShortHelp() []key.Binding  { return []key.Binding{anyKeyCloses(n.keys)} }
func (n *note) FullHelp() [][]key.Binding { return [][]key.Binding{n.ShortHelp()} }

func (n *note) View() string {
	th := n.th
	return box(th, "Not available", th.Footer.Width(n.w-4).Render(n.text)+"\n\n"+th.Dim.Render("any key closes this"), n.w, n.h)
}

// anyKeyCloses is the help of an overlay that any key closes.
func anyKeyCloses(k keyMap) key.Binding {
	b := k.Close
	b.SetHelp("any key", "closes this")
	return b
}
