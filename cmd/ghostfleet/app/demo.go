package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/demo"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/tui"
)

// demoDir is where the console's D key finds scripts.
const demoDir = "scenarios/demo"

// demoStart is the script `ghostfleet demo SCRIPT` plays once the
// console is up.
type demoStart struct {
	script string
	auto   bool
}

func newDemoCommand(g *globals) *cobra.Command {
	o := &consoleOptions{globals: g}
	start := &demoStart{}
	cmd := &cobra.Command{
		Use:   "demo [SCRIPT]",
		Short: "Play a scripted demo in the console: each step a run, with a caption",
		Long: `Open the console and play a demo script: steps such as scale the fleet,
load 8,000 GPUs, inject an Xid on 5 nodes, churn and raise its rate live,
snapshot and report, each shown with a one-line caption. Every step is a run
through the same API as its key or subcommand, recorded the same way.

SCRIPT is a file, or the name of one in scenarios/demo/ (talk-5min,
teaser-60s); without it the console opens the script picker (the D key).
In presenter mode (the default) space starts each step; with --auto each
step goes on by itself when its condition holds (until:), after its time
(after:), or when its run ends. A step that fails stops the demo: its other
runs are cancelled and recorded as interrupted, and the console stays up.

The format: apiVersion ghostfleet.dev/v1alpha1, kind Demo, metadata.name,
and steps, each a caption and one of nodes, load, churn, rate, fault, clear,
snapshot, report, train or unload (see scenarios/demo/talk-5min.yaml).`,
		Example: `  ghostfleet demo talk-5min
  ghostfleet demo scenarios/demo/teaser-60s.yaml --auto --record teaser.cast`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.once {
				return errors.New("--once prints one frame; a demo plays in the live console")
			}
			if len(args) == 1 {
				// A bad script is refused before the console opens.
				if _, err := loadScript(args[0]); err != nil {
					return err
				}
				start.script = args[0]
				o.demo = start
			} else {
				o.demo = &demoStart{}
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&start.auto, "auto", false, "go on by each step's condition, time or end instead of the space key")
	return cmd
}

// findScript turns a script argument into a file: a path as given, else
// a name in scenarios/demo/ of the checkout (or the working folder).
func findScript(arg string) (string, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".yaml") {
		return arg, nil
	}
	path := filepath.Join(scriptDir(), arg+".yaml")
	if _, err := os.Stat(path); err != nil {
		names, _ := scriptNames()
		return "", fmt.Errorf("demo script %q: no such file, nor %s (scripts there: %s)", arg, path, strings.Join(names, ", "))
	}
	return path, nil
}

func loadScript(arg string) (*demo.Script, error) {
	path, err := findScript(arg)
	if err != nil {
		return nil, err
	}
	return demo.Load(path)
}

// scriptDir is scenarios/demo in the GhostFleet checkout holding the
// working folder, else under the working folder.
func scriptDir() string {
	dir, err := os.Getwd()
	for err == nil {
		if data, rerr := os.ReadFile(filepath.Join(dir, "go.mod")); rerr == nil && strings.HasPrefix(string(data), "module github.com/ghostfleet/ghostfleet\n") {
			return filepath.Join(dir, demoDir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return demoDir
}

// scriptNames lists the scripts in scenarios/demo, the talk first.
func scriptNames() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(scriptDir(), "*.yaml"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(filepath.Base(f), ".yaml")
	}
	sort.Strings(names)
	return names, nil
}

// consolePlayer plays demos in the console: fleet/demo drives the steps,
// each started in the console as a run (tui.StartRun) so it shows,
// cancels and records like one started from its key; the demo's state
// goes to the caption line.
type consolePlayer struct {
	o      *consoleOptions
	ctx    context.Context
	send   func(tea.Msg)
	exited chan struct{} // closed once the console has quit
	fleet  atomic.Pointer[watch.FleetView]

	mu     sync.Mutex
	cancel context.CancelFunc // the playing demo's; nil when none plays
	next   chan struct{}
}

// newPlayer gives cfg the demo keys and a copy of the fleet's pictures
// for the steps' conditions.
func (o *consoleOptions) newPlayer(ctx context.Context, cfg *tui.Config) *consolePlayer {
	pl := &consolePlayer{o: o, ctx: ctx, exited: make(chan struct{})}
	cfg.Fleet = pl.tee(cfg.Fleet)
	cfg.Demo = &tui.Demo{Scripts: scriptNames, Play: pl.play, Next: pl.nextStep, Stop: pl.stop}
	return pl
}

// attach starts playing once the program runs: the script given on the
// command line, or the picker.
func (pl *consolePlayer) attach(p *tea.Program) {
	pl.send = p.Send
	d := pl.o.demo
	if d == nil {
		return
	}
	if d.script == "" {
		go p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("D")})
		return
	}
	go func() {
		if err := pl.play(d.script, d.auto); err != nil {
			p.Send(tui.ShowCaption(tui.Caption{Script: d.script, State: string(demo.Failed), Detail: err.Error()}))
		}
	}()
}

