package runs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// TrainOptions ask for multi-node training jobs (see
// workload.TrainOptions, whose Validate checks them against the fleet).
type TrainOptions struct {
	workload.TrainOptions
	// GangMode says whether jobs are gang-scheduled: auto ("" too) when
	// the fleet's profile turns gang scheduling on, on (refused on a fleet
	// of GhostFleet's without it), or off.
	GangMode string `json:"gangMode,omitempty"`
	// Within keeps each gang's pods in one rack or one block (TopologyRack,
	// TopologyBlock); "" anywhere.
	Within string `json:"within,omitempty"`
}

// Gang modes and the topologies a gang may be kept within.
const (
	GangAuto      = "auto"
	GangOn        = "on"
	GangOff       = "off"
	TopologyRack  = "rack"
	TopologyBlock = "block"
)

// GangModes and Topologies are what --gang and --topology allow.
var (
	GangModes  = []string{GangAuto, GangOn, GangOff}
	Topologies = []string{TopologyRack, TopologyBlock}
)

// topologyLabels are the node labels a gang's pods share under --topology.
var topologyLabels = map[string]string{TopologyRack: fleet.LabelRack, TopologyBlock: fleet.LabelBlock}

// checkGang checks --gang and --topology (part of Check).
func (o *TrainOptions) checkGang() error {
	if o.GangMode != "" && !slices.Contains(GangModes, o.GangMode) {
		return fmt.Errorf("--gang %q: allowed are %s", o.GangMode, strings.Join(GangModes, ", "))
	}
	if o.Within != "" {
		if _, ok := topologyLabels[o.Within]; !ok {
			return fmt.Errorf("--topology %q: allowed are %s (each job's pods in one %s of nodes)", o.Within, strings.Join(Topologies, ", "), strings.Join(Topologies, " or "))
		}
		if o.GangMode == GangOff {
			return fmt.Errorf("--topology %s needs gang scheduling: it is a constraint of each job's PodGroup, and --gang off creates none", o.Within)
		}
	}
	return nil
}

// gang decides, from the fleet's profile, whether the run's jobs are
// gang-scheduled, or says why they cannot be. An attached cluster's
// settings are unknown: auto is off there, and on is taken at its word
// (a cluster without the API refuses the PodGroups).
func (o *TrainOptions) gang(env Env, s session) error {
	var p fleet.ComponentProfile
	known := false
	if !env.Target.Attached() {
		if s.settings == nil {
			return s.settingsErr
		}
		p, known = *s.settings, true
	}
	switch o.GangMode {
	case GangOff:
		o.Gang = false
	case GangOn:
		if known && !p.GangScheduling() {
			return fmt.Errorf("--gang on: fleet %s runs profile %s, without gang scheduling: bring a fleet up with --profile gang (or %s+gang)", env.Target.Name, p.Name, p.Name)
		}
		o.Gang = true
	default:
		o.Gang = known && p.GangScheduling()
	}
	if o.Within == "" {
		return nil
	}
	switch {
	case !o.Gang:
		return fmt.Errorf("--topology %s needs gang scheduling, which fleet %s's profile %s does not turn on: bring a fleet up with --profile gang (or %s+gang)", o.Within, env.Target.Name, s.profile, s.profile)
	case known && !p.TopologyAwareScheduling():
		return fmt.Errorf("--topology %s: fleet %s's profile %s does not turn on the %s feature gate", o.Within, env.Target.Name, p.Name, fleet.GateTopologyAware)
	}
	o.Topology = topologyLabels[o.Within]
	return nil
}

// NewTrainOptions are a training run's defaults, the same for the flags
// and the console's form: 100 jobs of 8 whole-DGX pods (8 GPUs) in
// gf-train, ending after 30s without progress or at 10 minutes.
func NewTrainOptions() TrainOptions {
	return TrainOptions{TrainOptions: workload.TrainOptions{
		Jobs: 100, PodsPerJob: 8, GPUsPerPod: 8, Namespace: "gf-train", Timeout: 10 * time.Minute, Stall: 30 * time.Second,
	}, GangMode: GangAuto}
}

// Training runs' outcomes besides Interrupted and TimedOut: every job
// started, or none progressed for the stall time.
const (
	AllStarted = "all started"
	Stalled    = "stalled"
)

// TrainResult is a training run's figures and its run; how it ended
// (AllStarted, Stalled, TimedOut, Interrupted or "failed: …") is the
// run's Outcome.
type TrainResult struct {
	Run
	workload.TrainResult
}

