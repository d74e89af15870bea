package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/config"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// BindAddress is where every component listens: never beyond this host.
const BindAddress = "127.0.0.1"

// kwokParallelism is how many nodes (and pods) the kwok controller works
// on at once.
const kwokParallelism = 32

// DefaultPrometheusPort is Prometheus's conventional port.
const DefaultPrometheusPort = 9090

// State is what GhostFleet records about a cluster it created, next to
// kwok's own files in the cluster's folder.
type State struct {
	Name           string            `json:"name"`
	Profile        string            `json:"profile"`
	PrometheusPort int               `json:"prometheusPort"`
	Versions       binaries.Versions `json:"versions"` // the pinned set: it keys the binary cache
	// DebianPrometheus is the release of Debian's Prometheus when the
	// fleet runs that one instead of the pinned build ("v2.42.0").
	DebianPrometheus string `json:"debianPrometheus,omitempty"`
	// PrometheusPending is set on a fleet that came up before its
	// Prometheus was built (UpOptions.PrometheusLater): PrometheusPort is
	// recorded for it, nothing answers there yet, and AddPrometheus (which
	// `up` and the console call) starts it.
	PrometheusPending bool      `json:"prometheusPending,omitempty"`
	Created           time.Time `json:"created"`
	// MetricsServer is set on fleets that run metrics-server.
	MetricsServer bool `json:"metricsServer,omitempty"`
	// Autoscaler is set on fleets whose nodes Karpenter adds and removes.
	Autoscaler *AutoscalerState `json:"autoscaler,omitempty"`
	// CPULimits are the profile's, in cores by component (see limitCPU).
	CPULimits map[string]float64 `json:"cpuLimits,omitempty"`
}

// RunningVersions are the releases the fleet runs, for people and
// records (not for the cache): Versions, with Debian's Prometheus named
// where the fleet runs it.
func (s State) RunningVersions() binaries.Versions {
	v := s.Versions
	if s.DebianPrometheus != "" {
		v.Prometheus = s.DebianPrometheus + " (Debian's package)"
	}
	return v
}

// PrometheusURL is where the cluster's Prometheus answers; empty for a
// fleet up with --prometheus-port 0, which has none (runs then judge
// without it, as on an attached cluster without --prometheus-url).
func (s State) PrometheusURL() string {
	if s.PrometheusPort == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(BindAddress, strconv.Itoa(s.PrometheusPort))
}

func statePath(name string) string { return filepath.Join(clusterWorkdir(name), "ghostfleet.json") }

// UpState reads the state of GhostFleet's fleet name, or says that it is
// not up and what to do.
func UpState(name string) (State, error) {
	st, err := LoadState(name)
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", name)
	}
	return st, err // a state that cannot be read says why
}

// LoadState reads the recorded state of the cluster called name.
func LoadState(name string) (State, error) {
	data, err := os.ReadFile(statePath(name))
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", statePath(name), err)
	}
	return s, nil
}

func saveState(s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(s.Name) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(s.Name))
}

// UpOptions configures Up.
type UpOptions struct {
	Name           string
	Profile        ComponentProfile
	PrometheusPort int // 0: no Prometheus
	// PrometheusLater brings the fleet up without Prometheus, on the port
	// recorded for it (State.PrometheusPending): for a first run, whose
	// console reads the components directly while Prometheus builds.
	// Binaries then need not resolve it.
	PrometheusLater bool
	// Binaries finds (or builds) the binaries; Up calls it only when a
	// cluster is to be created, after its other checks passed, so that bad
	// input fails before a build of several minutes.
	Binaries func(context.Context) (binaries.Set, error)
	Versions binaries.Versions
	// Stages are a user's kwok stages (LoadStageFile): added to
	// GhostFleet's, or replacing those of the same name, at creation;
	// installed over what runs on a fleet that is already up.
	Stages []*v1alpha1.Stage
	// MetricsServer runs metrics-server (Binaries must then resolve
	// binaries.MetricsServer) and serves metrics.k8s.io from the pods'
	// emulated usage (see InstallMetricsServer).
	MetricsServer bool
	// Autoscaler, when set, runs Karpenter's kwok provider with these
	// NodePools (Binaries must then resolve binaries.Karpenter); Up
	// fills in its binary and ports.
	Autoscaler []NodePoolSpec
	Report     progress.Func
}

