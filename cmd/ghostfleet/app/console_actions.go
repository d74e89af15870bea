package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/tui"
)

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
		env := runs.Env{Target: o.target(), ResultsDir: o.resultsDir, PrometheusURL: o.prometheusURL, Reporter: consoleReporter{ctl}, RealCluster: o.realOK}
		res, err := run(ctx, env, opts)
		run := res.Header()
		if run.Outcome == "" {
			return tui.Outcome{}, runs.ExplainEtcd(err) // it failed before it began: nothing to show but why
		}
		out := tui.Outcome{Summary: res.Summary(), Dir: run.Dir}
		if run.Left != "" {
			out.Summary += " — " + run.Left
		}
		if run.Warning != "" {
			out.Summary += " — " + run.Warning
		}
		if err == nil && run.Failed() {
			err = fmt.Errorf("%s: %s", run.Outcome, out.Summary) // the pane marks it failed, as the CLI's exit code does
		}
		return out, err
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

// actions are the console's keys that start runs, each through the run
// API exactly as its subcommand does, recorded the same way.
func (o *consoleOptions) actions() map[tui.ActionKey]tui.Action {
	f := func(label, def, help string) tui.Field { return tui.Field{Label: label, Default: def, Help: help} }
	load, snap, cl2Opts := runs.NewLoadOptions(), runs.NewSnapshotOptions(), runs.NewCL2Options()
	nodes, train, churn, limited := runs.NewNodesOptions(), runs.NewTrainOptions(), runs.NewChurnOptions(false), runs.NewChurnOptions(true)
	acts := map[tui.ActionKey]tui.Action{
		tui.ActNodes: {
			Name: "Scale the fleet", Fields: []tui.Field{f("nodes", fmt.Sprint(nodes.Count), "GhostFleet nodes wanted")},
			Describe: func(v []string) string { return "nodes " + v[0] },
			Run: runAction(o, func(v []string) (runs.NodesOptions, error) {
				opts := runs.NewNodesOptions()
				var err error
				opts.Count, err = fleet.ParseNodeCount(v[0])
				return opts, err
			}, runs.Nodes),
		},
		tui.ActLoad: {
			Name: "Load: N pods of G GPUs",
			Fields: []tui.Field{f("pods", fmt.Sprint(load.Pods), "N"), f("GPUs per pod", fmt.Sprint(load.GPUs), "G"),
				f("mode", load.Mode, strings.Join(workload.LoadModes, ", ")), f("rate", "0", "pods/s, paced (steady state); 0 = a burst"),
				{Label: "claim", Help: "empty: as the fleet offers GPUs; " + strings.Join(workload.ClaimModes, ", "), Optional: true}},
			Describe: func(v []string) string {
				claim := ""
				if v[4] != "" {
					claim = " claim " + v[4]
				}
				if v[3] != "0" {
					return fmt.Sprintf("load %s×%s at %s/s%s", v[0], v[1], v[3], claim)
				}
				return fmt.Sprintf("load %s×%s%s", v[0], v[1], claim)
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
				opts.Mode, opts.Claim = v[2], v[4]
				opts.Rate, err = runs.Float("rate", v[3])
				return opts, err
			}, runs.Load),
		},
		tui.ActChurn: {
			Name:     "Churn: open-loop create/delete",
			Fields:   []tui.Field{f("rate", fmt.Sprint(churn.Rate), "pods/s"), f("duration", churn.Duration.String(), "10m, 600")},
			Describe: func(v []string) string { return fmt.Sprintf("churn %s/s", v[0]) },
			Run:      runAction(o, churnForm(false), runs.Churn),
		},
		tui.ActChurnLimited: {
			Name: "Churn-limited: bounded in-flight requests",
			Fields: []tui.Field{f("rate", fmt.Sprint(limited.Rate), "pods/s"), f("duration", limited.Duration.String(), "10m, 600"),
				f("concurrency", fmt.Sprint(limited.Concurrency), "requests in flight at most")},
			Describe: func(v []string) string { return fmt.Sprintf("churn-limited %s/s", v[0]) },
			Run:      runAction(o, churnForm(true), runs.Churn),
		},
		tui.ActTrain: {
			Name: "Training jobs",
			Fields: []tui.Field{f("jobs", fmt.Sprint(train.Jobs), "Indexed Jobs"), f("pods per job", fmt.Sprint(train.PodsPerJob), "workers"),
				f("GPUs per pod", fmt.Sprint(train.GPUsPerPod), "8: whole DGX nodes")},
			Describe: func(v []string) string { return fmt.Sprintf("train %s×%s×%s", v[0], v[1], v[2]) },
			Run: runAction(o, func(v []string) (runs.TrainOptions, error) {
				opts := runs.NewTrainOptions()
				var err error
				for i, field := range []struct {
					name string
					to   *int
				}{{"jobs", &opts.Jobs}, {"pods per job", &opts.PodsPerJob}, {"GPUs per pod", &opts.GPUsPerPod}} {
					if *field.to, err = runs.Int(field.name, v[i]); err != nil {
						return opts, err
					}
				}
				return opts, nil
			}, runs.Train),
		},
		tui.ActSnapshot: {
			Name: "Snapshot", Fields: []tui.Field{f("since", snap.Since.String(), "window before now")},
			Describe: func(v []string) string { return "snapshot " + v[0] },
			Run: keepFrame(runAction(o, func(v []string) (runs.SnapshotOptions, error) { // frame.txt beside it (record.go)
				opts := runs.NewSnapshotOptions()
				var err error
				opts.Since, err = runs.Duration("since", v[0])
				return opts, err
			}, runs.Snapshot)),
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
			Run:      runAction(o, func([]string) (runs.UnloadOptions, error) { return runs.UnloadOptions{}, nil }, runs.Unload),
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
		tui.ActUsage: o.usageAction(),
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
	if why := attachedNodes(o.target()); why != "" {
		a := acts[tui.ActNodes]
		a.Unavailable = why
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

// churnForm reads the churn forms: rate and duration, and for
// churn-limited the concurrency.
func churnForm(limited bool) func([]string) (runs.ChurnOptions, error) {
	return func(v []string) (runs.ChurnOptions, error) {
		opts := runs.NewChurnOptions(limited)
		var err error
		if opts.Rate, err = runs.Float("rate", v[0]); err != nil {
			return opts, err
		}
		if opts.Duration, err = runs.Duration("duration", v[1]); err != nil {
			return opts, err
		}
		if limited {
			opts.Concurrency, err = runs.Int("concurrency", v[2])
		}
		return opts, err
	}
}
