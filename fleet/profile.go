package fleet

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
)

// ComponentProfile is a named set of control-plane settings applied when a
// fleet is created. Its typed fields are the figures the components run
// with, so that reports and verdicts quote them instead of restating them.
type ComponentProfile struct {
	Name string
	// Description says in one line what the profile sets; it is made from
	// the fields below.
	Description string

	Scheduler         SchedulerSettings
	ControllerManager ControllerManagerSettings
	APIServer         APIServerSettings
	Etcd              EtcdSettings
	Kwok              KwokSettings
	// Env sets environment variables of components' processes, by
	// component (e.g. the Go runtime's GOGC for kube-apiserver).
	Env map[string]map[string]string
	// CPULimits hold components to a share of the machine's cores, by
	// component (e.g. kube-scheduler: 0.2), as a container's CPU limit
	// does (see limitCPU); none limited by default.
	CPULimits map[string]float64
	// FeatureGates are given to kube-apiserver, kube-controller-manager
	// and kube-scheduler alike; RuntimeConfig turns API group versions on
	// or off in kube-apiserver. The gang profile sets both.
	FeatureGates  map[string]bool
	RuntimeConfig map[string]bool

	// Source is where the profile was read from: its built-in file
	// (fleet/profiles/<name>.yaml) or the user's --profile-file.
	Source string

	// schedulerConfig is the KubeSchedulerConfiguration kube-scheduler
	// reads, the profile file's second document as written; Scheduler is
	// read from it.
	schedulerConfig []byte
	// file is the whole profile file of a user's profile, kept with the
	// cluster it made; nil for the built-in ones.
	file []byte
	// summary and note are the file's, kept to describe the profile
	// again with gang scheduling added (PROFILE+gang).
	summary, note string
}

// SchedulerSettings are kube-scheduler's, as its configuration file sets them.
type SchedulerSettings struct {
	// QPS and Burst limit the scheduler's API client, which binds every
	// pod the scheduler places (clientConnection.qps/burst).
	QPS, Burst int
	// PercentageOfNodesToScore is the share of nodes the scheduler looks
	// for feasible ones among and scores; 0 is upstream's adaptive default.
	PercentageOfNodesToScore int
	// ScoreWeights are the score plugin weights the profile sets, by
	// plugin; nil keeps upstream's.
	ScoreWeights map[string]int
	// Disabled are the plugins the profile turns off everywhere
	// (plugins.multiPoint.disabled); FitScoring is NodeResourcesFit's
	// scoring strategy when set (LeastAllocated upstream, MostAllocated
	// to bin-pack).
	Disabled   []string
	FitScoring string
}

// ControllerManagerSettings are kube-controller-manager's, given as flags:
// it has no configuration file for them.
type ControllerManagerSettings struct {
	// QPS and Burst limit its API clients (--kube-api-qps/--kube-api-burst):
	// each controller builds its own, so the limits apply per controller.
	QPS, Burst int
	// WorkloadSyncs is how many workers each of the ReplicaSet, Deployment
	// and Job controllers runs (--concurrent-{replicaset,deployment,job}-syncs).
	WorkloadSyncs int
	// GCSyncs is the garbage collector's workers (--concurrent-gc-syncs).
	GCSyncs int
}

// APIServerSettings are kube-apiserver's. With API Priority and Fairness on
// (it always is here) the two limits add up to the server's total
// concurrency, which APF shares out among priority levels.
type APIServerSettings struct {
	MaxRequestsInflight         int // --max-requests-inflight
	MaxMutatingRequestsInflight int // --max-mutating-requests-inflight
	// AuditPolicy, when set, has kube-apiserver log the requests it
	// selects to the fleet's audit log (AuditLogPath), each with when it
	// was received and answered to the microsecond and the client's user
	// agent, which names the controller-manager's controller. A run reads
	// it for what the apiserver saw (TrainResult.TeardownStages). Each
	// event is written before the request is answered, so a policy that
	// selects much slows the apiserver: select what a question needs.
	AuditPolicy *auditv1.Policy
}

// EtcdSettings are etcd's.
type EtcdSettings struct {
	// QuotaBackendBytes is --quota-backend-bytes: past it etcd raises
	// NOSPACE and refuses writes. 0 keeps kwokctl's 8 GiB.
	QuotaBackendBytes int64
	// UnsafeNoFsync is --unsafe-no-fsync: etcd stops syncing its writes
	// to disk, so a crash of the machine loses them. A simulator's state
	// can be rebuilt; a profile that sets it says so in its description.
	UnsafeNoFsync bool
}

// KwokSettings are the kwok controller's, where a profile changes them.
type KwokSettings struct {
	// NodeLeaseDurationSeconds is the duration of each fake node's Lease,
	// renewed every quarter of it as kubelets do; 0 keeps kwokctl's 40 s
	// (a renewal every 10 s: 100 writes/s for 1,000 nodes). The
	// controller-manager's --node-monitor-grace-period follows it, so a
	// node is still judged unreachable only once its lease has expired.
	NodeLeaseDurationSeconds int
}

