package tui

import (
	"fmt"
	"strings"
)

// command is a `:` command: the subcommand's name and the key whose
// action it runs.
type command struct {
	name string
	key  ActionKey
}

// commands are the `:` commands, named as the subcommands are. `:fault
// clear` is the fault form with "clear" as its fault, as f's form takes
// it.
var commands = []command{
	{"nodes", ActNodes}, {"load", ActLoad}, {"churn", ActChurn}, {"churn-limited", ActChurnLimited},
	{"train", ActTrain}, {"cl2", ActCL2}, {"fault", ActFaults}, {"snapshot", ActSnapshot},
	{"report", ActReport}, {"unload", ActUnload}, {"usage", ActUsage},
}

// cmdLine is a parsed `:` line: the action to run and its values, one
// per field of its form.
type cmdLine struct {
	help   bool // :help
	key    ActionKey
	action Action
	values []string
}

// parseCommand reads a `:` line as positional values for an action's
// form: `:load 800 1` is l's form with pods 800 and GPUs per pod 1, its
// other fields left at their defaults. It runs what the key's form runs.
func parseCommand(line string, acts map[ActionKey]Action) (cmdLine, error) {
	words := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), ":"))
	if len(words) == 0 {
		return cmdLine{}, fmt.Errorf("type a command: %s, help", commandNames(acts))
	}
	name, args := words[0], words[1:]
	if name == "help" || name == "?" {
		return cmdLine{help: true}, nil
	}
	var c cmdLine
	found := false
	for _, cmd := range commands {
		if a, ok := acts[cmd.key]; ok && cmd.name == name {
			c, found = cmdLine{key: cmd.key, action: a}, true
		}
	}
	if !found {
		return cmdLine{}, fmt.Errorf("unknown command %q: allowed are %s, help", clean(name), commandNames(acts))
	}
	fields := c.action.Fields
	if len(args) > len(fields) {
		if len(fields) == 0 {
			return cmdLine{}, fmt.Errorf(":%s takes no values: %q is one too many", name, clean(args[0]))
		}
		return cmdLine{}, fmt.Errorf(":%s takes at most %d value%s (%s): %q is one too many", name, len(fields), plural(len(fields)), fieldNames(fields), clean(args[len(fields)]))
	}
	if len(fields) > 0 {
		c.values = make([]string, len(fields))
		for i, f := range fields {
			c.values[i] = f.Default
			if i < len(args) {
				c.values[i] = args[i]
			}
			if c.values[i] == "" && !f.Optional { // as the form says it
				return cmdLine{}, fmt.Errorf(":%s: %s is empty", name, f.Label)
			}
		}
	}
	return c, nil
}

func commandNames(acts map[ActionKey]Action) string {
	var names []string
	for _, c := range commands {
		if _, ok := acts[c.key]; ok {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

func fieldNames(fields []Field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Label
	}
	return strings.Join(names, ", ")
}

// commandsHelp lists the `:` commands with their values and defaults,
// for :help and the ? overlay.
func commandsHelp(th Theme, acts map[ActionKey]Action) []string {
	var lines []string
	for _, c := range commands {
		a, ok := acts[c.key]
		if !ok {
			continue
		}
		line := th.Key.Render(":"+c.name) + " "
		for _, f := range a.Fields {
			def := f.Default
			if def == "" {
				def = "–"
			}
			line += th.Dim.Render("[" + f.Label + "=" + def + "] ")
		}
		line += "· " + a.Name + th.Dim.Render(" (key "+string(c.key)+")")
		lines = append(lines, line)
	}
	return lines
}
