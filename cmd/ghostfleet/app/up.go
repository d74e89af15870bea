package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

// binaryFlags choose where the control-plane binaries come from.
type binaryFlags struct {
	explicit       map[string]string
	goBinary       string
	cacheDir       string
	prometheusFrom string
}

func (b *binaryFlags) add(fs *pflag.FlagSet) {
	fs.StringToStringVar(&b.explicit, "binary", nil,
		"use a prebuilt binary, NAME=PATH, repeatable; NAME is one of "+strings.Join(binaries.Names(), ", ")+
			" (env GHOSTFLEET_<NAME>_BINARY, e.g. GHOSTFLEET_PROMETHEUS_BINARY=/usr/bin/prometheus)")
	fs.StringVar(&b.goBinary, "go", "", "go command used to build missing binaries (default: go on PATH)")
	fs.StringVar(&b.cacheDir, "cache-dir", "", "binary cache root (default $XDG_CACHE_HOME/ghostfleet/bin)")
	fs.StringVar(&b.prometheusFrom, "prometheus-from", "",
		"where Prometheus comes from unless --binary or a variable names one: build (the pinned build, built on first use, ~7 min on 2 cores; "+
			"the one to measure with), auto (the cached pinned build, else Debian's package where apt can fetch it, in seconds, else the pinned build) "+
			"or debian (Debian's package, or an error); default build, or env "+prometheusFromEnv)
}

// prometheusFromEnv sets --prometheus-from's default.
const prometheusFromEnv = "GHOSTFLEET_PROMETHEUS_FROM"

// binaries is where the flags say the binaries come from.
func (b *binaryFlags) binaries() runs.Binaries {
	from := b.prometheusFrom
	if from == "" {
		from = os.Getenv(prometheusFromEnv)
	}
	return runs.Binaries{Explicit: b.explicit, Go: b.goBinary, CacheDir: b.cacheDir, PrometheusFrom: from}
}

func (b *binaryFlags) resolver(report progress.Func) (*binaries.Resolver, error) {
	return b.binaries().Resolver(report)
}

type upOptions struct {
	*globals
	bins           binaryFlags
	nodes          int
	gpuProfile     string
	gpuModel       string
	draExtended    bool
	profile        string
	profileSet     bool   // --profile was given: a running fleet must have it
	profileFile    string // a user's own profile, instead of --profile
	stageFiles     []string
	prometheusPort int
	// prometheusLater: a Prometheus that must be built comes after the
	// fleet (the console's first run); see --prometheus-later.
	prometheusLater bool
	verbose         bool
	dcgm            bool
	metricsServer   bool
	autoscale       autoscaleFlags
}