// ErrProfileMismatch is returned when a running fleet has another profile.
var ErrProfileMismatch = errors.New("profile mismatch")

// UpResult says what Up found or did.
type UpResult struct {
	State     State
	AlreadyUp bool
	Restarted bool
	// PrometheusAdded: the fleet had come up without its Prometheus
	// (PrometheusLater), and this Up added it.
	PrometheusAdded bool
}

// Exists reports whether a cluster called name has been created.
func Exists(ctx context.Context, name string) bool {
	_, err := loadRuntime(ctx, name)
	return err == nil
}

// Running reports whether the cluster's components are all running.
func Running(ctx context.Context, name string) (bool, error) {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return false, err
	}
	return rt.Ready(ctx)
}

// Up creates and starts the cluster, or starts it again when its processes
// are gone, or does nothing when it is already running. A cluster that
// fails half-way through creation is deleted again, so nothing is left
// half-created.
func Up(ctx context.Context, opts UpOptions) (UpResult, error) {
	report := opts.Report
	if report == nil {
		report = progress.Discard
	}
	if Exists(ctx, opts.Name) {
		return resume(ctx, opts, report)
	}
	if opts.PrometheusPort != 0 {
		if err := PortFree(opts.PrometheusPort); err != nil {
			return UpResult{}, fmt.Errorf("prometheus port: %w; choose another with --prometheus-port", err)
		}
	}
	if err := checkUserKwokConfig(ctx, opts.Profile); err != nil {
		return UpResult{}, err
	}
	if err := checkCPULimits(opts.Profile); err != nil {
		return UpResult{}, err
	}
	set, err := opts.Binaries(ctx)
	if err != nil {
		return UpResult{}, err
	}
	schedulerConfig, err := writeSchedulerConfig(opts.Name, opts.Profile)
	if err != nil {
		return UpResult{}, fmt.Errorf("writing the scheduler's configuration: %w", err)
	}
	auditPolicy, err := writeAuditPolicy(opts.Name, opts.Profile)
	if err != nil {
		return UpResult{}, fmt.Errorf("writing the apiserver's audit policy: %w", err)
	}
	recordedProfile, err := recordProfile(opts.Name, opts.Profile)
	if err != nil {
		return UpResult{}, fmt.Errorf("keeping profile file %s with the cluster: %w", opts.Profile.Source, err)
	}

	state := State{Name: opts.Name, Profile: opts.Profile.Name, PrometheusPort: opts.PrometheusPort,
		PrometheusPending: opts.PrometheusLater && opts.PrometheusPort != 0,
		MetricsServer:     opts.MetricsServer, CPULimits: opts.Profile.CPULimits, Versions: opts.Versions, Created: time.Now().UTC()}
	if p := set[binaries.Prometheus]; p.Source == binaries.SourceDebian {
		state.DebianPrometheus = p.Version
	}
	if len(opts.Autoscaler) > 0 {
		a, err := NewAutoscalerState(set.Path(binaries.Karpenter), opts.Autoscaler)
		if err == nil {
			err = prepareKarpenter(opts.Name, a)
		}
		if err != nil {
			_ = os.RemoveAll(clusterWorkdir(opts.Name)) // only our files are in it yet
			return UpResult{}, fmt.Errorf("setting up Karpenter: %w", err)
		}
		state.Autoscaler = &a
	}
	done := progress.Step(report, "create", "creating cluster "+opts.Name+" (kwok binary runtime, profile "+opts.Profile.Name+")", 20*time.Second)
	err = kwokctl(ctx, report, func(ctx context.Context) error {
		conf := config.GetKwokctlConfiguration(ctx)
		o := &conf.Options
		o.Runtime = "binary"
		o.BindAddress = BindAddress
		o.KubeApiserverBinary = set.Path(binaries.KubeApiserver)
		o.KubeControllerManagerBinary = set.Path(binaries.KubeControllerManager)
		o.KubeSchedulerBinary = set.Path(binaries.KubeScheduler)
		o.EtcdBinary = set.Path(binaries.Etcd)
		o.KwokControllerBinary = set.Path(binaries.Kwok)
		if !state.PrometheusPending {
			o.PrometheusBinary = set.Path(binaries.Prometheus)
			o.PrometheusPort = uint32(opts.PrometheusPort)
		}
		if opts.MetricsServer {
			enableMetricsServer(o, set.Path(binaries.MetricsServer))
		}
		if a := state.Autoscaler; a != nil {
			conf.Components = append(conf.Components, karpenterComponent(clusterWorkdir(opts.Name), *a))
		}
		if q := opts.Profile.Etcd.QuotaBackendBytes; q > 0 {
			o.EtcdQuotaBackendSize = strconv.FormatInt(q, 10)
		}
		if d := opts.Profile.Kwok.NodeLeaseDurationSeconds; d > 0 {
			o.NodeLeaseDurationSeconds = uint(d)
			o.KubeControllerManagerNodeMonitorGracePeriodMilliseconds = int64(d) * 1000
		}
		// Stages are resources GhostFleet installs (see Stages); Metric
		// and ClusterResourceUsage serve the DCGM series (see InstallDCGM).
		for _, kind := range []string{v1alpha1.StageKind, v1alpha1.MetricKind, v1alpha1.ClusterResourceUsageKind} {
			if !slices.Contains(o.EnableCRDs, kind) {
				o.EnableCRDs = append(o.EnableCRDs, kind)
			}
		}
		// The scheduler's settings go in its configuration file: its flags
		// for them are deprecated, and ignored next to a file.
		o.KubeSchedulerConfig = schedulerConfig
		if auditPolicy != "" { // else a kwok.yaml's stands
			o.KubeAuditPolicy = auditPolicy
		}
		conf.ComponentsPatches = append(conf.ComponentsPatches, opts.Profile.patches()...)
		conf.ComponentsPatches = append(conf.ComponentsPatches, instrumentPatches...)
		conf.ComponentsPatches = append(conf.ComponentsPatches, singleInstancePatches...)
		// The simulator must never be the bottleneck: kwok's default of 4
		// workers per stage lags behind a fleet created in two seconds,
		// where 1,000 real kubelets would each work on their own node.
		k := &config.GetKwokConfiguration(ctx).Options
		k.NodePlayStageParallelism = kwokParallelism
		k.PodPlayStageParallelism = kwokParallelism
		k.NodeLeaseParallelism = kwokParallelism
		return nil
	}, "create", "cluster", "--name", opts.Name, "--kubeconfig", "", "--wait", "3m")
	done()
	if err == nil {
		err = restrictSecrets(clusterWorkdir(opts.Name))
	}
	if err == nil {
		err = setUpStages(ctx, opts.Name, opts.Stages, report)
	}
	if err == nil && state.Autoscaler != nil {
		err = installKarpenterCRDsOn(ctx, opts.Name, *state.Autoscaler)
	}
	if err == nil {
		err = saveState(state)
	}
	if err == nil {
		err = limitCPU(opts.Name, "")
	}
	if err != nil {
		cause := err
		if ctx.Err() != nil {
			cause = fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if derr := Delete(context.WithoutCancel(ctx), opts.Name, report); derr != nil {
			return UpResult{}, fmt.Errorf("creating cluster %s: %w; removing the partly created cluster also failed: %v (run `ghostfleet clean`)", opts.Name, cause, derr)
		}
		// kwokctl removes the cluster's folder once it has saved its
		// configuration there; before that only our file is in it.
		_ = os.Remove(schedulerConfig)
		if auditPolicy != "" {
			_ = os.Remove(auditPolicy)
		}
		if recordedProfile != "" {
			_ = os.Remove(recordedProfile)
		}
		_ = os.Remove(filepath.Dir(schedulerConfig))
		return UpResult{}, fmt.Errorf("creating cluster %s: %w; the partly created cluster was removed", opts.Name, cause)
	}
	// Karpenter, started by kwokctl before the apiserver answered, exits
	// at once: it is (re)started with its CRDs before WaitReady waits for
	// Prometheus to scrape it.
	if a := state.Autoscaler; a != nil {
		if err := InstallKarpenter(ctx, opts.Name, *a, true, report); err != nil {
			return UpResult{State: state}, err
		}
	}
	if err := WaitReady(ctx, opts.Name, state, report); err != nil {
		return UpResult{State: state}, err
	}
	if opts.MetricsServer {
		if err := InstallMetricsServer(ctx, opts.Name, report); err != nil {
			return UpResult{State: state}, err
		}
	}
	return UpResult{State: state}, nil
}

// enableMetricsServer has kwokctl run metrics-server from binary. Its
// manifest (kwokctl would download metrics-server's components.yaml) is
// left out: InstallMetricsServer installs the APIService itself.
func enableMetricsServer(o *internalversion.KwokctlConfigurationOptions, binary string) {
	if !slices.Contains(o.Enable, binaries.MetricsServer) {
		o.Enable = append(o.Enable, binaries.MetricsServer)
	}
	o.MetricsServerBinary = binary
	o.MetricsServerManifests = nil
}

func resume(ctx context.Context, opts UpOptions, report progress.Func) (UpResult, error) {
	state, err := LoadState(opts.Name)
	if err != nil {
		return UpResult{}, fmt.Errorf("cluster %s exists but was not created by GhostFleet (%v): remove it with `ghostfleet clean --name %s`", opts.Name, err, opts.Name)
	}
	if opts.MetricsServer && !state.MetricsServer {
		return UpResult{State: state}, fmt.Errorf("fleet %s is up without metrics-server, which kwokctl cannot add to a running cluster: run `ghostfleet clean --name %s` and then `ghostfleet up --metrics-server`", opts.Name, opts.Name)
	}
	if err := sameAutoscaler(opts, state); err != nil {
		return UpResult{State: state}, err
	}
	if state.Profile != opts.Profile.Name {
		return UpResult{State: state}, fmt.Errorf("%w: fleet %s is up with profile %q, not %q: run `ghostfleet clean` and then `ghostfleet up --profile %s`",
			ErrProfileMismatch, opts.Name, state.Profile, opts.Profile.Name, opts.Profile.Name)
	}
	// Fleets made before GhostFleet closed their keys get closed here.
	if err := restrictSecrets(clusterWorkdir(opts.Name)); err != nil {
		return UpResult{State: state}, fmt.Errorf("restricting cluster %s's keys to their owner: %w", opts.Name, err)
	}
	running, err := Running(ctx, opts.Name)
	if err != nil {
		return UpResult{}, err
	}
	if running {
		res := UpResult{State: state, AlreadyUp: true}
		err := errors.Join(limitCPU(opts.Name, ""), installOnRunning(ctx, opts, &res, report))
		return res, err
	}
	done := progress.Step(report, "start", "starting the stopped processes of cluster "+opts.Name, 10*time.Second)
	err = kwokctl(ctx, report, nil, "start", "cluster", "--name", opts.Name)
	done()
	// Started or not, what runs is put within its CPU limit.
	if err = errors.Join(err, limitCPU(opts.Name, "")); err != nil {
		return UpResult{State: state}, fmt.Errorf("starting cluster %s: %w", opts.Name, err)
	}
	if err := WaitReady(ctx, opts.Name, state, report); err != nil {
		return UpResult{State: state, Restarted: true}, err
	}
	res := UpResult{State: state, Restarted: true}
	err = installOnRunning(ctx, opts, &res, report)
	return res, err
}

// installOnRunning installs over a fleet that is up what `up` asks for:
// the user's stages, the Prometheus it came up without (unless `up` asks
// for later again), and on a fleet with metrics-server its objects again
// (creating them is idempotent, and puts back what someone deleted).
func installOnRunning(ctx context.Context, opts UpOptions, res *UpResult, report progress.Func) error {
	if err := installUserStages(ctx, opts, report); err != nil {
		return err
	}
	state := &res.State
	if state.PrometheusPending && !opts.PrometheusLater {
		set, err := opts.Binaries(ctx)
		if err != nil {
			return err
		}
		if *state, err = AddPrometheus(ctx, opts.Name, set[binaries.Prometheus], report); err != nil {
			return err
		}
		res.PrometheusAdded = true
	}
	if state.MetricsServer {
		if err := InstallMetricsServer(ctx, opts.Name, report); err != nil {
			return err
		}
	}
	if a := state.Autoscaler; a != nil {
		return InstallKarpenter(ctx, opts.Name, *a, false, report)
	}
	return nil
}

// installUserStages installs the user's stages on a fleet that is up.
func installUserStages(ctx context.Context, opts UpOptions, report progress.Func) error {
	if len(opts.Stages) == 0 {
		return nil
	}
	cfg, err := Own(opts.Name).RESTConfig()
	if err != nil {
		return err
	}
	done := progress.Step(report, "stages", fmt.Sprintf("installing %d kwok stages from --stage-file", len(opts.Stages)), 0)
	defer done()
	return installStages(ctx, cfg, opts.Stages)
}

// setUpStages installs GhostFleet's kwok stages, with the user's in, once
// the Stage resource is served.
func setUpStages(ctx context.Context, name string, user []*v1alpha1.Stage, report progress.Func) error {
	conf, err := fleetConfig(ctx, name)
	if err != nil {
		return err
	}
	stages, err := Stages(conf.Options.NodeStatusUpdateFrequencyMilliseconds)
	if err != nil {
		return err
	}
	if stages, err = MergeStages(stages, user); err != nil {
		return err
	}
	cfg, err := Own(name).RESTConfig()
	if err != nil {
		return err
	}
	done := progress.Step(report, "stages", fmt.Sprintf("installing %d kwok stages (node and pod lifecycle)", len(stages)), 0)
	defer done()
	var lastErr error
	err = poll(ctx, time.Minute, func() (bool, error) {
		lastErr = installStages(ctx, cfg, stages)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", err, lastErr)
	}
	return nil
}

// WaitReady waits for the apiserver's /readyz and for Prometheus to report
// every scrape target up.
func WaitReady(ctx context.Context, name string, state State, report progress.Func) error {
	cs, err := Own(name).Clientset(false)
	if err != nil {
		return err
	}
	done := progress.Step(report, "readyz", "waiting for kube-apiserver /readyz", 10*time.Second)
	var lastErr error
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		var body []byte
		body, lastErr = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return lastErr == nil && string(body) == "ok", nil
	})
	done()
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w (last answer: %v; logs: %s)", err, lastErr, filepath.Join(clusterWorkdir(name), "logs"))
	}
	// kwokctl starts Karpenter with the rest, and it exits when the
	// apiserver does not answer yet: started again now, before
	// Prometheus is asked to scrape it.
	if a := state.Autoscaler; a != nil && !karpenterReady(ctx, *a) {
		if err := InstallKarpenter(ctx, name, *a, true, report); err != nil {
			return err
		}
	}
	// So does metrics-server: started again now if it has.
	if state.MetricsServer {
		conf, err := fleetConfig(ctx, name)
		if err != nil {
			return err
		}
		if err := ensureMetricsServer(ctx, name, int(conf.Options.MetricsServerPort), report); err != nil {
			return err
		}
	}
	return waitTargets(ctx, state, report)
}