// meterSources are where a training run reads what its phases cost the
// control plane (TrainResult's ControllerManager, APIServer, Etcd,
// Scheduler and CPU): those components' /metrics, and GhostFleet's own
// fleet's processes. A source that cannot be read is left unset, with a
// warning naming why.
func meterSources(ctx context.Context, env Env, profile *fleet.ComponentProfile) workload.MeterSources {
	var s workload.MeterSources
	if !env.Target.Attached() {
		s.Cluster = env.Target.Name
		s.AuditLog = fleet.AuditLogPath(env.Target.Name)
		if profile != nil {
			s.SchedulerClient = workload.TokenBucket{QPS: profile.Scheduler.QPS, Burst: profile.Scheduler.Burst}
		}
		name := env.Target.Name
		s.EtcdTrace = func(ctx context.Context, d time.Duration) (io.ReadCloser, error) {
			return fleet.EtcdTrace(ctx, name, d)
		}
	}
	endpoints, err := fleet.MetricsEndpoints(ctx, env.Target)
	if err != nil {
		env.warn("the controller-manager's, apiserver's, etcd's and scheduler's figures per phase are not recorded: %v", err)
		return s
	}
	find := func(component, binary, unrecorded string) *metrics.Endpoint {
		for _, e := range endpoints {
			switch {
			case metrics.ComponentOfJob(e.Job) != component:
			case e.Hidden != "":
				env.warn("%s: %s", unrecorded, e.Hidden)
				return nil
			default:
				return &e
			}
		}
		env.warn("%s: %s has no %s /metrics", unrecorded, env.Target, binary)
		return nil
	}
	s.ControllerManager = find(metrics.ComponentControllerManager, "kube-controller-manager", workload.ControllerManagerUnrecorded)
	s.APIServer = find(metrics.ComponentAPIServer, "kube-apiserver", workload.APIServerUnrecorded)
	s.Etcd = find(metrics.ComponentEtcd, "etcd", workload.EtcdUnrecorded)
	s.Scheduler = find(metrics.ComponentScheduler, "kube-scheduler", workload.SchedulerUnrecorded)
	return s
}

// Summary is the training run in one line: how many jobs started, and
// the GPUs partly started jobs hold.
func (r TrainResult) Summary() string {
	s := fmt.Sprintf("%s: %d/%d jobs running, %d partly, %d not at all", r.Outcome, r.JobsStarted, r.Jobs, r.JobsPartial, r.JobsWaiting)
	if r.Gang {
		s += " (gang-scheduled)"
	}
	if r.StrandedGPUs > 0 {
		s += fmt.Sprintf("; %d GPUs stranded", r.StrandedGPUs)
	}
	return s
}

// Train creates the jobs, measures how they start and records the run.
// The jobs stay until `ghostfleet unload`. A run that stalls, times out
// or is interrupted returns its result and a nil error; one whose every
// job create failed is recorded, and returns its result and an error.
func Train(ctx context.Context, env Env, o TrainOptions) (TrainResult, error) {
	if err := o.Check(); err != nil {
		return TrainResult{}, err // before the cluster: the same answer up or not
	}
	if o.TraceEtcd > 0 && env.Target.Attached() {
		return TrainResult{}, fmt.Errorf("etcd trace %s is of GhostFleet's own fleets, whose etcd serves one: %s is attached (start its etcd with --enable-pprof and take /debug/pprof/trace yourself)", o.TraceEtcd, env.Target)
	}
	s, capacity, err := openWorkload(ctx, env)
	if err != nil {
		return TrainResult{}, err
	}
	if err := o.gang(env, s); err != nil {
		return TrainResult{}, err
	}
	o.RunID, o.Report = NewID("train"), env.reporter().Report
	warnings, err := o.Validate(capacity)
	if err != nil {
		return TrainResult{}, err
	}
	o.Meters = meterSources(ctx, env, s.settings)
	for _, w := range warnings {
		env.warn("%s", w)
	}
	res, rec, err := workload.Train(ctx, s.clients, o.TrainOptions)
	if err != nil && rec.Outcome == "" {
		return TrainResult{TrainResult: res}, err
	}
	run, werr := s.write(rec)
	out := TrainResult{Run: run, TrainResult: res}
	if werr != nil {
		return out, werr
	}
	if out.Outcome == Interrupted {
		out.Left = fmt.Sprintf("the run's jobs are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload", o.Namespace)
	}
	return out, err
}
