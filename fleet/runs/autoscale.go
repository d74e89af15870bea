package runs

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// AutoscaleOptions ask for GPU pods beyond what the fleet has, on a fleet
// brought up with --autoscaler karpenter (see workload.AutoscaleOptions).
type AutoscaleOptions struct {
	workload.AutoscaleOptions
}

// NewAutoscaleOptions are an autoscale run's defaults: 10 pods of 8 GPUs
// (ten DGX nodes' worth) in gf-autoscale, scaled down again, 10 minutes.
func NewAutoscaleOptions() AutoscaleOptions {
	return AutoscaleOptions{workload.AutoscaleOptions{Pods: 10, GPUs: 8, Namespace: "gf-autoscale", Timeout: 20 * time.Minute, ScaleDown: true}}
}

// AutoscaleResult is an autoscale run's figures, the control plane's CPU
// during the scale-up included.
type AutoscaleResult struct {
	Run
	workload.AutoscaleResult
	// FreeGPUsBefore is what the fleet had free when the run began.
	FreeGPUsBefore int64 `json:"freeGpusBefore"`
	// ScaleUpCPU is each process's CPU seconds during the scale-up
	// (Karpenter's included), ScaleUpCores the total over its length.
	ScaleUpCPU   map[string]float64 `json:"scaleUpCpuSeconds"`
	ScaleUpCores float64            `json:"scaleUpCores"`
}

// Summary is the run in one line.
func (r AutoscaleResult) Summary() string {
	s := fmt.Sprintf("%d/%d running, %d nodes added in %.1fs (pod→Running on new nodes p50 %.1fs p99 %.1fs), %.2f cores",
		r.Running, r.Pods, r.NodesAdded, r.ScaleUpSeconds, r.NewNodePods.P50, r.NewNodePods.P99, r.ScaleUpCores)
	if r.ScaleDownSeconds > 0 {
		s += fmt.Sprintf("; %d removed in %.1fs", r.NodesRemoved, r.ScaleDownSeconds)
	}
	return s
}

// Autoscale runs an autoscale measurement on GhostFleet's own fleet,
// which must run Karpenter, and records it.
func Autoscale(ctx context.Context, env Env, o AutoscaleOptions) (AutoscaleResult, error) {
	if err := o.Check(); err != nil {
		return AutoscaleResult{}, err
	}
	if env.Target.Attached() {
		return AutoscaleResult{}, fmt.Errorf("autoscale runs on GhostFleet's own fleet brought up with --autoscaler karpenter, not on an attached cluster")
	}
	st, err := fleet.UpState(env.Target.Name)
	if err != nil {
		return AutoscaleResult{}, err
	}
	if st.Autoscaler == nil {
		return AutoscaleResult{}, fmt.Errorf("fleet %s runs no autoscaler: `ghostfleet clean` and `ghostfleet up --autoscaler karpenter` first", env.Target.Name)
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return AutoscaleResult{}, err
	}
	cfg, err := env.Target.RESTConfig()
	if err != nil {
		return AutoscaleResult{}, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return AutoscaleResult{}, err
	}
	o.RunID = NewID("autoscale")
	o.Report = env.reporter().Report
	if need := int64(o.Pods) * int64(o.GPUs); need <= capacity.FreeGPUs {
		env.warn("%d pods × %d GPUs fit the %d free GPUs: Karpenter will add no node", o.Pods, o.GPUs, capacity.FreeGPUs)
	}
	cpuBefore, err := fleet.ComponentCPU(env.Target.Name)
	if err != nil {
		return AutoscaleResult{}, err
	}
	started := time.Now().UTC()
	var cpu map[string]float64
	var cpuSeconds float64
	o.ScaledUp = func() {
		cpu, _ = fleet.CPUSince(env.Target.Name, cpuBefore)
		cpuSeconds = time.Since(started).Seconds()
	}
	res, err := workload.Autoscale(ctx, s.clients, dc, o.AutoscaleOptions)
	out := AutoscaleResult{AutoscaleResult: res, FreeGPUsBefore: capacity.FreeGPUs, ScaleUpCPU: cpu}
	upEnd := started.Add(time.Duration(res.ScaleUpSeconds * float64(time.Second)))
	for c, sec := range cpu {
		if c != fleet.SelfComponent && cpuSeconds > 0 {
			out.ScaleUpCores += sec / cpuSeconds
		}
	}
	rec := record.Record{ID: o.RunID, Kind: "autoscale", Started: started, Outcome: record.Outcome(ctx, err),
		Params: map[string]any{"options": o.AutoscaleOptions, "autoscaler": st.Autoscaler},
		Phases: []record.Phase{{Name: "scale-up", Start: started, End: upEnd}}, Result: out}
	if res.ScaleDownSeconds > 0 {
		rec.Phases = append(rec.Phases, record.Phase{Name: "scale-down", Start: upEnd, End: time.Now().UTC()})
	}
	run, werr := s.write(rec)
	out.Run = run
	out.Run.Left = res.Remaining
	if werr != nil {
		return out, werr
	}
	if err != nil && ctx.Err() != nil {
		return out, nil // interrupted: the outcome says so
	}
	return out, err
}

// MostFirst lists the processes of seconds by process (CPU, waits), the
// most first and equal ones by name, for printing.
func MostFirst(seconds map[string]float64) []string {
	names := slices.Collect(maps.Keys(seconds))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(seconds[b], seconds[a]), strings.Compare(a, b))
	})
	return names
}