// waitTargets waits for the fleet's Prometheus, if it has one running, to
// report every scrape target up.
func waitTargets(ctx context.Context, state State, report progress.Func) error {
	if state.PrometheusPort == 0 || state.PrometheusPending {
		return nil
	}
	prom, err := metrics.NewPrometheus(state.PrometheusURL())
	if err != nil {
		return err
	}
	done := progress.Step(report, "targets", "waiting for Prometheus at "+state.PrometheusURL()+" to scrape every component", 30*time.Second)
	var last []metrics.Target
	err = poll(ctx, 3*time.Minute, func() (bool, error) {
		targets, err := prom.Targets(ctx)
		if err != nil || len(targets) == 0 {
			return false, nil
		}
		last = targets
		up := 0
		for _, t := range targets {
			if t.Up() {
				up++
			}
		}
		report(progress.Event{Kind: progress.Update, Step: "targets", Done: up, Total: len(targets)})
		return up == len(targets), nil
	})
	done()
	if err != nil {
		for _, t := range last {
			if !t.Up() {
				msg := fmt.Sprintf("target %s (%s) is %s: %s", t.Job, t.URL, t.Health, t.LastError)
				if _, ok := componentPID(state.Name, t.Job); ok && !componentAlive(state.Name, t.Job) {
					msg += fmt.Sprintf("; its process has exited: %s (its log: %s)", lastLogLine(state.Name, t.Job), componentLog(state.Name, t.Job))
				}
				report(progress.Event{Kind: progress.Warn, Message: msg})
			}
		}
		return fmt.Errorf("prometheus targets did not all come up: %w", err)
	}
	return nil
}

