package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key of the console, as data: the footer shows the short
// help, `?` the full one.
type keyMap struct {
	Nodes, Load, Churn, ChurnLimited, Train, CL2, Faults key.Binding
	Snapshot, Report, Faster, Slower, Verb, Cancel       key.Binding
	Unload, Help, Quit                                   key.Binding
}

func newKeyMap() keyMap {
	b := func(keys, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys), key.WithHelp(help, desc))
	}
	return keyMap{
		Nodes:        b("n", "n", "nodes"),
		Load:         b("l", "l", "load"),
		Churn:        b("c", "c", "churn"),
		ChurnLimited: b("C", "C", "churn-limited"),
		Train:        b("t", "t", "training jobs"),
		CL2:          b("b", "b", "CL2 run"),
		Faults:       b("f", "f", "faults"),
		Snapshot:     b("s", "s", "snapshot"),
		Report:       b("r", "r", "report"),
		Faster:       key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/-", "churn rate")),
		Slower:       key.NewBinding(key.WithKeys("-", "_")),
		Verb:         b("v", "v", "API verb"),
		Cancel:       b("esc", "esc", "cancel run"),
		Unload:       b("x", "x", "remove workloads"),
		Help:         b("?", "?", "all keys"),
		Quit:         key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp is the footer.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Load, k.Churn, k.Faster, k.Snapshot, k.Cancel, k.Help, k.Quit}
}

// FullHelp is the `?` overlay, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Nodes, k.Load, k.Churn, k.ChurnLimited, k.Train},
		{k.CL2, k.Faults, k.Unload, k.Snapshot, k.Report},
		{k.Faster, k.Verb, k.Cancel, k.Help, k.Quit},
	}
}
