package workload

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// BenchFleet describes the throwaway fleet a benchmark runs on.
type BenchFleet struct {
	Cluster    string
	Nodes      int
	GPUProfile fleet.GPUProfile
	// GPUModel is how the nodes offer their GPUs (fleet.GPUModels; empty:
	// extended).
	GPUModel       string
	PrometheusPort int
	Binaries       binaries.Set
	Versions       binaries.Versions
	Report         progress.Func
}

// APFEvidence is what API Priority and Fairness did during a window, per
// priority level.
type APFEvidence struct {
	Rejected   map[string]float64 `json:"rejected"`   // requests rejected (429)
	MaxInQueue map[string]float64 `json:"maxInQueue"` // most requests queued at once
}

// up creates the benchmark's fleet with profile and its nodes, and waits
// until they are all schedulable.
func (b BenchFleet) up(ctx context.Context, profile fleet.ComponentProfile) (fleet.Target, fleet.ScaleResult, error) {
	if fleet.Exists(ctx, b.Cluster) {
		return fleet.Target{}, fleet.ScaleResult{}, fmt.Errorf("cluster %q exists; the benchmark needs that name for its throwaway clusters: `ghostfleet clean --name %s`", b.Cluster, b.Cluster)
	}
	done := progress.Step(b.Report, "bench-up", fmt.Sprintf("fresh fleet %s: %d %s nodes, profile %s, until every node is schedulable", b.Cluster, b.Nodes, b.GPUProfile.Name, profile.Name), 0)
	defer done()
	_, err := fleet.Up(ctx, fleet.UpOptions{
		Name: b.Cluster, Profile: profile, PrometheusPort: b.PrometheusPort, Versions: b.Versions, Report: progress.Discard,
		Binaries: func(context.Context) (binaries.Set, error) { return b.Binaries, nil },
	})
	if err != nil {
		return fleet.Target{}, fleet.ScaleResult{}, err
	}
	t := fleet.Own(b.Cluster)
	cs, err := t.Clientset(true)
	if err != nil {
		return t, fleet.ScaleResult{}, err
	}
	sr, err := fleet.Scale(ctx, cs, fleet.ScaleOptions{Count: b.Nodes, Profile: b.GPUProfile, GPUModel: b.GPUModel, WaitReady: true})
	return t, sr, err
}

func (b BenchFleet) prometheusURL() string {
	return fleet.State{PrometheusPort: b.PrometheusPort}.PrometheusURL()
}

// apf asks Prometheus what APF did between start and end (after one more
// scrape has landed).
func (b BenchFleet) apf(ctx context.Context, start, end time.Time) (APFEvidence, error) {
	at := end.Add(15 * time.Second)
	if wait := time.Until(at); wait > 0 {
		select {
		case <-ctx.Done():
			return APFEvidence{}, ctx.Err()
		case <-time.After(wait):
		}
	}
	prom, err := metrics.NewPrometheus(b.prometheusURL())
	if err != nil {
		return APFEvidence{}, err
	}
	w := int(math.Ceil(at.Sub(start).Seconds()))
	var ev APFEvidence
	if ev.Rejected, err = prom.ByLabel(ctx, fmt.Sprintf(`sum by (priority_level) (increase(apiserver_flowcontrol_rejected_requests_total[%ds]))`, w), "priority_level", at); err != nil {
		return ev, err
	}
	ev.MaxInQueue, err = prom.ByLabel(ctx, fmt.Sprintf(`max by (priority_level) (max_over_time(apiserver_flowcontrol_current_inqueue_requests[%ds]))`, w), "priority_level", at)
	return ev, err
}

