package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key of the console, as data: the footer shows the short
// help, `?` the full one.
type keyMap struct {
	Nodes, Load, Churn, ChurnLimited, Train, CL2, Faults key.Binding
	Snapshot, Report, Faster, Slower, SLOClass, Cancel   key.Binding
	Unload, Help, Quit                                   key.Binding
}

func newKeyMap() keyMap {
	b := func(keys, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys), key.WithHelp(help, desc))
	}
	// Action keys come from the same constants the actions are looked up
	// by, so the help cannot name a key that does something else.
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
		Cancel:       b("esc", "esc", "cancel run"),
		Unload:       act(ActUnload, "remove workloads"),
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
		{k.Faster, k.SLOClass, k.Cancel, k.Help, k.Quit},
	}
}
