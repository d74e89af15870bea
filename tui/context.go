package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// shared is what every pane reads and only the root writes, like gh-dash's
// ProgramContext: the fleet's header, the theme, the keys and the clock.
// Panes keep a pointer to it and never change it.
type shared struct {
	info Info
	th   Theme
	keys keyMap
	now  func() time.Time
}

// component is one pane of the console, like soft-serve's
// common.Component: it handles the messages the root routes to it, draws
// itself at exactly the size the root last gave it, and names its own keys
// for the footer. Panes are pointers, so Update changes them in place.
type component interface {
	help.KeyMap
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(w, h int)
}

// overlay is a component that takes the map's place and every key until
// it closes: the form, a question, a note, the full key help.
type overlay interface {
	component
	closed() bool
}

// Every pane is a component; the overlays close.
var (
	_ component = (*fleetMap)(nil)
	_ component = (*allocation)(nil)
	_ component = (*activity)(nil)
	_ component = (*sparkPanel)(nil)
	_ component = (*footer)(nil)
	_ overlay   = (*form)(nil)
	_ overlay   = (*confirm)(nil)
	_ overlay   = (*note)(nil)
	_ overlay   = (*keysHelp)(nil)
)

// noKeys is the help of a pane without keys of its own.
type noKeys struct{}

func (noKeys) ShortHelp() []key.Binding  { return nil }
func (noKeys) FullHelp() [][]key.Binding { return nil }

// size is a pane's last SetSize; resized reports whether it changed, so a
// memoised pane redraws only then.
type size struct{ w, h int }

func (s *size) resized(w, h int) bool {
	changed := s.w != w || s.h != h
	s.w, s.h = w, h
	return changed
}

// noticeMsg is a line for the footer from any pane: a key that did
// nothing, a rate changed, a run cancelled.
type noticeMsg string

func notify(format string, args ...any) tea.Cmd {
	s := fmt.Sprintf(format, args...)
	return func() tea.Msg { return noticeMsg(s) }
}