// LoadTrial is one profile's load run in a load benchmark.
type LoadTrial struct {
	Profile string             `json:"profile"`
	Result  LoadResult         `json:"result"`
	CPU     map[string]float64 `json:"cpuSeconds"` // per component, during the run
	// CPUPerPod is CPU milliseconds per scheduled pod, per component, and
	// ControlPlanePerPod their sum over the control plane and kwok (not
	// GhostFleet's own process).
	CPUPerPod          map[string]float64 `json:"cpuMsPerPod"`
	ControlPlanePerPod float64            `json:"controlPlaneCpuMsPerPod"`
	APF                APFEvidence        `json:"apf"`
	// PeakRSS is each component's peak resident memory in MiB over its
	// fresh fleet's life, read when the load ended.
	PeakRSS map[string]float64 `json:"peakRssMiB,omitempty"`
	// NodesReadySeconds and NodesSchedulableSeconds are how long the
	// fresh fleet's nodes took, from the start of their scale, to be
	// Ready and then schedulable (the node lifecycle controller lifting
	// the not-ready taint); the load starts after both.
	NodesReadySeconds       float64 `json:"nodesReadySeconds,omitempty"`
	NodesSchedulableSeconds float64 `json:"nodesSchedulableSeconds,omitempty"`
}

// ControlPlane are the processes whose CPU a pod costs the fleet.
var ControlPlane = []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok-controller"}

// perPod divides each component's CPU seconds by pods, in milliseconds,
// and sums the control plane's.
func perPod(cpu map[string]float64, pods int) (map[string]float64, float64) {
	out := map[string]float64{}
	if pods == 0 {
		return out, 0
	}
	total := 0.0
	for c, s := range cpu {
		out[c] = 1000 * s / float64(pods)
	}
	for _, c := range ControlPlane {
		total += out[c]
	}
	return out, total
}

// LoadBench compares component profiles on the same load, each on a fresh
// fleet, in one run.
type LoadBench struct {
	Nodes      int    `json:"nodes"`
	Pods       int    `json:"pods"`
	GPUsPerPod int    `json:"gpusPerPod"`
	Mode       string `json:"mode"`
	// GPUModel and Claim say how GPUs were offered and asked for.
	GPUModel string      `json:"gpuModel,omitempty"`
	Claim    string      `json:"claim,omitempty"`
	Started  time.Time   `json:"started"`
	Trials   []LoadTrial `json:"trials"`
	// ThroughputRatio is the last profile's pods/s over the first's.
	ThroughputRatio float64 `json:"throughputRatio"`
}

// BenchLoad runs load once per profile.
func BenchLoad(ctx context.Context, b BenchFleet, profiles []fleet.ComponentProfile, opts LoadOptions) (LoadBench, error) {
	out := LoadBench{Nodes: b.Nodes, Pods: opts.Pods, GPUsPerPod: opts.GPUs, Mode: opts.Mode, GPUModel: b.GPUModel, Claim: opts.Claim, Started: time.Now().UTC()}
	for _, profile := range profiles {
		trial, err := loadTrial(ctx, b, profile, opts)
		if derr := fleet.Delete(context.WithoutCancel(ctx), b.Cluster, progress.Discard); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			return out, fmt.Errorf("profile %s: %w", profile.Name, err)
		}
		out.Trials = append(out.Trials, trial)
	}
	if n := len(out.Trials); n > 1 && out.Trials[0].Result.PodsPerSecond > 0 {
		out.ThroughputRatio = out.Trials[n-1].Result.PodsPerSecond / out.Trials[0].Result.PodsPerSecond
	}
	return out, nil
}