func newUpCommand(g *globals) *cobra.Command {
	o := &upOptions{globals: g}
	cmd := &cobra.Command{
		Use:     "up",
		Aliases: []string{"setup"},
		Short:   "Build what is missing and bring the fleet up with GPU nodes",
		Long: `Resolve the control-plane binaries (--binary flags, GHOSTFLEET_*_BINARY
variables, the per-version cache, or a build from the pinned Go modules on
first use; --prometheus-from auto takes Prometheus from Debian's package
instead, in seconds), create GhostFleet's cluster with kwok's binary runtime, wait for
kube-apiserver /readyz and for Prometheus to scrape every component, and
scale the fleet to --nodes fake GPU nodes. With --prometheus-later, a
Prometheus that has to be built is left out and the fleet comes up without
it, its port recorded for it; the console (` + "`ghostfleet`" + ` brings a fleet up this way)
builds it in the background while it reads the components' /metrics
itself, and ` + "`ghostfleet up`" + ` run again builds and starts it in the foreground.

Running it on a fleet that is up says so and changes nothing; on a fleet
whose processes are gone (e.g. after a reboot) it starts them again.

Control-plane profiles (--profile); kube-scheduler reads its settings from a
KubeSchedulerConfiguration file (--config), the others get flags:
` + profileHelp() + `
NAME+gang (e.g. tuned+gang, fast+gang) is profile NAME with the gang
profile's feature gates and API added.

GPU models (--gpu-model): extended advertises each node's GPUs as the
extended resource nvidia.com/gpu, as NVIDIA's device plugin does; dra
publishes them through Dynamic Resource Allocation (resource.k8s.io/v1):
the DeviceClass gpu.nvidia.com and per node a ResourceSlice of driver
gpu.nvidia.com with one device per GPU and the attributes NVIDIA's DRA
driver publishes (productName, architecture, cudaComputeCapability, memory,
index, uuid…) plus the node's nvlinkDomain and rack; such nodes have no
nvidia.com/gpu, and workloads ask for GPUs with --claim. With
--dra-extended-resource the DeviceClass also serves pods that ask for
nvidia.com/gpu (its extendedResourceName, Kubernetes 1.36's
DRAExtendedResource): the scheduler makes each such pod a claim, and
scores nvidia.com/gpu from the devices (--claim none).

Built-in files: the profiles are fleet/profiles/NAME.yaml and the kwok
stages fleet/stages/*.yaml in GhostFleet's source, embedded in the binary;
` + "`ghostfleet profile show NAME`" + ` prints one (NAME: a profile, or stages) to
start your own from. --profile-file runs your profile instead of a built-in
one; it may hold only what it changes of another, named by base: (a
built-in profile's name, or a profile file relative to its own folder),
merged as a JSON merge patch (RFC 7386), its KubeSchedulerConfiguration
optional. --stage-file adds your kwok Stages, one named like a built-in stage
replacing it; on a fleet that is already up they are installed over what
runs, and stay until ` + "`ghostfleet clean`" + `.`,
		Example: `  ghostfleet up                         # 1,000 DGX H100 nodes, upstream defaults
  ghostfleet up --profile tuned --nodes 100 --gpu-profile dgx-a100-80gb
  ghostfleet up --nodes 50 --gpu-model dra   # GPUs as DRA devices: load 100 2 --claim count
  ghostfleet up --profile fast --gpu-model dra --dra-extended-resource   # binpack --claim none packs devices
  ghostfleet up --binary prometheus=/usr/bin/prometheus
  ghostfleet profile show tuned > mine.yaml && ghostfleet up --profile-file mine.yaml
  printf 'apiVersion: ghostfleet.dev/v1alpha1\nkind: ComponentProfile\nmetadata: {name: mine}\nbase: tuned\ncontrollerManager: {qps: 100}\n' > mine.yaml
  ghostfleet up --profile-file mine.yaml   # tuned but the controller-manager's QPS
  ghostfleet up --stage-file slow-pods.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.profileSet = cmd.Flags().Changed("profile")
			return o.run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.nodes, "nodes", 1000, fmt.Sprintf("fake GPU nodes to create (0-%d)", fleet.MaxNodes))
	fs.StringVar(&o.gpuProfile, "gpu-profile", fleet.DefaultGPUProfile, "GPU server the nodes imitate: "+strings.Join(fleet.GPUProfileNames(), ", "))
	fs.StringVar(&o.gpuModel, "gpu-model", fleet.GPUModelExtended, "how nodes offer their GPUs: extended (nvidia.com/gpu) or dra (a ResourceSlice per node, DeviceClass "+fleet.DeviceClassGPU+"; see GPU models above)")
	fs.BoolVar(&o.draExtended, "dra-extended-resource", false, "with --gpu-model dra: the DeviceClass also serves pods asking for nvidia.com/gpu (see GPU models above)")
	fs.StringVar(&o.profile, "profile", fleet.ProfileDefault.Name, "control-plane settings: "+strings.Join(fleet.ComponentProfileNames(), " or ")+", or NAME+gang (listed above)")
	fs.StringVar(&o.profileFile, "profile-file", "", "control-plane settings from your own ComponentProfile YAML `FILE` (the format of: ghostfleet profile show default)")
	fs.StringArrayVar(&o.stageFiles, "stage-file", nil, "kwok Stage YAML `FILE` to install besides GhostFleet's stages (one named like a built-in replaces it), repeatable; the built-in ones: ghostfleet profile show stages")
	fs.IntVar(&o.prometheusPort, "prometheus-port", fleet.DefaultPrometheusPort, "port of the fleet's Prometheus on 127.0.0.1 (0: no Prometheus; snapshots then scrape the components directly)")
	fs.BoolVar(&o.prometheusLater, "prometheus-later", false, "if Prometheus has to be built, bring the fleet up without it (its port recorded for it) and build it afterwards: in the console's background, or by `up` run again")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "show kwokctl's log lines")
	fs.BoolVar(&o.metricsServer, "metrics-server", false, "run metrics-server (built from its pinned module on first use) serving metrics.k8s.io from every pod's emulated CPU and memory usage: kubectl top, HPAs, `ghostfleet usage set`")
	o.autoscale.add(fs)
	fs.BoolVar(&o.dcgm, "dcgm", false, "every node serves dcgm-exporter's GPU series (DCGM_FI_DEV_GPU_UTIL, _FB_USED, _FB_FREE per GPU) for Prometheus; costs a scrape per node every 15s")
	o.bins.add(fs)
	_ = cmd.RegisterFlagCompletionFunc("gpu-profile", fixed(fleet.GPUProfileNames()...))
	_ = cmd.RegisterFlagCompletionFunc("gpu-model", fixed(fleet.GPUModels...))
	_ = cmd.RegisterFlagCompletionFunc("profile", fixed(fleet.ComponentProfileNames()...))
	return cmd
}

func (o *upOptions) run(ctx context.Context) error {
	if err := o.ownOnly("up"); err != nil {
		return err
	}
	// Validate everything before building or creating anything.
	if err := fleet.ValidateNodeCount(o.nodes); err != nil {
		return err
	}
	gpu, err := fleet.LookupGPUProfile(o.gpuProfile)
	if err != nil {
		return err
	}
	if err := fleet.CheckGPUModel(o.gpuModel); err != nil {
		return err
	}
	if err := fleet.CheckDRAExtendedResource(o.draExtended, o.gpuModel); err != nil {
		return err
	}
	profile, err := o.componentProfile()
	if err != nil {
		return err
	}
	pools, err := o.autoscale.specs(gpu)
	if err != nil {
		return err
	}
	var stages []*v1alpha1.Stage
	for _, f := range o.stageFiles {
		s, err := fleet.LoadStageFile(f)
		if err != nil {
			return fmt.Errorf("--stage-file %w", err)
		}
		stages = append(stages, s...)
	}
	if _, err := fleet.MergeStages(nil, stages); err != nil {
		return fmt.Errorf("--stage-file: %w", err)
	}
	out := o.streams.Out
	p := o.streams.printer(o.verbose)
	defer p.Close()

	r, err := o.bins.resolver(p.Report)
	if err != nil {
		return err
	}
	if o.metricsServer {
		ms, _ := binaries.Lookup(binaries.MetricsServer)
		r.Also = append(r.Also, ms)
	}
	if len(pools) > 0 {
		k, _ := binaries.Lookup(binaries.Karpenter)
		r.Also = append(r.Also, k)
	}
	later, err := o.laterPrometheus(r)
	if err != nil {
		return err
	}
	res, err := fleet.Up(ctx, fleet.UpOptions{
		Name: o.name, Profile: profile, PrometheusPort: o.prometheusPort, PrometheusLater: later,
		Binaries: r.Resolve, Versions: r.Versions, Stages: stages, Report: p.Report,
		MetricsServer: o.metricsServer, Autoscaler: pools,
	})
	if err != nil {
		return err
	}
	target := fleet.Own(o.name)
	if o.dcgm {
		if err := installDCGM(ctx, target, gpu); err != nil {
			return err
		}
	}
	if res.AlreadyUp && len(stages) > 0 {
		p.Close()
		fmt.Fprintf(out, "fleet %q is already up (profile %s); installed %d kwok stages from %s.\n", o.name, res.State.Profile, len(stages), strings.Join(o.stageFiles, ", "))
		printAccess(out, target, res.State)
		return nil
	}
	if res.AlreadyUp && res.PrometheusAdded {
		p.Close()
		fmt.Fprintf(out, "fleet %q is up (profile %s); its Prometheus is built and added, scraping every component.\n", o.name, res.State.Profile)
		printAccess(out, target, res.State)
		return nil
	}
	if res.AlreadyUp {
		p.Close()
		fmt.Fprintf(out, "fleet %q is already up (profile %s); nothing to do.\n", o.name, res.State.Profile)
		fmt.Fprintf(out, "  use `ghostfleet nodes N` to change its size, `ghostfleet status` to look at it.\n")
		printAccess(out, target, res.State)
		return nil
	}
	if !res.Restarted {
		cs, err := target.Clientset(true)
		if err != nil {
			return err
		}
		sr, err := fleet.Scale(ctx, cs, fleet.ScaleOptions{Count: o.nodes, Profile: gpu, GPUModel: o.gpuModel, DRAExtendedResource: o.draExtended, WaitReady: true, Report: p.Report})
		if err != nil {
			return fmt.Errorf("the cluster is up but its nodes are not: %w", err)
		}
		p.Close()
		fmt.Fprintf(out, "fleet %q is up: %d %s nodes (%d GPUs as %s), profile %s; nodes created in %s, all Ready in %s, schedulable in %s\n",
			o.name, o.nodes, gpu.Name, o.nodes*gpu.GPUs, gpuModelWords(sr.GPUModel), profile.Name, round(sr.CreateTime), round(sr.ReadyTime), round(sr.SchedulableTime))
	} else {
		p.Close()
		fmt.Fprintf(out, "fleet %q was stopped and is running again (profile %s)\n", o.name, res.State.Profile)
	}
	printAccess(out, target, res.State)
	return nil
}

// laterPrometheus says whether the fleet comes up before its Prometheus:
// with --prometheus-later, when Prometheus would have to be built (not
// when it is cached, named, or comes from Debian's package in seconds).
// The resolver then leaves it out.
func (o *upOptions) laterPrometheus(r *binaries.Resolver) (bool, error) {
	if !o.prometheusLater || o.prometheusPort == 0 || r.PrometheusFrom != binaries.PrometheusBuild {
		return false, nil
	}
	_, missing, err := r.Find()
	if err != nil || !slices.ContainsFunc(missing, func(b binaries.Binary) bool { return b.Name == binaries.Prometheus }) {
		return false, err
	}
	r.Without = append(r.Without, binaries.Prometheus)
	return true, nil
}

// componentProfile is the profile up asks for: --profile-file, --profile,
// or on an existing fleet without either the one it runs.
func (o *upOptions) componentProfile() (fleet.ComponentProfile, error) {
	switch {
	case o.profileFile != "" && o.profileSet:
		return fleet.ComponentProfile{}, fmt.Errorf("--profile %s and --profile-file %s: give one", o.profile, o.profileFile)
	case o.profileFile != "":
		p, err := fleet.LoadComponentProfile(o.profileFile)
		if err != nil {
			return p, fmt.Errorf("--profile-file %w", err)
		}
		return p, nil
	}
	if st, err := fleet.LoadState(o.name); err == nil && !o.profileSet {
		return fleet.ClusterProfile(o.name, st.Profile) // plain `up` on an existing fleet keeps its profile
	}
	return fleet.LookupComponentProfile(o.profile)
}

// gpuModelWords says how a fleet's GPUs are offered, for people.
func gpuModelWords(model string) string {
	if model == fleet.GPUModelDRA {
		return "DRA devices of " + fleet.DRADriver
	}
	return fleet.ResourceGPU
}

func profileHelp() string {
	var b strings.Builder
	for _, p := range fleet.ComponentProfiles {
		fmt.Fprintf(&b, "  %-8s %s\n", p.Name, p.Description)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func installDCGM(ctx context.Context, t fleet.Target, gpu fleet.GPUProfile) error {
	cfg, err := t.RESTConfig()
	if err != nil {
		return err
	}
	kc, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := fleet.InstallDCGM(ctx, kc, gpu.GPUs); err != nil {
		return fmt.Errorf("%w (fleets created before GhostFleet served DCGM series lack kwok's Metric resource: `ghostfleet clean` and `up --dcgm` again)", err)
	}
	return nil
}

func printAccess(out interface{ Write([]byte) (int, error) }, t fleet.Target, s fleet.State) {
	if p, err := fleet.ClusterProfile(s.Name, s.Profile); err == nil {
		fmt.Fprintf(out, "  profile:    %s: %s\n", p.Name, p.Description)
	}
	fmt.Fprintf(out, "  kubeconfig: %s\n", t.Kubeconfig)
	switch {
	case s.PrometheusURL() == "":
		fmt.Fprintln(out, "  prometheus: none (--prometheus-port 0: snapshots scrape the components directly)")
	case s.PrometheusPending:
		fmt.Fprintf(out, "  prometheus: %s, not built yet: the console builds it in the background, `ghostfleet up` in the foreground\n", s.PrometheusURL())
	default:
		fmt.Fprintf(out, "  prometheus: %s\n", s.PrometheusURL())
	}
	fmt.Fprintf(out, "  try:        kubectl --kubeconfig %s get nodes -L nvidia.com/gpu.product\n", t.Kubeconfig)
	if s.MetricsServer {
		fmt.Fprintf(out, "              kubectl --kubeconfig %s top nodes  (metrics-server: first figures ~30 s after a pod starts)\n", t.Kubeconfig)
	}
	if a := s.Autoscaler; a != nil {
		fmt.Fprintf(out, "  autoscaler: karpenter, NodePools %s (up to %d nodes each, consolidated %s after they empty); log %s\n",
			strings.Join(a.NodePools, ", "), a.MaxNodes, a.Consolidate, fleet.ComponentLogPath(s.Name, binaries.Karpenter))
	}
}

func fixed(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