// Delete stops and removes the cluster and all its processes. Results and
// the binary cache are elsewhere and stay.
func Delete(ctx context.Context, name string, report progress.Func) error {
	if Exists(ctx, name) {
		if err := kwokctl(ctx, report, nil, "delete", "cluster", "--name", name); err != nil {
			return err
		}
	}
	// Also for a fleet already gone: a clean that failed here before
	// is taken up again.
	return removeCPULimits(name)
}

// PortFree reports an error when something already listens on the port.
func PortFree(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is out of range: allowed are 1-65535", port)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(BindAddress, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is in use", port, BindAddress)
	}
	return l.Close()
}

// poll calls fn every 500ms, the first time at once, until it returns
// true, an error, or timeout. Running out of time is said as such (with
// the timeout), not as a bare "context deadline exceeded"; the caller's
// cancellation comes back as the context's error.
func poll(ctx context.Context, timeout time.Duration, fn func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return fn() })
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("timed out after %s", timeout)
	}
	return err
}

// singleInstancePatches turn leader election off in the controller-manager
// (the scheduler's is in its configuration: singleScheduler): a fleet
// runs one of each, and with leader election on they exit when the
// apiserver is down or too slow to renew their lease, which a soak saw
// on a busy machine, and nothing starts them again.
var singleInstancePatches = []internalversion.ComponentPatches{
	{Name: "kube-controller-manager", ExtraArgs: []internalversion.ExtraArgs{{Key: "leader-elect", Value: "false"}}},
}

// instrumentPatches are GhostFleet's measurement flags. `ghostfleet
// pprof` reads every component's CPU profile: etcd serves none unless
// asked, and the scheduler and controller-manager authorize only
// kwokctl's list of paths without a login (the flag is a list; a second
// use adds to it); they all listen on 127.0.0.1 only. And etcd times
// every gRPC call it serves (--metrics=extensive:
// grpc_server_handling_seconds, which `train` reads beside the
// apiserver's own times for its calls to etcd).
var instrumentPatches = []internalversion.ComponentPatches{
	{Name: "etcd", ExtraArgs: []internalversion.ExtraArgs{{Key: "enable-pprof", Value: "true"}, {Key: "metrics", Value: "extensive"}}},
	{Name: "kube-scheduler", ExtraArgs: []internalversion.ExtraArgs{{Key: "authorization-always-allow-paths", Value: "/debug/pprof/profile"}}},
	{Name: "kube-controller-manager", ExtraArgs: []internalversion.ExtraArgs{{Key: "authorization-always-allow-paths", Value: "/debug/pprof/profile"}}},
}
