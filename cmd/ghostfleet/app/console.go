package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
	"github.com/ghostfleet/ghostfleet/tui"
)

type consoleOptions struct {
	*globals
	once          bool
	width, height int
	prometheusURL string
	refresh       time.Duration
}

func newConsoleCommand(g *globals) *cobra.Command {
	o := &consoleOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "The mission console: fleet map, GPU allocation, control-plane sparklines, runs",
		Long: `Open the mission console on GhostFleet's fleet (bringing it up with the
defaults of ` + "`ghostfleet up`" + ` if it is not running): a map of every node colored
by the GPUs allocated on it, GPU and pod counts, sparklines of the API call
latency SLI (p99 over 5 minutes, one SLO class at a time with its upstream
threshold; v cycles mutating, GET, LIST namespace, LIST cluster), scheduler
throughput, APF rejections and etcd's database size against the running
etcd's quota, and the runs in progress. ` + "`ghostfleet`" + ` alone opens it.

Keys start the same runs as the subcommands (l load, c churn, C
churn-limited, t training jobs, n nodes, b ClusterLoader2, f faults,
s snapshot, r report, x remove workloads), recorded the same way under
results/; +/- change a running
churn's rate, esc cancels the current run, ? lists every key, q quits.

With --once, or when standard output is not a terminal, it prints one frame
as text (for slides, logs and tests) and exits. NO_COLOR turns colors off.`,
		Example: `  ghostfleet
  ghostfleet console --once --width 120 --height 40
  NO_COLOR=1 ghostfleet console`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	o.addFlags(cmd)
	return cmd
}

func (o *consoleOptions) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&o.once, "once", false, "print one frame as text and exit")
	fs.IntVar(&o.width, "width", 0, "frame width for --once (default: the terminal's, or 120)")
	fs.IntVar(&o.height, "height", 0, "frame height for --once (default: the terminal's, or 40)")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	fs.DurationVar(&o.refresh, "refresh", 500*time.Millisecond, "redraw the fleet at most this often")
}