func loadTrial(ctx context.Context, b BenchFleet, profile fleet.ComponentProfile, opts LoadOptions) (LoadTrial, error) {
	t, sr, err := b.up(ctx, profile)
	if err != nil {
		return LoadTrial{}, err
	}
	clients, err := NewClients(t)
	if err != nil {
		return LoadTrial{}, err
	}
	before, err := fleet.ComponentCPU(b.Cluster)
	if err != nil {
		return LoadTrial{}, err
	}
	opts.RunID = "bench-load-" + profile.Name
	opts.PrometheusURL = b.prometheusURL()
	opts.Report = b.Report
	opts.Limits = LimitsOf(profile)
	start := time.Now()
	res, _, err := Load(ctx, clients, opts)
	if err != nil {
		return LoadTrial{}, err
	}
	trial := LoadTrial{Profile: profile.Name, Result: res,
		NodesReadySeconds: sr.ReadyTime.Seconds(), NodesSchedulableSeconds: sr.SchedulableTime.Seconds()}
	if trial.CPU, err = fleet.CPUSince(b.Cluster, before); err != nil {
		return trial, err
	}
	trial.CPUPerPod, trial.ControlPlanePerPod = perPod(trial.CPU, res.Scheduled)
	if trial.PeakRSS, err = fleet.PeakRSS(b.Cluster); err != nil {
		return trial, err
	}
	trial.APF, err = b.apf(ctx, start, time.Now())
	return trial, err
}

// ChurnTrial is one rate of a churn benchmark.
type ChurnTrial struct {
	Rate   float64            `json:"rate"`
	Result ChurnResult        `json:"result"`
	CPU    map[string]float64 `json:"cpuSeconds"`
	// CPUPerPod is per pod created (each also deleted): see LoadTrial.
	CPUPerPod          map[string]float64 `json:"cpuMsPerPod"`
	ControlPlanePerPod float64            `json:"controlPlaneCpuMsPerPod"`
	APF                APFEvidence        `json:"apf"`
}

// ChurnBench is churn at several rates on one fresh fleet.
type ChurnBench struct {
	Nodes    int          `json:"nodes"`
	Profile  string       `json:"profile"`
	Duration float64      `json:"durationSeconds"`
	Started  time.Time    `json:"started"`
	Trials   []ChurnTrial `json:"trials"`
}

// BenchChurn runs churn at each rate in turn on one fresh fleet.
func BenchChurn(ctx context.Context, b BenchFleet, profile fleet.ComponentProfile, rates []float64, opts ChurnOptions) (out ChurnBench, err error) {
	out = ChurnBench{Nodes: b.Nodes, Profile: profile.Name, Duration: opts.Duration.Seconds(), Started: time.Now().UTC()}
	t, _, err := b.up(ctx, profile)
	defer func() {
		if derr := fleet.Delete(context.WithoutCancel(ctx), b.Cluster, progress.Discard); derr != nil && err == nil {
			err = derr
		}
	}()
	if err != nil {
		return out, err
	}
	clients, err := NewClients(t)
	if err != nil {
		return out, err
	}
	if err := EnsureNamespace(ctx, clients.Admin, opts.Namespace); err != nil {
		return out, err
	}
	for _, rate := range rates {
		load, counter, err := clients.LoadClientset(opts.Namespace)
		if err != nil {
			return out, err
		}
		o := opts
		o.Rate, o.RunID, o.Report, o.Requests = rate, fmt.Sprintf("bench-churn-%g", rate), b.Report, counter
		c, err := NewChurn(NewPodAPI(load, o.Namespace), o)
		if err != nil {
			return out, err
		}
		before, err := fleet.ComponentCPU(b.Cluster)
		if err != nil {
			return out, err
		}
		done := progress.Step(b.Report, "churn", fmt.Sprintf("churn at %g pods/s for %s", rate, o.Duration), 0)
		start := time.Now()
		res, err := c.Run(ctx)
		done()
		if err != nil {
			return out, err
		}
		trial := ChurnTrial{Rate: rate, Result: res}
		if trial.CPU, err = fleet.CPUSince(b.Cluster, before); err != nil {
			return out, err
		}
		trial.CPUPerPod, trial.ControlPlanePerPod = perPod(trial.CPU, res.Created)
		if trial.APF, err = b.apf(ctx, start, time.Now()); err != nil {
			return out, err
		}
		out.Trials = append(out.Trials, trial)
		if err := Cleanup(context.WithoutCancel(ctx), clients.Admin, o.Namespace, o.RunID); err != nil {
			return out, err
		}
		if res.Interrupted {
			return out, ctx.Err()
		}
	}
	return out, nil
}