// tee passes the fleet's pictures on to the console, keeping the latest
// for Until. The console gets the newest one: an older unread one is
// dropped, as the data layer does.
func (pl *consolePlayer) tee(in <-chan watch.FleetView) <-chan watch.FleetView {
	if in == nil {
		return nil
	}
	out := make(chan watch.FleetView, 1)
	go func() {
		defer close(out)
		for v := range in {
			pl.fleet.Store(&v)
			select {
			case <-out:
			default:
			}
			out <- v // the only sender, and the buffer is empty
		}
	}()
	return out
}

// closed tells the player the console has quit.
func (pl *consolePlayer) closed() { close(pl.exited) }

func (pl *consolePlayer) latest() (watch.FleetView, bool) {
	v := pl.fleet.Load()
	if v == nil {
		return watch.FleetView{}, false
	}
	return *v, true
}

func (pl *consolePlayer) play(script string, auto bool) error {
	s, err := loadScript(script)
	if err != nil {
		return err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.cancel != nil {
		return errors.New("a demo is playing: D stops it")
	}
	ctx, cancel := context.WithCancel(pl.ctx)
	pl.cancel, pl.next = cancel, make(chan struct{}, 1)
	mode := demo.Presenter
	if auto {
		mode = demo.Auto
	}
	p := &demo.Player{Runner: pl, Fleet: pl.latest, Show: pl.show, Next: pl.next}
	go func() {
		defer cancel()
		p.Play(ctx, s, mode)
		pl.mu.Lock()
		pl.cancel = nil
		pl.mu.Unlock()
	}()
	return nil
}

func (pl *consolePlayer) nextStep() {
	pl.mu.Lock()
	next := pl.next
	pl.mu.Unlock()
	select { // never blocks the console: a key already waiting is enough
	case next <- struct{}{}:
	default:
	}
}

func (pl *consolePlayer) stop() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.cancel != nil {
		pl.cancel()
	}
}

func (pl *consolePlayer) show(s demo.State) {
	pl.send(tui.ShowCaption(tui.Caption{Script: s.Script, Step: s.Step, Steps: s.Steps, Text: s.Caption,
		Auto: s.Mode == demo.Auto, State: string(s.Phase), Detail: s.Detail}))
}

// Run starts step st in the console as a run and waits for it to end.
// The demo stopping cancels it, as esc does.
func (pl *consolePlayer) Run(ctx context.Context, st demo.Step, live func(runs.RateControl)) (runs.Result, error) {
	type ended struct {
		res runs.Result
		err error
	}
	done := make(chan ended, 1)
	a := tui.Action{Name: st.Describe(), Run: func(actx context.Context, _ []string, ctl tui.Control) (tui.Outcome, error) {
		actx, cancel := context.WithCancel(actx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		env := runs.Env{Target: pl.o.target(), ResultsDir: pl.o.resultsDir, PrometheusURL: pl.o.prometheusURL,
			Reporter: demoReporter{consoleReporter{ctl}, live}, RealCluster: pl.o.realOK}
		res, err := demo.RunStep(actx, env, st)
		done <- ended{res, err}
		if res == nil || res.Header().Outcome == "" {
			return tui.Outcome{}, err
		}
		out := tui.Outcome{Summary: res.Summary(), Dir: res.Header().Dir, Interrupted: res.Header().Outcome == runs.Interrupted}
		if st.Snapshot != nil {
			out.Frame = snapshotFrame
		}
		return out, err
	}}
	pl.send(tui.StartRun(a))
	select {
	case e := <-done:
		return e.res, e.err
	case <-pl.exited: // the console quit before the run started
		return nil, errors.New("the console has closed")
	}
}

// demoReporter hands a step's progress to the console and its rate
// control to both the console (+/-) and the demo (a rate step).
type demoReporter struct {
	console consoleReporter
	live    func(runs.RateControl)
}

func (r demoReporter) Report(e progress.Event) { r.console.Report(e) }

func (r demoReporter) Live(c runs.RateControl) {
	r.console.Live(c)
	r.live(c)
}
