package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is every key of the console, as data: the footer shows the short
// help of whatever has the keys, `?` the full one. Every key is matched
// through these bindings (key.Matches), so the help cannot name a key that
// does something else.
type keyMap struct {
	Nodes, Load, Churn, ChurnLimited, Train, CL2, Faults key.Binding
	Snapshot, Report, Faster, Slower, SLOClass, Cancel   key.Binding
	Unload, Help, Quit                                   key.Binding
	// Usage sets the emulated CPU/memory of pods (usage set).
	Usage key.Binding
	// Window cycles the charts' time window (5, 15, 60 minutes).
	Window key.Binding
	// Demo picks and plays a scripted demo (or stops it); Next starts a
	// presenter's next step.
	Demo, Next key.Binding
	// Interrupt is ctrl+c: it reaches the root before any overlay.
	Interrupt key.Binding
	// The map's drill-down (drill.go): the cursor (l stays load, so
	// right is → only besides the arrows), open, filter, command line.
	Up, Down, Left, Right, Open, Filter, Command key.Binding
	PageUp, PageDown, Scroll                     key.Binding

	// The form's and the overlays' own keys.
	Submit, NextField, PrevField, Close, Yes, No key.Binding
}

// actionBinding is an action key's binding and the action it starts.
type actionBinding struct {
	act ActionKey
	key key.Binding
}

func newKeyMap() keyMap {
	b := func(keys, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys), key.WithHelp(help, desc))
	}
	// Action keys come from the same constants the actions are looked up
	// by.
	act := func(k ActionKey, desc string) key.Binding { return b(string(k), string(k), desc) }
	return keyMap{
		Nodes:        act(ActNodes, "nodes"),
		Load:         act(ActLoad, "load"),
		Churn:        act(ActChurn, "churn"),
		ChurnLimited: act(ActChurnLimited, "churn-limited"),
		Train:        act(ActTrain, "training jobs"),
		CL2:          act(ActCL2, "CL2 run"),
		Faults:       act(ActFaults, "faults"),
		Snapshot:     act(ActSnapshot, "snapshot"),
		Report:       act(ActReport, "report"),
		Faster:       key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/-", "churn rate")),
		Slower:       key.NewBinding(key.WithKeys("-", "_")),
		SLOClass:     b("v", "v", "API SLO class"),
		Window:       b("z", "z", "chart window 5/15/60m"),
		Cancel:       b("esc", "esc", "cancel run"),
		Unload:       act(ActUnload, "remove workloads"),
		Usage:        act(ActUsage, "pods' CPU/memory use"),
		Help:         b("?", "?", "all keys"),
		Quit:         key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Interrupt:    key.NewBinding(key.WithKeys("ctrl+c")),
		Demo:         b("D", "D", "play/stop a demo"),
		Next:         b(" ", "space", "demo: next step"),
		Up:           key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑↓←→/hjk", "move")),
		Down:         key.NewBinding(key.WithKeys("down", "j")),
		Left:         key.NewBinding(key.WithKeys("left", "h")),
		Right:        key.NewBinding(key.WithKeys("right")),
		Open:         b("enter", "enter", "open"),
		Filter:       b("/", "/", "filter"),
		Command:      b(":", ":", "command"),
		PageUp:       key.NewBinding(key.WithKeys("pgup")),
		PageDown:     key.NewBinding(key.WithKeys("pgdown")),
		Scroll:       key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓/jk pgup/pgdn", "scroll")),

		Submit:    b("enter", "enter", "start"),
		NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab", "previous")),
		Close:     b("esc", "esc", "close"),
		Yes:       key.NewBinding(key.WithKeys("y", "Y", "enter"), key.WithHelp("y", "yes")),
		No:        key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n/any key", "no")),
	}
}

// actions pairs the action keys with the actions they start.
func (k keyMap) actions() []actionBinding {
	return []actionBinding{
		{ActNodes, k.Nodes}, {ActLoad, k.Load}, {ActChurn, k.Churn}, {ActChurnLimited, k.ChurnLimited},
		{ActTrain, k.Train}, {ActCL2, k.CL2}, {ActFaults, k.Faults}, {ActSnapshot, k.Snapshot},
		{ActReport, k.Report}, {ActUnload, k.Unload}, {ActUsage, k.Usage},
	}
}

// action is the action msg's key starts, if any.
func (k keyMap) action(msg tea.KeyMsg) (ActionKey, bool) {
	for _, a := range k.actions() {
		if key.Matches(msg, a.key) {
			return a.act, true
		}
	}
	return "", false
}

// ShortHelp is the footer while no overlay is open.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Load, k.Churn, k.Faster, k.Snapshot, k.Cancel, k.Help, k.Quit}
}

// FullHelp is the `?` overlay, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Open, k.Filter, k.Command},
		{k.Nodes, k.Load, k.Churn, k.ChurnLimited, k.Train},
		{k.CL2, k.Faults, k.Usage, k.Unload, k.Snapshot, k.Report},
		{k.Faster, k.SLOClass, k.Window, k.Cancel, k.Help, k.Quit},
		{k.Demo, k.Next},
	}
}
