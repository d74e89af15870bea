package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// form asks for an action's parameters, each prefilled with its default.
type form struct {
	action Action
	inputs []textinput.Model
	focus  int
	err    string
}

func newForm(a Action) *form {
	f := &form{action: a}
	for i, fld := range a.Fields {
		in := textinput.New()
		in.Prompt = ""
		in.SetValue(fld.Default)
		in.CharLimit = 64
		in.Width = 12
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

// update handles a key; submitted reports enter on a complete form.
func (f *form) update(msg tea.KeyMsg) (submitted bool, cmd tea.Cmd) {
	switch msg.String() {
	case "enter":
		for i, v := range f.values() {
			if v == "" && !f.action.Fields[i].Optional {
				f.err = f.action.Fields[i].Label + " is empty"
				return false, nil
			}
		}
		return true, nil
	case "tab", "down":
		f.move(1)
		return false, nil
	case "shift+tab", "up":
		f.move(-1)
		return false, nil
	}
	f.err = ""
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return false, cmd
}

func (f *form) move(d int) {
	f.inputs[f.focus].Blur()
	f.focus = (f.focus + d + len(f.inputs)) % len(f.inputs)
	f.inputs[f.focus].Focus()
}

func (f *form) view(th Theme) string {
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
	b.WriteString(th.Dim.Render("enter start · tab next field · esc cancel"))
	return b.String()
}

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-len(s))) }
