package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// NodeBenchOptions configures BenchNodes.
type NodeBenchOptions struct {
	Cluster  string // a throwaway cluster name, created and deleted per trial
	Nodes    int
	Rounds   int
	Profile  GPUProfile
	Binaries binaries.Set
	Versions binaries.Versions
	Report   progress.Func
}

// NodeTrial is one timed creation of a fleet.
type NodeTrial struct {
	Method string  `json:"method"` // "ghostfleet" or "kwokctl"
	Round  int     `json:"round"`
	Create float64 `json:"createSeconds"` // until every create was answered
	Ready  float64 `json:"readySeconds"`  // until every node was Ready
}

// NodeBench is the outcome of BenchNodes: both methods on fresh clusters,
// alternated in one run so that machine noise hits both alike.
type NodeBench struct {
	Nodes      int               `json:"nodes"`
	GPUProfile string            `json:"gpuProfile"`
	Versions   binaries.Versions `json:"versions"`
	Started    time.Time         `json:"started"`
	Trials     []NodeTrial       `json:"trials"`
	// Ratio is GhostFleet's median create time over kwokctl's (< 1: faster).
	CreateRatio float64 `json:"createRatio"`
	ReadyRatio  float64 `json:"readyRatio"`
}

// BenchNodes creates opts.Nodes GPU nodes with GhostFleet's parallel
// creator and with `kwokctl scale node`, each on a fresh cluster.
func BenchNodes(ctx context.Context, opts NodeBenchOptions) (NodeBench, error) {
	report := opts.Report
	if report == nil {
		report = progress.Discard
	}
	out := NodeBench{Nodes: opts.Nodes, GPUProfile: opts.Profile.Name, Versions: opts.Versions, Started: time.Now().UTC()}
	if Exists(ctx, opts.Cluster) {
		return out, fmt.Errorf("cluster %q exists; the benchmark needs that name for its throwaway clusters: `ghostfleet clean --name %s`", opts.Cluster, opts.Cluster)
	}
	methods := []struct {
		name   string
		create func(context.Context, Target) error
	}{
		{"ghostfleet", func(ctx context.Context, t Target) error {
			cs, err := t.Clientset(true)
			if err != nil {
				return err
			}
			_, err = Scale(ctx, cs, ScaleOptions{Count: opts.Nodes, Profile: opts.Profile})
			return err
		}},
		{"kwokctl", func(ctx context.Context, _ Target) error {
			cmd := exec.CommandContext(ctx, opts.Binaries.Path(binaries.Kwokctl), "--name", opts.Cluster,
				"scale", "node", "--replicas", strconv.Itoa(opts.Nodes),
				"--param", fmt.Sprintf(`.allocatable["%s"]=%d`, ResourceGPU, opts.Profile.GPUs))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("kwokctl scale node: %v: %s", err, stderr.String())
			}
			return nil
		}},
	}
	for round := 1; round <= opts.Rounds; round++ {
		for _, m := range methods {
			trial, err := nodeTrial(ctx, opts, report, m.name, round, m.create)
			if derr := Delete(context.WithoutCancel(ctx), opts.Cluster, progress.Discard); derr != nil && err == nil {
				err = derr
			}
			if err != nil {
				return out, fmt.Errorf("%s round %d: %w", m.name, round, err)
			}
			out.Trials = append(out.Trials, trial)
		}
	}
	var gfCreate, kwCreate, gfReady, kwReady []float64
	for _, t := range out.Trials {
		if t.Method == "ghostfleet" {
			gfCreate, gfReady = append(gfCreate, t.Create), append(gfReady, t.Ready)
		} else {
			kwCreate, kwReady = append(kwCreate, t.Create), append(kwReady, t.Ready)
		}
	}
	out.CreateRatio = median(gfCreate) / median(kwCreate)
	out.ReadyRatio = median(gfReady) / median(kwReady)
	return out, nil
}

func nodeTrial(ctx context.Context, opts NodeBenchOptions, report progress.Func, method string, round int, create func(context.Context, Target) error) (NodeTrial, error) {
	_, err := Up(ctx, UpOptions{
		Name: opts.Cluster, Profile: ProfileDefault, Versions: opts.Versions, Report: progress.Discard,
		Binaries: func(context.Context) (binaries.Set, error) { return opts.Binaries, nil },
	})
	if err != nil {
		return NodeTrial{}, err
	}
	t := Own(opts.Cluster)
	cs, err := t.Clientset(false)
	if err != nil {
		return NodeTrial{}, err
	}
	done := progress.Step(report, "bench-"+method, fmt.Sprintf("round %d: %d nodes with %s", round, opts.Nodes, method), 0)
	defer done()
	start := time.Now()
	if err := create(ctx, t); err != nil {
		return NodeTrial{}, err
	}
	created := time.Since(start)
	// kwokctl's nodes carry type=kwok, as GhostFleet's do.
	if err := waitNodesReady(ctx, cs, LabelType+"=kwok", opts.Nodes, report, "bench-"+method); err != nil {
		return NodeTrial{}, err
	}
	return NodeTrial{Method: method, Round: round, Create: created.Seconds(), Ready: time.Since(start).Seconds()}, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