// Component profiles, read from fleet/profiles/<name>.yaml (embedded).
// Both state every figure, the default profile too, so that what reports
// quote is what runs whatever the binaries' own defaults.
var (
	ProfileDefault    = builtinProfile("default")
	ProfileTuned      = builtinProfile("tuned")
	ProfileFast       = builtinProfile("fast")
	ProfileGang       = builtinProfile("gang")
	ComponentProfiles = []ComponentProfile{ProfileDefault, ProfileTuned, ProfileFast, ProfileGang}
)

// Kubernetes' own gang scheduling (alpha since 1.35): kube-scheduler
// places the pods of a PodGroup whose policy is a gang all at once or not
// at all. The gang profile turns it on; PROFILE+gang adds it to another
// built-in profile.
const (
	GateGenericWorkload  = "GenericWorkload"                 // the Workload and PodGroup APIs, pods' spec.schedulingGroup
	GateGangScheduling   = "GangScheduling"                  // kube-scheduler's GangScheduling plugin
	GateTopologyAware    = "TopologyAwareWorkloadScheduling" // a PodGroup's topology constraint (alpha since 1.36)
	SchedulingAPIVersion = "scheduling.k8s.io/v1alpha2"
	gangSuffix           = "+gang"
)

// GangScheduling reports whether the profile's kube-scheduler gang-schedules
// pods that name a PodGroup.
func (p ComponentProfile) GangScheduling() bool {
	return p.FeatureGates[GateGenericWorkload] && p.FeatureGates[GateGangScheduling] && p.RuntimeConfig[SchedulingAPIVersion]
}

// TopologyAwareScheduling reports whether a gang's PodGroup may keep its
// pods within one topology domain (one rack, one block).
func (p ComponentProfile) TopologyAwareScheduling() bool {
	return p.GangScheduling() && p.FeatureGates[GateTopologyAware]
}

// withGang is p with the gang profile's feature gates and API added, named
// p.Name+"+gang".
func (p ComponentProfile) withGang() ComponentProfile {
	g := ProfileGang
	p.Name += gangSuffix
	p.FeatureGates, p.RuntimeConfig = maps.Clone(p.FeatureGates), maps.Clone(p.RuntimeConfig)
	if p.FeatureGates == nil {
		p.FeatureGates = map[string]bool{}
	}
	if p.RuntimeConfig == nil {
		p.RuntimeConfig = map[string]bool{}
	}
	maps.Copy(p.FeatureGates, g.FeatureGates)
	maps.Copy(p.RuntimeConfig, g.RuntimeConfig)
	p.Source += " + " + g.Source
	p.summary = cmp.Or(p.summary, p.Name[:len(p.Name)-len(gangSuffix)]) + ", plus gang scheduling"
	p.Description = p.describe(p.summary, p.note)
	return p
}

// Settings are the profile's settings in one line, as its Description
// gives them but without its summary or note.
func (p ComponentProfile) Settings() string { return p.describe("", "") }

func (p ComponentProfile) describe(summary, note string) string {
	var b strings.Builder
	if summary != "" {
		b.WriteString(summary + ": ")
	}
	s := p.Scheduler
	fmt.Fprintf(&b, "scheduler client QPS %d/burst %d scoring %s", s.QPS, s.Burst, s.NodesToScore())
	if len(s.ScoreWeights) > 0 {
		fmt.Fprintf(&b, " with score weights %v", s.ScoreWeights)
	}
	if len(s.Disabled) > 0 {
		fmt.Fprintf(&b, " without %d plugins (%s)", len(s.Disabled), strings.Join(s.Disabled, ", "))
	}
	if s.FitScoring != "" {
		fmt.Fprintf(&b, ", NodeResourcesFit %s", s.FitScoring)
	}
	c := p.ControllerManager
	fmt.Fprintf(&b, ", controller-manager QPS %d/burst %d with %d workers per workload controller", c.QPS, c.Burst, c.WorkloadSyncs)
	fmt.Fprintf(&b, ", apiserver inflight %d+%d", p.APIServer.MaxRequestsInflight, p.APIServer.MaxMutatingRequestsInflight)
	if q := p.Etcd.QuotaBackendBytes; q > 0 {
		fmt.Fprintf(&b, ", etcd quota %s", MiB(q))
	}
	for _, c := range slices.Sorted(maps.Keys(p.Env)) {
		env := p.Env[c]
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, ", %s %s=%s", c, k, env[k])
		}
	}
	for _, c := range slices.Sorted(maps.Keys(p.CPULimits)) {
		fmt.Fprintf(&b, ", %s CPU limited to %g cores", c, p.CPULimits[c])
	}
	if d := p.Kwok.NodeLeaseDurationSeconds; d > 0 {
		fmt.Fprintf(&b, ", node leases %d s (renewed every %.0f s)", d, float64(d)/4)
	}
	if len(p.FeatureGates) > 0 {
		fmt.Fprintf(&b, ", feature gates %s", p.featureGatesFlag())
	}
	if len(p.RuntimeConfig) > 0 {
		fmt.Fprintf(&b, ", APIs %s", p.runtimeConfigFlag())
	}
	if a := p.APIServer.AuditPolicy; a != nil {
		fmt.Fprintf(&b, ", apiserver audit log (%d rules)", len(a.Rules))
	}
	if p.Etcd.UnsafeNoFsync {
		b.WriteString(", etcd without fsync (NOT DURABLE: a crash of the machine loses writes)")
	}
	if note != "" {
		b.WriteString("; " + note)
	}
	return b.String()
}

