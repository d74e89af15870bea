package tui

import (
	"context"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

// Action is something a key starts: a run, a snapshot, a report. The
// command line supplies them, so the console runs exactly what the
// subcommands run and records it the same way.
type Action struct {
	Name string
	// Fields make up the form shown before the action starts; none: it
	// starts at once.
	Fields []Field
	// Unavailable, when set, is shown instead of starting the action.
	Unavailable string
	// Confirm, when set, is asked (y/n) before the action starts.
	Confirm string
	// Describe names a run with its values, e.g. "load 8000×1".
	Describe func(values []string) string
	// Run does the work. It must return only after its work has stopped,
	// and return early, leaving things consistent, when ctx is cancelled.
	Run func(ctx context.Context, values []string, ctl Control) (Outcome, error)
}

// Field is one form input with its default.
type Field struct {
	Label    string
	Default  string
	Help     string
	Optional bool // may be left empty
}

// Control is how a running action talks back to the console.
type Control struct {
	Report progress.Func
	// Live hands the console a control of the run's rate (churn), for
	// the +/- keys.
	Live func(RateControl)
}

// RateControl changes a running churn's rate (the run API's).
type RateControl = runs.RateControl

// Outcome is what a finished action reports: a line for the activity pane
// and where its results went.
type Outcome struct {
	Summary string
	Dir     string
	// Frame, when set, names a file in Dir the console saves its frame
	// into as text (a snapshot's frame.txt).
	Frame string
	// Interrupted marks a run stopped by something other than esc (its
	// demo stopping), drawn as a cancelled one is.
	Interrupted bool
}

// ActionKey names the keys that start actions.
type ActionKey string

// The console's action keys; Actions maps them to what they do.
const (
	ActNodes        ActionKey = "n"
	ActLoad         ActionKey = "l"
	ActChurn        ActionKey = "c"
	ActChurnLimited ActionKey = "C"
	ActTrain        ActionKey = "t"
	ActCL2          ActionKey = "b"
	ActFaults       ActionKey = "f"
	ActSnapshot     ActionKey = "s"
	ActReport       ActionKey = "r"
	ActUnload       ActionKey = "x"
	ActUsage        ActionKey = "u"
)
