package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// HPAKind is the record kind of an HPA run.
const HPAKind = "hpa"

// HPAOptions ask for an HPA run (see workload.HPAOptions).
type HPAOptions struct {
	workload.HPAOptions
}

// DefaultHPASteps is the default load: idle for a minute, above the
// target for two, idle for two.
const DefaultHPASteps = "100m:60s,900m:120s,100m:120s"

// NewHPAOptions are an HPA run's defaults, the same for the flags and the
// console: 1-10 replicas of 1-GPU pods requesting 1 CPU and 4Gi in
// gf-hpa, target 50 % CPU, DefaultHPASteps, and a 60 s scale-down window
// instead of Kubernetes' 5 minutes so the last step shows the way down.
func NewHPAOptions() HPAOptions {
	steps, _ := workload.ParseHPASteps(DefaultHPASteps)
	return HPAOptions{workload.HPAOptions{
		Namespace: "gf-hpa", GPUsPerPod: 1, CPURequest: "1", MemoryRequest: "4Gi",
		TargetCPU: 50, MinReplicas: 1, MaxReplicas: 10, Steps: steps,
		ScaleDownWindow: time.Minute,
	}}
}

// Validate checks the options without the cluster.
func (o HPAOptions) Validate() error { return o.Check() }

// HPAResult is an HPA run's figures and its run.
type HPAResult struct {
	Run
	workload.HPAResult
}

// Summary is the run in one line: the replicas each step ended at and
// the times to scale up and down.
func (r HPAResult) Summary() string {
	var steps []string
	for _, s := range r.Steps {
		steps = append(steps, fmt.Sprintf("%s→%d", s.CPU, s.To))
	}
	return fmt.Sprintf("hpa %s: replicas %s; scale up %s, down %s; control plane %.2f cores",
		r.Deployment, strings.Join(steps, " "), seconds(r.ScaleUpSeconds), seconds(r.ScaleDownSeconds), r.ControlPlaneCores)
}

func seconds(s *float64) string {
	if s == nil {
		return "–"
	}
	return fmt.Sprintf("%.0fs", *s)
}

// HPA checks the fleet (fake GPU nodes, metrics-server serving
// metrics.k8s.io) before creating anything, then runs the scenario and
// records it. The Deployment and HPA stay until `ghostfleet unload`.
func HPA(ctx context.Context, env Env, o HPAOptions) (HPAResult, error) {
	if err := o.Check(); err != nil {
		return HPAResult{}, err
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return HPAResult{}, err
	}
	if err := fleet.MetricsAvailable(ctx, s.clients.Admin); err != nil {
		fix := "metrics-server cannot be added to a running fleet: `ghostfleet clean --name " + env.Target.Name + "`, then `ghostfleet up --name " + env.Target.Name + " --metrics-server`"
		if env.Target.Attached() {
			fix = "install metrics-server on the cluster"
		}
		return HPAResult{}, fmt.Errorf("%s has no metrics-server, so an HPA has no CPU figures (%v): %s", s.cluster(), err, fix)
	}
	if int64(o.GPUsPerPod) > capacity.MaxNodeGPUs {
		return HPAResult{}, fmt.Errorf("--gpus %d is out of range: allowed are 1-%d (the largest node)", o.GPUsPerPod, capacity.MaxNodeGPUs)
	}
	if need := int64(o.MaxReplicas) * int64(o.GPUsPerPod); need > capacity.FreeGPUs {
		env.warn("--max-replicas %d × %d GPUs need %d GPUs; %d are free: replicas past that stay Pending", o.MaxReplicas, o.GPUsPerPod, need, capacity.FreeGPUs)
	}
	o.RunID, o.Report = NewID(HPAKind), env.reporter().Report
	if !env.Target.Attached() {
		name := env.Target.Name
		o.CPU = func() (map[string]time.Duration, error) { return fleet.ComponentCPU(name) }
	}
	res, rec, err := workload.HPARun(ctx, s.clients, o.HPAOptions)
	if err != nil && rec.Outcome == "" {
		return HPAResult{HPAResult: res}, err
	}
	run, werr := s.write(rec)
	out := HPAResult{Run: run, HPAResult: res}
	if werr != nil {
		return out, werr
	}
	if out.Outcome != Completed {
		out.Left = fmt.Sprintf("Deployment and HPA %s are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.RunID, o.Namespace)
	}
	return out, err
}
