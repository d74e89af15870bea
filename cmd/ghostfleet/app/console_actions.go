package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/tui"
)

// subcommand runs a ghostfleet subcommand in this process against the
// same cluster, with streams s.
func (o *consoleOptions) subcommand(ctx context.Context, s Streams, args ...string) error {
	args = append(args, "--name", o.name)
	if o.kubeconfig != "" {
		args = append(args, "--kubeconfig", o.kubeconfig)
	}
	if o.context != "" {
		args = append(args, "--context", o.context)
	}
	root := NewRootCommand(s)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// command is an action that runs a subcommand: the console starts exactly
// what the command line does, recorded the same way. summary picks the
// activity pane's line from the command's output.
func (o *consoleOptions) command(summary func(out string) string, args func(v []string) []string) func(context.Context, []string, tui.Control) (tui.Outcome, error) {
	return func(ctx context.Context, values []string, ctl tui.Control) (tui.Outcome, error) {
		var out, errOut bytes.Buffer
		s := Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Progress: ctl.Report, Live: ctl.Live}
		err := o.subcommand(ctx, s, args(values)...)
		res := tui.Outcome{Summary: summary(out.String()), Dir: folderIn(out.String() + errOut.String())}
		var exit exitError
		switch {
		case errors.As(err, &exit) && exit.code == 130:
			return res, nil // interrupted: the command recorded it and cleaned up
		case errors.As(err, &exit) && exit.msg == "":
			return res, fmt.Errorf("exit status %d", exit.code)
		}
		return res, err
	}
}

// lineWith summarises by the first output line containing s, or the first.
func lineWith(s string) func(string) string {
	return func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines {
			if strings.Contains(l, s) {
				return strings.TrimSpace(l)
			}
		}
		return strings.TrimSpace(lines[0])
	}
}

// folderIn finds the results folder a command named in its output.
func folderIn(out string) string {
	for _, l := range strings.Split(out, "\n") {
		for _, marker := range []string{"run record: ", "written to "} {
			if _, after, ok := strings.Cut(l, marker); ok {
				return strings.TrimSpace(after)
			}
		}
	}
	return ""
}

// runAction is an action that starts a run through the run API: parse
// turns the form's values into the run's options with the parsers the
// flags use (the run's Validate then says what is wrong, in the same
// words as on the command line), and the activity pane shows the typed
// result's summary and folder.
func runAction[O any, R runs.Result](o *consoleOptions, parse func([]string) (O, error), run func(context.Context, runs.Env, O) (R, error)) func(context.Context, []string, tui.Control) (tui.Outcome, error) {
	return func(ctx context.Context, values []string, ctl tui.Control) (tui.Outcome, error) {
		opts, err := parse(values)
		if err != nil {
			return tui.Outcome{}, err
		}
		env := runs.Env{Target: o.target(), ResultsDir: o.resultsDir, PrometheusURL: o.prometheusURL, Reporter: consoleReporter{ctl}}
		res, err := run(ctx, env, opts)
		if res.Header().Outcome == "" {
			return tui.Outcome{}, err // it failed before it began: nothing to show but why
		}
		return tui.Outcome{Summary: res.Summary(), Dir: res.Header().Dir}, err
	}
}

// consoleReporter hands a run's progress and live controls to the console.
type consoleReporter struct{ ctl tui.Control }

func (r consoleReporter) Report(e progress.Event) {
	if r.ctl.Report != nil {
		r.ctl.Report(e)
	}
}

func (r consoleReporter) Live(c runs.RateControl) {
	if r.ctl.Live != nil {
		r.ctl.Live(c)
	}
}

