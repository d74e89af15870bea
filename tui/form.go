package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// form asks for an action's parameters, each prefilled with its default.
// While it is open every key but ctrl+c is its: q is typed, not quitting.
type form struct {
	*shared
	size
	action Action
	inputs []textinput.Model
	focus  int
	err    string
	submit func(values []string) tea.Cmd
	done   bool
}

func newForm(c *shared, a Action, submit func(values []string) tea.Cmd) *form {
	f := &form{shared: c, action: a, submit: submit}
	for i, fld := range a.Fields {
		in := textinput.New()
		in.Prompt = ""
		in.SetValue(fld.Default)
		in.CharLimit = 64
		in.Width = 12
		// A blinking cursor would redraw the whole console twice a second.
		in.Cursor.SetMode(cursor.CursorStatic)
		if i == 0 {
			in.Focus()
		}
		f.inputs = append(f.inputs, in)
	}
	return f
}

func (f *form) values() []string {
	out := make([]string, len(f.inputs))
	for i, in := range f.inputs {
		out[i] = strings.TrimSpace(in.Value())
	}
	return out
}

func (f *form) closed() bool { return f.done }

// Update handles a key: enter on a complete form starts the action, esc
// drops it.
func (f *form) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, f.keys.Close):
		f.done = true
		return nil
	case key.Matches(k, f.keys.Submit):
		for i, v := range f.values() {
			if v == "" && !f.action.Fields[i].Optional {
				f.err = f.action.Fields[i].Label + " is empty"
				return nil
			}
		}
		f.done = true
		return f.submit(f.values())
	case key.Matches(k, f.keys.NextField):
		f.move(1)
		return nil
	case key.Matches(k, f.keys.PrevField):
		f.move(-1)
		return nil
	}
	f.err = ""
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(k)
	return cmd
}

func (f *form) move(d int) {
	f.inputs[f.focus].Blur()
	f.focus = (f.focus + d + len(f.inputs)) % len(f.inputs)
	f.inputs[f.focus].Focus()
}

func (f *form) SetSize(w, h int) { f.resized(w, h) }

func (f *form) ShortHelp() []key.Binding {
	return []key.Binding{f.keys.Submit, f.keys.NextField, f.keys.Close}
}
func (f *form) FullHelp() [][]key.Binding {
	return [][]key.Binding{{f.keys.Submit, f.keys.NextField, f.keys.PrevField, f.keys.Close}}
}

func (f *form) View() string {
	th := f.th
	var b strings.Builder
	width := 0
	for _, fld := range f.action.Fields {
		width = max(width, len(fld.Label))
	}
	for i, fld := range f.action.Fields {
		marker := "  "
		if i == f.focus {
			marker = th.Key.Render("▸ ")
		}
		b.WriteString(marker + th.Bold.Render(pad(fld.Label, width)) + "  " + f.inputs[i].View())
		if fld.Help != "" {
			b.WriteString("  " + th.Dim.Render(fld.Help))
		}
		b.WriteByte('\n')
	}
	if f.err != "" {
		b.WriteString(th.Bad.Render(f.err) + "\n")
	}
	return box(th, f.action.Name, strings.TrimSuffix(b.String(), "\n"), f.w, f.h)
}
