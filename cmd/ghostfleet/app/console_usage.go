package app

import (
	"fmt"

	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/tui"
)

// usageAction is the console's u: `usage set` on the pods a label
// selector (a run's: ghostfleet.io/run=<id>) and namespace pick, through
// the same run API and Validate as the subcommand.
func (o *consoleOptions) usageAction() tui.Action {
	f := func(label, def, help string) tui.Field { return tui.Field{Label: label, Default: def, Help: help} }
	return tui.Action{
		Name: "Usage: set the pods' emulated CPU/memory (metrics-server, HPAs)",
		Fields: []tui.Field{
			f("selector", workload.LabelKind, "label selector; a run's pods: "+workload.LabelRun+"=<run id>"),
			{Label: "namespace", Help: "empty: every namespace", Optional: true},
			{Label: "cpu", Default: "800m", Help: "per container, a quantity (800m, 2); empty: unchanged", Optional: true},
			{Label: "memory", Help: "per container, a quantity (2Gi); empty: unchanged", Optional: true},
		},
		Describe: func(v []string) string { return fmt.Sprintf("usage %s", usageWhat(v[2], v[3])) },
		Run:      runAction(o, usageForm, runs.SetUsage),
	}
}

// usageForm reads u's form: selector, namespace, cpu, memory.
func usageForm(v []string) (runs.UsageOptions, error) {
	var opts runs.UsageOptions
	opts.Selector, opts.Namespace, opts.CPU, opts.Memory = v[0], v[1], v[2], v[3]
	return opts, nil
}

func usageWhat(cpu, memory string) string {
	switch {
	case cpu != "" && memory != "":
		return "cpu " + cpu + " memory " + memory
	case memory != "":
		return "memory " + memory
	}
	return "cpu " + cpu
}
