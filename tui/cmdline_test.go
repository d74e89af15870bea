package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func TestParseCommand(t *testing.T) {
	f := func(label, def string) Field { return Field{Label: label, Default: def} }
	acts := map[ActionKey]Action{
		ActLoad:   {Name: "Load", Fields: []Field{f("pods", "8000"), f("GPUs per pod", "1"), f("mode", "pods"), f("rate", "0")}},
		ActFaults: {Name: "Fault", Fields: []Field{f("fault", "gpu-xid"), f("nodes", "5"), f("xid", "79"), {Label: "exit code", Optional: true}}},
		ActChurn:  {Name: "Churn", Fields: []Field{f("rate", "50"), f("duration", "10m")}},
		ActReport: {Name: "Report"},
		ActNodes:  {Name: "Nodes", Fields: []Field{f("nodes", "")}},
	}
	tests := []struct {
		line   string
		key    ActionKey
		values string
		err    string
	}{
		{line: "load 800 1", key: ActLoad, values: "800,1,pods,0"},
		{line: ":load", key: ActLoad, values: "8000,1,pods,0"},
		{line: "churn 100 60s", key: ActChurn, values: "100,60s"},
		{line: "fault gpu-xid 5", key: ActFaults, values: "gpu-xid,5,79,"},
		{line: "fault clear", key: ActFaults, values: "clear,5,79,"},
		{line: "report", key: ActReport, values: ""},
		{line: "nodes 200", key: ActNodes, values: "200"},
		{line: "load 800 1 pods 0 9", err: `:load takes at most 4 values (pods, GPUs per pod, mode, rate): "9" is one too many`},
		{line: "report now", err: `:report takes no values: "now" is one too many`},
		{line: "lod 800", err: `unknown command "lod": allowed are nodes, load, churn, fault, report, help`},
		{line: "nodes", err: ":nodes: nodes is empty"},
		{line: "", err: "type a command"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			c, err := parseCommand(tt.line, acts)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err && !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || c.key != tt.key || strings.Join(c.values, ",") != tt.values {
				t.Errorf("got %s %q %v, want %s %q", c.key, c.values, err, tt.key, tt.values)
			}
		})
	}
	if c, err := parseCommand("help", acts); err != nil || !c.help {
		t.Errorf(":help: %+v %v", c, err)
	}
}

// `:` runs exactly what the key's form runs, with the form's values.
func TestCommandRunsTheAction(t *testing.T) {
	got := make(chan []string, 1)
	cfg := testConfig(false)
	cfg.Actions = map[ActionKey]Action{ActLoad: {
		Name: "Load", Fields: []Field{{Label: "pods", Default: "8000"}, {Label: "GPUs per pod", Default: "1"}},
		Describe: func(v []string) string { return "load " + v[0] + "×" + v[1] },
		Run: func(_ context.Context, v []string, _ Control) (Outcome, error) {
			got <- v
			return Outcome{Summary: "ok"}, nil
		},
	}}
	m := New(cfg)
	m.setSize(120, 40)
	drive(t, m, keys(":"))
	typeLine(t, m, "load 800 2")
	if v := <-got; strings.Join(v, ",") != "800,2" {
		t.Errorf("values %q", v)
	}
	if len(m.activity.runs) != 1 || m.activity.runs[0].name != "load 800×2" {
		t.Errorf("runs %+v", m.activity.runs)
	}
	drive(t, m, keys(":"))
	typeLine(t, m, "help")
	if frame := m.View(); !strings.Contains(frame, ":load [pods=8000] [GPUs per pod=1]") {
		t.Errorf(":help does not list :load:\n%s", frame)
	}
}

func TestKeysHelpListsEveryKey(t *testing.T) {
	m := New(testConfig(false))
	m.setSize(160, 48)
	drive(t, m, keys("?"))
	frame := m.View()
	for _, col := range m.ctx.keys.FullHelp() {
		for _, b := range col {
			if h := b.Help(); h.Key != "" && !strings.Contains(frame, h.Key) {
				t.Errorf("? does not list %s", h.Key)
			}
		}
	}
	for _, want := range []string{"filter: faulted", "open the node or group at the cursor", "command: :load 800 1"} {
		if !strings.Contains(frame, want) {
			t.Errorf("? does not say %q:\n%s", want, frame)
		}
	}
}

func TestGoldenDrillFrames(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	sizes := []struct{ w, h int }{{80, 24}, {160, 48}}
	for _, s := range sizes {
		t.Run(fmt.Sprintf("%dx%d", s.w, s.h), func(t *testing.T) {
			check := func(name, frame string) {
				t.Helper()
				lines := strings.Split(frame, "\n")
				if len(lines) != s.h {
					t.Errorf("%s: %d lines, want %d", name, len(lines), s.h)
				}
				for i, l := range lines {
					if w := lipgloss.Width(l); w != s.w {
						t.Errorf("%s: line %d is %d cells wide, not %d", name, i, w, s.w)
					}
				}
				golden(t, fmt.Sprintf("%s-%dx%d", name, s.w, s.h), frame)
			}
			m, _ := drillModel(t, 1000, s.w, s.h)
			drive(t, m, keys("/"))
			typeLine(t, m, "faulted")
			check("plain-filtered", m.View())
			drive(t, m, key1(tea.KeyEnter))
			check("plain-node", m.View())
		})
	}
}
