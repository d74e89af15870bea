package runs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/cl2"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// CL2Options configure a ClusterLoader2 run (see cl2.Options).
type CL2Options struct {
	// Config is CL2's test config (--testconfig); Overrides its
	// --testoverrides files, later ones winning.
	Config    string   `json:"config"`
	Overrides []string `json:"overrides,omitempty"`
	// Nodes is CL2's --nodes, what the test sizes itself by; nil: the
	// fleet's fake node count.
	Nodes *int `json:"nodes,omitempty"`
	// Binary is the clusterloader binary; "": $GHOSTFLEET_CL2, then
	// clusterloader or clusterloader2 on PATH (see cl2.Find).
	Binary string `json:"binary,omitempty"`
	// Provider is CL2's --provider.
	Provider string `json:"provider"`
	// PodsPerNode and Throughput set CL2_PODS_PER_NODE and
	// CL2_POD_THROUGHPUT; 0: the config's defaults (4, 50 pods/s).
	PodsPerNode int     `json:"podsPerNode,omitempty"`
	Throughput  float64 `json:"throughput,omitempty"`
	// ExtraArgs go to clusterloader after GhostFleet's own.
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// Verbose reports every line clusterloader logs, not only its errors
	// (the log is always kept in the run folder).
	Verbose bool `json:"verbose,omitempty"`
}

// NewCL2Options are a cl2 run's defaults, the same for the flags and the
// console's form: experiment E's density config with the kind provider,
// sized by the fleet, at the config's pods per node and throughput.
func NewCL2Options() CL2Options {
	return CL2Options{Config: cl2.DefaultConfig, Provider: cl2.DefaultProvider}
}

// ErrCL2Context refuses a kubeconfig context: clusterloader uses the
// kubeconfig's current one.
var ErrCL2Context = errors.New("cl2 runs clusterloader on the kubeconfig's current context; --context is not supported: pass a kubeconfig whose current context is the cluster")

// Validate checks the options and that the config and overrides files
// exist, each error naming the value and what is allowed.
func (o CL2Options) Validate() error {
	if o.Nodes != nil && (*o.Nodes < 1 || *o.Nodes > fleet.MaxNodes) {
		return fmt.Errorf("--nodes %d is out of range: allowed are 1-%d (default: the fleet's fake node count)", *o.Nodes, fleet.MaxNodes)
	}
	if o.PodsPerNode < 0 || o.PodsPerNode > 1000 {
		return fmt.Errorf("--pods-per-node %d is out of range: allowed are 1-1000 (0: the config's default)", o.PodsPerNode)
	}
	if o.Throughput < 0 || o.Throughput > 5000 {
		return fmt.Errorf("--throughput %g is out of range: allowed are more than 0 and at most 5000 pods/s (0: the config's default)", o.Throughput)
	}
	if err := cl2.CheckFiles(o.Config, o.Overrides); err != nil {
		if o.Config == cl2.DefaultConfig {
			return fmt.Errorf("%w (the default is relative to the GhostFleet repository: run from its root, or pass --config)", err)
		}
		return err
	}
	return nil
}

// CL2Result is a ClusterLoader2 run: its folder (CL2's report/, its log,
// run.json) and CL2's artifacts read back.
type CL2Result struct {
	Run
	// Nodes is the --nodes CL2 was given.
	Nodes int `json:"nodes"`
	report.CL2Result
}

// Summary is the run's key figures: pod startup p99, scheduling
// throughput and junit's verdict.
func (r CL2Result) Summary() string {
	s := fmt.Sprintf("%d nodes", r.Nodes)
	switch {
	case r.Outcome == Interrupted:
		s += ", interrupted"
	case r.Outcome != Completed:
		s += fmt.Sprintf(", failed (exit %d)", r.ExitCode)
	}
	worst, found := 0.0, false
	for _, l := range r.PodStartupLatency {
		if l.Metric == "pod_startup" {
			worst, found = max(worst, l.P99*CL2Seconds(l.Unit)), true
		}
	}
	if found {
		s += fmt.Sprintf(": pod_startup p99 %.2fs", worst)
	}
	if len(r.SchedulingThroughput) > 0 {
		s += fmt.Sprintf(", %.1f pods/s", r.SchedulingThroughput[0].Perc50)
	}
	if r.JUnit != nil {
		s += fmt.Sprintf("; junit %d tests, %d failed", r.JUnit.Tests, r.JUnit.Failures+r.JUnit.Errors)
	}
	return s
}