func (o *consoleOptions) run(ctx context.Context) error {
	once := o.once || !isTerminal(o.streams.Out)
	if o.width < 0 || o.height < 0 {
		return fmt.Errorf("--width %d / --height %d: sizes must be 0 (the terminal's) or more", o.width, o.height)
	}
	if o.refresh < 100*time.Millisecond {
		return fmt.Errorf("--refresh %s is out of range: at least 100ms", o.refresh)
	}
	t := o.target()
	info := tui.Info{Cluster: t.String()}
	promURL := o.prometheusURL
	if !t.Attached() {
		st, err := fleet.LoadState(t.Name)
		if err != nil {
			if once {
				return fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", t.Name)
			}
			// The console's promise: one command to a live fleet.
			fmt.Fprintf(o.streams.ErrOut, "fleet %q is not up: bringing it up with `ghostfleet up`'s defaults\n", t.Name)
			if err := o.subcommand(ctx, o.streams, "up"); err != nil {
				return err
			}
			if st, err = fleet.LoadState(t.Name); err != nil {
				return err
			}
		}
		info = tui.Info{Cluster: t.Name, Kubernetes: st.Versions.Kubernetes, Kwok: st.Versions.Kwok, Profile: st.Profile, Created: st.Created}
		promURL = st.PrometheusURL()
	}
	cs, err := t.Clientset(false)
	if err != nil {
		return err
	}
	prom, why := reachablePrometheus(ctx, promURL)
	color := os.Getenv("NO_COLOR") == "" && isTerminal(o.streams.Out)
	cfg := tui.Config{Info: info, Theme: tui.NewTheme(color), Actions: o.actions()}
	if once {
		return o.frame(ctx, cfg, cs, prom, why)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fmt.Fprintln(o.streams.ErrOut, "listing nodes and pods…")
	if cfg.Fleet, err = tui.WatchFleet(ctx, cs, o.refresh); err != nil {
		return err
	}
	var src tui.RangeSource = prom
	if prom == nil {
		// No Prometheus (stopped, or an attached cluster without one):
		// scrape the components' /metrics ourselves, as snapshot does.
		eps, err := fleet.MetricsEndpoints(ctx, t)
		if err != nil {
			return fmt.Errorf("%s, and the components cannot be scraped directly: %w", why, err)
		}
		fmt.Fprintf(o.streams.ErrOut, "%s: scraping the components' /metrics directly\n", why)
		src = metrics.StartLive(ctx, eps, 15*time.Second, 15*time.Minute)
		cfg.Info.Metrics = "direct scrape"
	}
	cfg.Metrics = tui.PollMetrics(ctx, src, 5*time.Second, 15*time.Minute, 15*time.Second)
	// Ctrl-C reaches the console as a key (it asks before stopping runs);
	// SIGTERM stops the runs, lets them record, then quits.
	// Bubble Tea's own handler would quit on SIGTERM before the runs
	// recorded; the context's handler routes it through Shutdown instead.
	p := tea.NewProgram(tui.New(cfg), tea.WithAltScreen(), tea.WithoutSignalHandler(),
		tea.WithInput(o.streams.In), tea.WithOutput(o.streams.Out))
	stop := context.AfterFunc(ctx, func() { p.Send(tui.Shutdown()) })
	defer stop()
	_, err = p.Run()
	return err
}

// reachablePrometheus returns the Prometheus at url if it answers, or why not.
func reachablePrometheus(ctx context.Context, url string) (*metrics.Prometheus, string) {
	if url == "" {
		return nil, "no Prometheus (pass --prometheus-url)"
	}
	p, err := metrics.NewPrometheus(url)
	if err == nil {
		_, err = p.Targets(ctx)
	}
	if err != nil {
		return nil, fmt.Sprintf("Prometheus at %s does not answer", url)
	}
	return p, ""
}

// frame prints one frame of the console.
func (o *consoleOptions) frame(ctx context.Context, cfg tui.Config, cs kubernetes.Interface, prom *metrics.Prometheus, why string) error {
	w, h := o.width, o.height
	if f, ok := o.streams.Out.(*os.File); ok && (w == 0 || h == 0) {
		if tw, th, err := term.GetSize(int(f.Fd())); err == nil {
			w, h = orDefault(w, tw), orDefault(h, th)
		}
	}
	w, h = orDefault(w, 120), orDefault(h, 40)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	met := tui.MetricsView{Err: why}
	if prom != nil {
		met = tui.FetchMetrics(ctx, prom, 15*time.Minute, 15*time.Second)
	}
	fmt.Fprintln(o.streams.Out, tui.Frame(cfg, tui.BuildFleetView(ptrs(nodes.Items), ptrs(pods.Items), time.Now()), met, w, h))
	return nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

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

// sloCounts summarises a snapshot by its verdicts, e.g. "SLOs: 4 pass, 1 fail".
func sloCounts(out string) string {
	var parts []string
	for _, s := range []string{report.StatusPass, report.StatusFail, report.StatusNoData} {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  "+s+" ") {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return "SLOs: " + strings.Join(parts, ", ")
}

// faultArgs turns the fault form into `ghostfleet fault` arguments: node
// faults take --nodes, pod-exit and clear take their flags.
func faultArgs(v []string) []string {
	args := []string{"fault", v[0]}
	if info, err := fault.LookupKind(v[0]); err == nil && info.Scope == "nodes" {
		args = append(args, "--nodes", v[1])
	}
	return append(args, strings.Fields(v[2])...)
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

// actions are the console's keys that start runs, each a subcommand.
func (o *consoleOptions) actions() map[tui.ActionKey]tui.Action {
	f := func(label, def, help string) tui.Field { return tui.Field{Label: label, Default: def, Help: help} }
	acts := map[tui.ActionKey]tui.Action{
		tui.ActNodes: {
			Name: "Scale the fleet", Fields: []tui.Field{f("nodes", "1000", "GhostFleet nodes wanted")},
			Describe: func(v []string) string { return "nodes " + v[0] },
			Run:      o.command(lineWith("nodes"), func(v []string) []string { return []string{"nodes", v[0]} }),
		},
		tui.ActLoad: {
			Name: "Load: N pods of G GPUs",
			Fields: []tui.Field{f("pods", "8000", "N"), f("GPUs per pod", "1", "G"),
				f("mode", "pods", "pods, deployment or job"), f("rate", "0", "pods/s, paced (steady state); 0 = a burst")},
			Describe: func(v []string) string {
				if v[3] != "0" {
					return fmt.Sprintf("load %s×%s at %s/s", v[0], v[1], v[3])
				}
				return fmt.Sprintf("load %s×%s", v[0], v[1])
			},
			Run: o.command(lineWith("verdict"), func(v []string) []string {
				return []string{"load", v[0], v[1], "--mode", v[2], "--rate", v[3]}
			}),
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
			Name: "Snapshot", Fields: []tui.Field{f("since", "15m", "window before now")},
			Describe: func(v []string) string { return "snapshot " + v[0] },
			Run:      o.command(sloCounts, func(v []string) []string { return []string{"snapshot", "--since", v[0]} }),
		},
		tui.ActReport: {
			Name:     "Report of the latest snapshot",
			Describe: func([]string) string { return "report" },
			Run:      o.command(lineWith(""), func([]string) []string { return []string{"report"} }),
		},
		tui.ActUnload: {
			Name:     "Remove workloads",
			Confirm:  "remove every GhostFleet workload (pods, Deployments, Jobs)? y: remove, any other key: keep",
			Describe: func([]string) string { return "unload" },
			Run:      o.command(lineWith("removed"), func([]string) []string { return []string{"unload"} }),
		},
		tui.ActCL2: {
			Name: "ClusterLoader2 density run (experiment E)",
			Fields: []tui.Field{f("config", cl2.DefaultConfig, "CL2 test config"), f("pods per node", "4", "saturation pods"),
				f("throughput", "50", "pods/s created")},
			Describe: func(v []string) string { return "cl2 " + filepath.Base(v[0]) },
			Run: o.command(lineWith("cl2:"), func(v []string) []string {
				return []string{"cl2", "--config", v[0], "--pods-per-node", v[1], "--throughput", v[2]}
			}),
		},
		tui.ActFaults: {
			Name: "Fault",
			Fields: []tui.Field{f("fault", string(fault.GPUXid), strings.Join(append(fault.KindNames(), "clear"), ", ")),
				f("nodes", "5", "node faults: how many"),
				{Label: "flags", Help: "e.g. --xid 48 · --exit-code 3 -n gf-load --delay 10s --jitter 20s · --all", Optional: true}},
			Describe: func(v []string) string { return "fault " + v[0] },
			Run:      o.command(lineWith(""), faultArgs),
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