// actions are the console's keys that start runs, each a subcommand.
func (o *consoleOptions) actions() map[tui.ActionKey]tui.Action {
	f := func(label, def, help string) tui.Field { return tui.Field{Label: label, Default: def, Help: help} }
	load, snap, cl2Opts := runs.NewLoadOptions(), runs.NewSnapshotOptions(), runs.NewCL2Options()
	acts := map[tui.ActionKey]tui.Action{
		tui.ActNodes: {
			Name: "Scale the fleet", Fields: []tui.Field{f("nodes", "1000", "GhostFleet nodes wanted")},
			Describe: func(v []string) string { return "nodes " + v[0] },
			Run:      o.command(lineWith("nodes"), func(v []string) []string { return []string{"nodes", v[0]} }),
		},
		tui.ActLoad: {
			Name: "Load: N pods of G GPUs",
			Fields: []tui.Field{f("pods", fmt.Sprint(load.Pods), "N"), f("GPUs per pod", fmt.Sprint(load.GPUs), "G"),
				f("mode", load.Mode, strings.Join(workload.LoadModes, ", ")), f("rate", "0", "pods/s, paced (steady state); 0 = a burst")},
			Describe: func(v []string) string {
				if v[3] != "0" {
					return fmt.Sprintf("load %s×%s at %s/s", v[0], v[1], v[3])
				}
				return fmt.Sprintf("load %s×%s", v[0], v[1])
			},
			Run: runAction(o, func(v []string) (runs.LoadOptions, error) {
				opts := runs.NewLoadOptions()
				var err error
				if opts.Pods, err = runs.Int("pod count", v[0]); err != nil {
					return opts, err
				}
				if opts.GPUs, err = runs.Int("GPUs per pod", v[1]); err != nil {
					return opts, err
				}
				opts.Mode = v[2]
				opts.Rate, err = runs.Float("rate", v[3])
				return opts, err
			}, runs.Load),
		},
		tui.ActChurn: {
			Name:     "Churn: open-loop create/delete",
			Fields:   []tui.Field{f("rate", "50", "pods/s"), f("duration", "60s", "10m, 600")},
			Describe: func(v []string) string { return fmt.Sprintf("churn %s/s", v[0]) },
			Run:      o.command(lineWith("creates:"), func(v []string) []string { return []string{"churn", v[0], v[1]} }),
		},
		tui.ActChurnLimited: {
			Name: "Churn-limited: bounded in-flight requests",
			Fields: []tui.Field{f("rate", "100", "pods/s"), f("duration", "60s", "10m, 600"),
				f("concurrency", "50", "requests in flight at most")},
			Describe: func(v []string) string { return fmt.Sprintf("churn-limited %s/s", v[0]) },
			Run: o.command(lineWith("creates:"), func(v []string) []string {
				return []string{"churn-limited", v[0], v[1], "--concurrency", v[2]}
			}),
		},
		tui.ActTrain: {
			Name: "Training jobs",
			Fields: []tui.Field{f("jobs", "100", "Indexed Jobs"), f("pods per job", "8", "workers"),
				f("GPUs per pod", "8", "8: whole DGX nodes")},
			Describe: func(v []string) string { return fmt.Sprintf("train %s×%s×%s", v[0], v[1], v[2]) },
			Run: o.command(lineWith("jobs"), func(v []string) []string {
				return []string{"train", "--jobs", v[0], "--pods-per-job", v[1], "--gpus-per-pod", v[2]}
			}),
		},
		tui.ActSnapshot: {
			Name: "Snapshot", Fields: []tui.Field{f("since", snap.Since.String(), "window before now")},
			Describe: func(v []string) string { return "snapshot " + v[0] },
			Run: runAction(o, func(v []string) (runs.SnapshotOptions, error) {
				opts := runs.NewSnapshotOptions()
				var err error
				opts.Since, err = runs.Duration("since", v[0])
				return opts, err
			}, runs.Snapshot),
		},
		tui.ActReport: {
			Name:     "Report of the latest snapshot",
			Describe: func([]string) string { return "report" },
			Run:      runAction(o, func([]string) (runs.ReportOptions, error) { return runs.ReportOptions{}, nil }, runs.Report),
		},
		tui.ActUnload: {
			Name:     "Remove workloads",
			Confirm:  "remove every GhostFleet workload (pods, Deployments, Jobs)? y: remove, any other key: keep",
			Describe: func([]string) string { return "unload" },
			Run:      o.command(lineWith("removed"), func([]string) []string { return []string{"unload"} }),
		},
		tui.ActCL2: {
			Name: "ClusterLoader2 density run (experiment E)",
			Fields: []tui.Field{f("config", cl2Opts.Config, "CL2 test config"), f("pods per node", "4", "saturation pods"),
				f("throughput", "50", "pods/s created")},
			Describe: func(v []string) string { return "cl2 " + filepath.Base(v[0]) },
			Run: runAction(o, func(v []string) (runs.CL2Options, error) {
				opts := runs.NewCL2Options()
				opts.Config = v[0]
				var err error
				if opts.PodsPerNode, err = runs.Int("pods per node", v[1]); err != nil {
					return opts, err
				}
				opts.Throughput, err = runs.Float("throughput", v[2])
				return opts, err
			}, runs.CL2),
		},
		tui.ActFaults: {
			Name: "Fault",
			Fields: []tui.Field{f("fault", string(fault.GPUXid), strings.Join(append(fault.KindNames(), "clear"), ", ")),
				f("nodes", "5", "node faults: how many"),
				f("xid", fmt.Sprint(fault.DefaultXid), "gpu-xid: the Xid (48, 63, 64, 74, 79, 94, 95…)"),
				{Label: "exit code", Help: "pod-exit: the containers' exit code, 0-255 (NCCL test failure: 3)", Optional: true},
				f("namespace", "gf-load", "pod-exit: the pods' namespace"),
				f("delay", "0s", "pod-exit: fail this long from now…"),
				f("jitter", "0s", "pod-exit: …plus up to this, per pod")},
			Describe: func(v []string) string { return "fault " + v[0] },
			Run:      runAction(o, faultForm, runFaultForm),
		},
	}
	if _, _, err := cl2.Find(""); err != nil {
		a := acts[tui.ActCL2]
		a.Unavailable = err.Error()
		acts[tui.ActCL2] = a
	}
	if o.target().Attached() {
		a := acts[tui.ActNodes]
		a.Unavailable = "n: nodes manages GhostFleet's own fleet, not an attached cluster"
		acts[tui.ActNodes] = a
	}
	return acts
}

