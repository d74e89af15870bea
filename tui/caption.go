package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Demo is how the console plays scripted demos. The command line supplies
// it (fleet/demo plays the steps, each a run started through StartRun);
// the console only picks a script, passes the presenter's key on, and
// draws the caption line from the Caption messages it is sent.
type Demo struct {
	// Scripts names the scripts D offers; the first is the form's default.
	Scripts func() ([]string, error)
	// Play starts a script; an error (a bad file) is shown, nothing runs.
	Play func(script string, auto bool) error
	// Next starts a presenter's next step.
	Next func()
	// Stop stops the demo: its runs are cancelled and record.
	Stop func()
}

// Caption is what the caption line shows of a demo.
type Caption struct {
	Script      string
	Step, Steps int // Step 0: none started yet
	Text        string
	Auto        bool
	// State is waiting (for the presenter's key), playing, finishing,
	// done, failed or stopped.
	State string
	// Detail is what auto mode waits for, or why the demo failed.
	Detail string
}

// Playing tells a demo that has not ended.
func (c Caption) Playing() bool {
	return c.State == "waiting" || c.State == "playing" || c.State == "finishing"
}

type (
	demoMsg    interface{ demo() }
	captionMsg Caption
	startMsg   struct{ a Action }
)

func (captionMsg) demo() {}
func (startMsg) demo()   {}

// ShowCaption is the message that sets the caption line.
func ShowCaption(c Caption) tea.Msg { return captionMsg(c) }

// StartRun is the message that starts a as if its key had been pressed
// (with no form): a demo's step shows in the activity pane like any run,
// esc cancels it and +/- change a churn's rate.
func StartRun(a Action) tea.Msg { return startMsg{a} }

// caption is the line under the header while a demo is shown.
type caption struct {
	c  Caption
	on bool
}

// rows is how many lines the caption takes from the body.
func (c *caption) rows() int {
	if c.on {
		return 1
	}
	return 0
}

// demoUpdate handles the demo's messages: a new caption, a step to start.
func (m *Model) demoUpdate(msg demoMsg) tea.Cmd {
	switch msg := msg.(type) {
	case captionMsg:
		was := m.caption.on
		m.caption.c, m.caption.on = Caption(msg), true
		if !was {
			m.setSize(m.w, m.h) // the caption line takes a row from the body
		}
	case startMsg:
		return m.activity.start(msg.a, nil)
	}
	return nil
}

// demoKey handles D (pick and play a script, or stop the one playing)
// and a presenter's space; ok is false for any other key.
func (m *Model) demoKey(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	k, d, c := m.ctx.keys, m.cfg.Demo, m.caption.c
	switch {
	case key.Matches(msg, k.Demo):
		if d == nil {
			return notify("no demos: `ghostfleet demo SCRIPT` plays one"), true
		}
		if m.caption.on && c.Playing() {
			d.Stop()
			return notify("stopping demo %s: its runs are cancelled and record what they did", c.Script), true
		}
		return m.pickDemo(d), true
	case key.Matches(msg, k.Next) && m.caption.on && c.State == "waiting":
		d.Next()
		return nil, true
	}
	return nil, false
}

// pickDemo opens the form that picks a script and its mode.
func (m *Model) pickDemo(d *Demo) tea.Cmd {
	scripts, err := d.Scripts()
	if err == nil && len(scripts) == 0 {
		err = fmt.Errorf("no demo scripts found (scenarios/demo/*.yaml)")
	}
	if err != nil {
		return notify("%v", err)
	}
	a := Action{Name: "Play a demo", Fields: []Field{
		{Label: "script", Default: scripts[0], Help: strings.Join(scripts, ", ")},
		{Label: "mode", Default: "presenter", Help: "presenter (space starts each step) or auto"},
	}}
	m.open(newForm(m.ctx, a, func(v []string) tea.Cmd {
		if v[1] != "presenter" && v[1] != "auto" {
			return notify("mode %q: presenter or auto", v[1])
		}
		if err := d.Play(v[0], v[1] == "auto"); err != nil {
			m.open(newNote(m.ctx, err.Error()))
		}
		return nil
	}))
	return nil
}

// captionLine draws the caption line (with its newline), or nothing.
func (m *Model) captionLine() string {
	if !m.caption.on {
		return ""
	}
	c, th := m.caption.c, m.ctx.th
	step := fmt.Sprintf("%d/%d", c.Step, c.Steps)
	mark, style, tail := "▶", th.Key, ""
	switch c.State {
	case "waiting":
		tail = fmt.Sprintf("space: step %d", c.Step+1)
		if c.Step == 0 {
			c.Text = fmt.Sprintf("%d steps, presenter mode", c.Steps)
		}
	case "playing", "finishing":
		tail = c.Detail
	case "done":
		mark, style, tail = "✓", th.Good, "done · D: play another"
	case "failed": // the detail names the step and why
		mark, style, c.Text = "✗", th.Bad, c.Detail
	case "stopped":
		mark, style, c.Text = "■", th.Warn, "stopped: "+c.Detail
	}
	line := style.Render(mark+" "+c.Script) + " " + th.Dim.Render(step) + "  " + th.Bold.Render(c.Text)
	if tail != "" {
		line += th.Dim.Render("  · " + tail)
	}
	return fitLine(line, m.w) + "\n"
}
