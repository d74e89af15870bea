package tui

import (
	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// prompt is the one-line input `/` (filter the map) and `:` (run a
// command) open in the footer's place, as in k9s and vim. While it is
// open every key but ctrl+c is its; enter submits, and a line submit
// refuses stays open with the one-line error beside it; esc drops it.
type prompt struct {
	*shared
	size
	in     textinput.Model
	err    string
	submit func(line string) (tea.Cmd, error)
	done   bool
}

func newPrompt(c *shared, sigil, value string, submit func(string) (tea.Cmd, error)) *prompt {
	in := textinput.New()
	in.Prompt = sigil
	in.SetValue(value)
	in.CharLimit = 120
	in.Cursor.SetMode(cursor.CursorStatic) // no blinking redraws
	in.Focus()
	return &prompt{shared: c, in: in, submit: submit}
}

func (p *prompt) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, p.keys.Close):
		p.done = true
		return nil
	case key.Matches(k, p.keys.Submit):
		cmd, err := p.submit(p.in.Value())
		if err != nil {
			p.err = err.Error()
			return nil
		}
		p.done = true
		return cmd
	}
	p.err = ""
	var cmd tea.Cmd
	p.in, cmd = p.in.Update(k)
	return cmd
}

func (p *prompt) SetSize(w, h int) { p.resized(w, h) }
func (p *prompt) closed() bool     { return p.done }

func (p *prompt) View() string {
	line := p.in.View()
	if p.err != "" {
		line += "  " + p.th.Bad.Render(p.err)
	}
	return fitLine(line, p.w)
}