// faultRequest is the fault form's choice: a fault, or clearing all.
type faultRequest struct {
	clear bool
	fault runs.FaultOptions
}

// faultForm reads the fault form: node faults take the node count (and
// gpu-xid its Xid), pod-exit its exit code, namespace and window; clear
// clears every fault.
func faultForm(v []string) (faultRequest, error) {
	if v[0] == "clear" {
		return faultRequest{clear: true}, nil
	}
	kind := fault.Kind(v[0])
	info, err := fault.LookupKind(v[0])
	if err != nil {
		return faultRequest{}, err
	}
	opts := runs.NewFaultOptions(kind)
	if info.Scope == "nodes" {
		if opts.Nodes, err = runs.Int("nodes", v[1]); err != nil {
			return faultRequest{}, err
		}
		if kind == fault.GPUXid {
			opts.Xid, err = runs.Int("xid", v[2])
		}
		return faultRequest{fault: opts}, err
	}
	if v[3] == "" {
		return faultRequest{}, fmt.Errorf("exit code is required for pod-exit: the code the containers exit with, 0-255 (NCCL test failure: 3)")
	}
	if opts.ExitCode, err = runs.Int("exit code", v[3]); err != nil {
		return faultRequest{}, err
	}
	opts.Namespace = v[4]
	if opts.Delay, err = runs.Duration("delay", v[5]); err != nil {
		return faultRequest{}, err
	}
	opts.Jitter, err = runs.Duration("jitter", v[6])
	return faultRequest{fault: opts}, err
}

func runFaultForm(ctx context.Context, env runs.Env, r faultRequest) (runs.Result, error) {
	if r.clear {
		return runs.Clear(ctx, env, runs.ClearOptions{All: true})
	}
	return runs.Fault(ctx, env, r.fault)
}
