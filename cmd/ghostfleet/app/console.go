package app

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
	"github.com/ghostfleet/ghostfleet/tui"
)

type consoleOptions struct {
	*globals
	once          bool
	width, height int
	prometheusURL string
	refresh       time.Duration
	record        string     // --record: a cast of what the console draws
	pprofAddr     string     // --pprof-addr: Go's /debug/pprof on loopback (debugserver.go)
	demo          *demoStart // ghostfleet demo: the script to play (demo.go)
}

func newConsoleCommand(g *globals) *cobra.Command {
	o := &consoleOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "The mission console: fleet map, GPU allocation, control-plane sparklines, runs",
		Long: `Open the mission console on GhostFleet's fleet (bringing it up with the
defaults of ` + "`ghostfleet up --prometheus-later`" + ` if it is not running): a map of every node colored
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

On a first run the fleet comes up before Prometheus is built: the charts
read the components' /metrics directly while it builds in the background
(the header shows its progress), then switch to Prometheus.

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

// The console's pace. The map is rebuilt at most once a second (k9s
// refreshes every 2 s), and the terminal is written at most 20 times a
// second (Bubble Tea's default is 60): keys still answer within 50 ms.
// Side by side during a 20 pods/s churn on 1,000 nodes, a 1 s refresh
// cost 14 % less than 500 ms (results/console-cost-20261130-2049*).
const (
	consoleRefresh = time.Second
	consoleFPS     = 20
)

func (o *consoleOptions) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&o.once, "once", false, "print one frame as text and exit")
	fs.IntVar(&o.width, "width", 0, "frame width for --once (default: the terminal's, or 120)")
	fs.IntVar(&o.height, "height", 0, "frame height for --once (default: the terminal's, or 40)")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	fs.DurationVar(&o.refresh, "refresh", consoleRefresh, "redraw the fleet at most this often")
	fs.StringVar(&o.record, "record", "", "record everything the console draws into this asciinema v2 cast file (FILE.cast)")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve the console's own Go /debug/pprof on this loopback HOST:PORT (e.g. 127.0.0.1:6060; for soaks and profiling)")
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
	pending := false // the fleet's Prometheus is still to be built
	var versions binaries.Versions
	if !t.Attached() {
		st, err := fleet.UpState(t.Name)
		if err != nil {
			if once {
				return err
			}
			// The console's promise: one command to a live fleet.
			fmt.Fprintf(o.streams.ErrOut, "fleet %q is not up: bringing it up with `ghostfleet up`'s defaults\n", t.Name)
			if err := o.runUp(ctx); err != nil {
				return err
			}
			if st, err = fleet.LoadState(t.Name); err != nil {
				return err
			}
		}
		info = tui.Info{Cluster: t.Name, Kubernetes: st.Versions.Kubernetes, Kwok: st.Versions.Kwok, Profile: st.Profile, Created: st.Created}
		promURL, pending, versions = st.PrometheusURL(), st.PrometheusPending, st.Versions
	}
	cs, err := t.Clientset(false)
	if err != nil {
		return err
	}
	prom, why := reachablePrometheus(ctx, promURL)
	if pending { // whatever answers on its port is not the fleet's
		prom, why = nil, "not built yet (`ghostfleet up` builds it)"
	}
	color := os.Getenv("NO_COLOR") == "" && isTerminal(o.streams.Out)
	cfg := tui.Config{Info: info, Theme: tui.NewTheme(color), Actions: o.actions(), Inspect: watch.NewInspector(cs)}
	if !t.Attached() {
		if names, err := fleet.ComponentNames(ctx, t.Name); err == nil {
			cfg.Health = func() []string { return fleet.DownComponents(t.Name, names) }
		}
	}
	if once {
		return o.frame(ctx, cfg, cs, prom, why)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.pprofAddr != "" {
		addr, err := serveDebug(ctx, o.pprofAddr)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.streams.ErrOut, "console profile: http://%s/debug/pprof/\n", addr)
	}
	fmt.Fprintln(o.streams.ErrOut, "listing nodes and pods…")
	if cfg.Fleet, err = watch.Fleet(ctx, cs, o.refresh); err != nil {
		return err
	}
	var src poll.RangeSource = prom
	if prom == nil {
		// No Prometheus (stopped, or an attached cluster without one):
		// scrape the components' /metrics ourselves, as snapshot does.
		eps, err := fleet.MetricsEndpoints(ctx, t)
		if err != nil {
			return fmt.Errorf("%s, and the components cannot be scraped directly: %w", why, err)
		}
		if pending {
			why = "Prometheus is not built yet (it builds in the background)"
		}
		fmt.Fprintf(o.streams.ErrOut, "%s: scraping the components' /metrics directly\n", why)
		liveCtx, stopLive := context.WithCancel(ctx)
		defer stopLive()
		src = metrics.StartLive(liveCtx, eps, 15*time.Second, 15*time.Minute)
		cfg.Info.Metrics = "direct scrape"
		if pending {
			h := &handover{src: src, name: cfg.Info.Metrics, stop: stopLive}
			src = h
			wait := addPrometheusLater(ctx, t.Name, versions, h)
			defer func() { // before the deferred cancel: stop the build, then wait for it
				cancel()
				wait()
				if st, err := fleet.LoadState(t.Name); err == nil && st.PrometheusPending {
					fmt.Fprintf(o.streams.ErrOut, "fleet %q has no Prometheus yet: its build was stopped with the console; `ghostfleet up` builds and starts it (~7 min), or the console again in the background\n", t.Name)
				}
			}()
		}
	}
	poller := poll.NewPoller(src, 5*time.Second, tui.DefaultWindow)
	if !t.Attached() {
		poller.Alarms = fleet.EtcdAlarms(t.Name) // etcd's NOSPACE leads the SLO strip
	}
	cfg.Metrics, cfg.SetMetricsWindow = poller.Run(ctx), poller.SetWindow
	cfg.SLOScale = sloScale()
	// Ctrl-C reaches the console as a key (it asks before stopping runs);
	// SIGTERM stops the runs, lets them record, then quits.
	// Bubble Tea's own handler would quit on SIGTERM before the runs
	// recorded; the context's handler routes it through Shutdown instead.
	out, closeRecord, err := o.output("GhostFleet " + info.Cluster) // record.go
	if err != nil {
		return err
	}
	defer closeRecord()
	player := o.newPlayer(ctx, &cfg) // demo.go: the D key, `ghostfleet demo`
	defer player.closed()
	p := tea.NewProgram(tui.New(cfg), tea.WithAltScreen(), tea.WithoutSignalHandler(), tea.WithFPS(consoleFPS),
		tea.WithInput(o.streams.In), tea.WithOutput(out))
	player.attach(p)
	stop := context.AfterFunc(ctx, func() { p.Send(tui.Shutdown()) })
	defer stop()
	_, err = p.Run()
	return err
}

// reachablePrometheus returns the Prometheus at url if it answers, or why not.
func reachablePrometheus(ctx context.Context, url string) (*metrics.Prometheus, string) {
	if url == "" {
		return nil, "no Prometheus (attached: pass --prometheus-url; a fleet up with --prometheus-port 0 has none)"
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
	met := poll.MetricsView{Err: why}
	if prom != nil {
		met = poll.Fetch(ctx, prom, 15*time.Minute, 15*time.Second)
	}
	if t := o.target(); !t.Attached() {
		met.EtcdAlarms, _ = fleet.EtcdAlarms(t.Name)(ctx)
	}
	dra, err := fleet.ListDRA(ctx, cs)
	if err != nil {
		return err
	}
	view := watch.BuildWith(ptrs(nodes.Items), ptrs(pods.Items), watch.Devices{Published: dra.Published, Allocated: dra.Allocated}, time.Now())
	fmt.Fprintln(o.streams.Out, tui.Frame(cfg, view, met, w, h))
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

// runUp brings the fleet up as `ghostfleet up --prometheus-later` with its
// defaults would, in this process, before the console opens: on a first
// run, the console does not wait for Prometheus to build
// (console_prometheus.go).
func (o *consoleOptions) runUp(ctx context.Context) error {
	root := NewRootCommand(o.streams)
	root.SetArgs([]string{"up", "--name", o.name, "--prometheus-later"})
	return root.ExecuteContext(ctx)
}

// sloScaleEnv scales the SLO strip's thresholds: for tests only (the
// console e2e provokes a breach on a small fleet with it); unset in use.
const sloScaleEnv = "GHOSTFLEET_SLO_SCALE"

func sloScale() float64 {
	v, err := strconv.ParseFloat(os.Getenv(sloScaleEnv), 64)
	if err != nil || v <= 0 {
		return 1
	}
	return v
}