// NodesToScore says in words how many nodes the scheduler scores.
func (s SchedulerSettings) NodesToScore() string {
	if s.PercentageOfNodesToScore == 0 {
		return "an adaptive share of nodes"
	}
	return strconv.Itoa(s.PercentageOfNodesToScore) + "% of nodes"
}

// LookupComponentProfile returns the named profile: a built-in one, or
// one with gang scheduling added (e.g. tuned+gang).
func LookupComponentProfile(name string) (ComponentProfile, error) {
	for _, p := range ComponentProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	if base, ok := strings.CutSuffix(name, gangSuffix); ok {
		for _, p := range ComponentProfiles {
			if p.Name == base && !p.GangScheduling() {
				return p.withGang(), nil
			}
		}
	}
	return ComponentProfile{}, fmt.Errorf("unknown profile %q: allowed are %s, or one of them plus gang scheduling as NAME+gang (e.g. tuned+gang)", name, strings.Join(ComponentProfileNames(), ", "))
}

// switchesFlag writes a set of switches as Kubernetes' key=value,… flags do,
// sorted so that the same profile gives the same flag.
func switchesFlag(m map[string]bool) string {
	kv := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+"="+strconv.FormatBool(m[k]))
	}
	return strings.Join(kv, ",")
}

func (p ComponentProfile) featureGatesFlag() string  { return switchesFlag(p.FeatureGates) }
func (p ComponentProfile) runtimeConfigFlag() string { return switchesFlag(p.RuntimeConfig) }

// ComponentProfileNames lists the profiles' names.
func ComponentProfileNames() []string {
	names := make([]string, len(ComponentProfiles))
	for i, p := range ComponentProfiles {
		names[i] = p.Name
	}
	return names
}

// patches turns the profile's flag-borne settings into kwokctl component
// patches. The scheduler has none but feature gates: it gets everything
// else from its configuration file, and its --kube-api-qps/--kube-api-burst
// flags are deprecated and ignored once it reads one.
func (p ComponentProfile) patches() []internalversion.ComponentPatches {
	arg := func(key string, value int) internalversion.ExtraArgs {
		return internalversion.ExtraArgs{Key: key, Value: strconv.Itoa(value)}
	}
	c, a := p.ControllerManager, p.APIServer
	patches := []internalversion.ComponentPatches{
		{Name: "kube-apiserver", ExtraArgs: []internalversion.ExtraArgs{
			arg("max-requests-inflight", a.MaxRequestsInflight),
			arg("max-mutating-requests-inflight", a.MaxMutatingRequestsInflight),
		}},
		{Name: "kube-controller-manager", ExtraArgs: []internalversion.ExtraArgs{
			arg("kube-api-qps", c.QPS),
			arg("kube-api-burst", c.Burst),
			arg("concurrent-replicaset-syncs", c.WorkloadSyncs),
			arg("concurrent-deployment-syncs", c.WorkloadSyncs),
			arg("concurrent-job-syncs", c.WorkloadSyncs),
			arg("concurrent-gc-syncs", c.GCSyncs),
		}},
	}
	// Feature gates go to every Kubernetes component alike, so that the
	// apiserver serves what the scheduler and controllers use.
	if len(p.FeatureGates) > 0 {
		gates := internalversion.ExtraArgs{Key: "feature-gates", Value: p.featureGatesFlag()}
		for i := range patches {
			patches[i].ExtraArgs = append(patches[i].ExtraArgs, gates)
		}
		patches = append(patches, internalversion.ComponentPatches{Name: "kube-scheduler", ExtraArgs: []internalversion.ExtraArgs{gates}})
	}
	if len(p.RuntimeConfig) > 0 {
		patches[0].ExtraArgs = append(patches[0].ExtraArgs, internalversion.ExtraArgs{Key: "runtime-config", Value: p.runtimeConfigFlag()})
	}
	if p.APIServer.AuditPolicy != nil {
		// One file, never rotated: a run reads its whole window from it
		// (kube-apiserver rotates at 100 MB by default).
		patches[0].ExtraArgs = append(patches[0].ExtraArgs, internalversion.ExtraArgs{Key: "audit-log-maxsize", Value: "0"})
	}
	if p.Etcd.UnsafeNoFsync {
		patches = append(patches, internalversion.ComponentPatches{Name: "etcd",
			ExtraArgs: []internalversion.ExtraArgs{{Key: "unsafe-no-fsync", Value: "true"}}})
	}
	for _, component := range slices.Sorted(maps.Keys(p.Env)) {
		env := p.Env[component]
		patch := internalversion.ComponentPatches{Name: component}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			patch.ExtraEnvs = append(patch.ExtraEnvs, internalversion.Env{Name: k, Value: env[k]})
		}
		patches = append(patches, patch)
	}
	return patches
}