// CL2Seconds converts a CL2 unit to seconds.
func CL2Seconds(unit string) float64 {
	switch unit {
	case "ms":
		return 0.001
	case "us", "µs":
		return 0.000001
	}
	return 1
}

// CL2 runs ClusterLoader2 on the fleet and records the run. Its error
// says why a run that ran did not pass (clusterloader exited non-zero,
// junit.xml lists a failure); an interrupted run returns a nil error,
// having deleted the namespaces CL2 created (Left says so).
func CL2(ctx context.Context, env Env, o CL2Options) (CL2Result, error) {
	if err := o.Validate(); err != nil {
		return CL2Result{}, err
	}
	if env.Target.Context != "" {
		return CL2Result{}, ErrCL2Context
	}
	binary, _, err := cl2.Find(o.Binary)
	if err != nil {
		return CL2Result{}, err
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return CL2Result{}, err
	}
	nodes := capacity.FakeNodes
	if o.Nodes != nil {
		nodes = *o.Nodes
	}
	if nodes > capacity.FakeNodes {
		env.warn("--nodes %d is more than the fleet's %d fake nodes: CL2 sizes the test by --nodes, so pods will stay Pending", nodes, capacity.FakeNodes)
	}
	if perNode := max(o.PodsPerNode, 4); capacity.MaxNodeGPUs > 0 && int64(perNode+1) > capacity.MaxNodeGPUs {
		env.warn("%d saturation pods per node plus about one latency pod, at 1 GPU each, do not fit nodes of %d GPUs: some will stay Pending", perNode, capacity.MaxNodeGPUs)
	}
	set := map[string]any{}
	if o.PodsPerNode > 0 {
		set["CL2_PODS_PER_NODE"] = o.PodsPerNode
	}
	if o.Throughput > 0 {
		set["CL2_POD_THROUGHPUT"] = o.Throughput
	}
	notify := env.reporter().Report
	opts := cl2.Options{
		Binary: binary, Config: o.Config, Overrides: o.Overrides, Nodes: nodes, Provider: o.Provider,
		Kubeconfig: env.Target.Kubeconfig, Set: set, ExtraArgs: o.ExtraArgs,
		ResultsRoot: env.ResultsDir, Cluster: s.cluster(), Profile: s.profile,
		Params:   map[string]any{"fakeNodes": capacity.FakeNodes, "totalGPUs": capacity.TotalGPUs},
		Complete: s.complete,
		Log:      &cl2LogLines{report: notify, verbose: o.Verbose}, Report: notify,
	}
	notify(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("clusterloader %s on %s, --nodes %d", binary, env.Target, nodes)})
	rec, dir, runErr := cl2.Run(ctx, opts)
	if dir == "" { // refused before anything ran
		return CL2Result{}, runErr
	}
	res, _ := rec.Result.(report.CL2Result)
	out := CL2Result{Run: Run{ID: rec.ID, Kind: rec.Kind, Dir: dir, Outcome: rec.Outcome, Warning: strings.Join(rec.Warnings, "; ")}, Nodes: nodes, CL2Result: res}
	if out.Outcome != Interrupted {
		return out, runErr
	}
	if res.NamespacePrefix != "" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		deleted, err := cl2.DeleteNamespaces(ctx, s.clients.Admin, res.NamespacePrefix)
		if err != nil {
			out.Left = fmt.Sprintf("ClusterLoader2's namespaces %s-* may be left (%v); delete them with kubectl --kubeconfig %s delete namespace NAME", res.NamespacePrefix, err, env.Target.Kubeconfig)
		} else {
			out.Left = fmt.Sprintf("deleting the %d namespace(s) ClusterLoader2 created, %s-* (their pods go with them)", len(deleted), res.NamespacePrefix)
		}
	} else {
		out.Left = "nothing: ClusterLoader2 was stopped before it created any namespace"
	}
	return out, nil
}

// cl2LogLines reports clusterloader's output: every line when verbose,
// else only its errors (klog's E and F lines), as warnings; its steps
// come as progress from cl2.Run.
type cl2LogLines struct {
	report  progress.Func
	verbose bool
	partial []byte
}

var klogError = regexp.MustCompile(`^[EF]\d{4} `)

func (l *cl2LogLines) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		switch {
		case klogError.MatchString(line):
			l.report(progress.Event{Kind: progress.Warn, Message: "clusterloader: " + line})
		case l.verbose:
			l.report(progress.Event{Kind: progress.Info, Message: "clusterloader: " + line})
		}
	}
}
