package binaries

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Binary is one executable the fleet needs and how to build it from the
// pinned modules.
type Binary struct {
	Name    string // file name and the key users pass to --binary
	module  string // which embedded module builds it
	pkg     string // Go package of its main
	ldflags func(Versions) string
	// Typical is how long a cold build takes on a 2-core machine, module
	// downloads included (results/first-run-*: the control plane's one
	// build is their sum); it is only shown as an estimate next to the
	// elapsed time.
	Typical time.Duration
	// source is the Go module of pkg that patches and manifests are in.
	source string
	// patches change the module's source for GhostFleet's build (go build
	// -overlay); a patch that no longer applies fails the build.
	patches []sourcePatch
	// manifests are folders of the built module whose YAML files are
	// copied into ManifestsDir next to the binary when it is built, so
	// that running it needs neither the network nor the module cache.
	manifests []string
}

// sourcePatch replaces old by new, exactly count times, in file (a path
// inside the binary's source module).
type sourcePatch struct {
	file, old, new string
	count          int
}

// ManifestsDir is where the manifests of the binary at path are (see
// Binary.manifests): Karpenter's CRDs.
func ManifestsDir(path string) string { return filepath.Join(filepath.Dir(path), "manifests") }

// Build modules.
const (
	moduleControlPlane  = "controlplane"
	modulePrometheus    = "prometheus"
	moduleMetricsServer = "metricsserver"
	moduleKarpenter     = "karpenter"

	karpenterModule = "sigs.k8s.io/karpenter"
)

// Component names as kwokctl spells them.
const (
	KubeApiserver         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Etcd                  = "etcd"
	Etcdctl               = "etcdctl"
	Etcdutl               = "etcdutl"
	Kwok                  = "kwok"
	Kwokctl               = "kwokctl"
	Prometheus            = "prometheus"
	MetricsServer         = "metrics-server"
	// Karpenter is Karpenter's kwok provider (package
	// sigs.k8s.io/karpenter/kwok), under the name it runs as on a fleet.
	Karpenter = "karpenter"
)

func kubeLDFlags(v Versions) string {
	major, minor := "1", ""
	if parts := strings.Split(strings.TrimPrefix(v.Kubernetes, "v"), "."); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	const pkg = "k8s.io/component-base/version"
	return strings.Join([]string{
		"-s -w",
		"-X " + pkg + ".gitVersion=" + v.Kubernetes,
		"-X " + pkg + ".gitMajor=" + major,
		"-X " + pkg + ".gitMinor=" + minor,
		"-X " + pkg + ".gitTreeState=clean",
	}, " ")
}

func kwokLDFlags(v Versions) string {
	return "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=" + v.Kwok +
		" -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=" + v.Kubernetes
}

func plainLDFlags(Versions) string { return "-s -w" }

func prometheusLDFlags(v Versions) string {
	const pkg = "github.com/prometheus/common/version"
	return "-s -w -X " + pkg + ".Version=" + strings.TrimPrefix(v.Prometheus, "v") +
		" -X " + pkg + ".Branch=HEAD -X " + pkg + ".BuildUser=ghostfleet"
}

// metricsServerLDFlags stamp the version where metrics-server's Makefile
// does (it prints client-go's version for --version, which kwokctl reads).
func metricsServerLDFlags(v Versions) string {
	const pkg = "k8s.io/client-go/pkg/version"
	major, minor := "0", ""
	if parts := strings.Split(strings.TrimPrefix(v.MetricsServer, "v"), "."); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	return "-s -w -X " + pkg + ".gitVersion=" + v.MetricsServer + " -X " + pkg + ".gitMajor=" + major +
		" -X " + pkg + ".gitMinor=" + minor + " -X " + pkg + ".gitTreeState=clean"
}

// karpenterLDFlags stamp the version where Karpenter's Makefile does.
func karpenterLDFlags(v Versions) string {
	return "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=" + v.Karpenter
}

// karpenterPatches make Karpenter listen for metrics and health probes
// on 127.0.0.1 only, like every process of a fleet: it binds ":PORT", on
// every interface, and has no flag for the address.
//
// Its kwok provider also gives a new node the capacity of the pods it was
// made for (the NodeClaim's requests: no CPU or memory, only the GPUs
// they asked for) and the instance type's only as allocatable; the second
// patch gives it the instance type's capacity, as `nodes` does.
var karpenterPatches = []sourcePatch{{
	file: "pkg/operator/operator.go",
	old:  `fmt.Sprintf(":%d", options.FromContext(ctx).`, new: `fmt.Sprintf("127.0.0.1:%d", options.FromContext(ctx).`, count: 2,
}, {
	file: "kwok/cloudprovider/cloudprovider.go",
	old:  `Capacity:    nodeClaim.Spec.Resources.Requests,`, new: `Capacity:    lo.Assign(nodeClaim.Spec.Resources.Requests, instanceType.Capacity),`, count: 1,
}}

// All lists every binary in build order: the apiserver first, because it
// compiles most of what the scheduler and controller-manager share.
var All = []Binary{
	{Name: KubeApiserver, module: moduleControlPlane, pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: kubeLDFlags, Typical: 5 * time.Minute},
	{Name: KubeControllerManager, module: moduleControlPlane, pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", ldflags: kubeLDFlags, Typical: 75 * time.Second},
	{Name: KubeScheduler, module: moduleControlPlane, pkg: "k8s.io/kubernetes/cmd/kube-scheduler", ldflags: kubeLDFlags, Typical: 10 * time.Second},
	{Name: Etcd, module: moduleControlPlane, pkg: "go.etcd.io/etcd/server/v3", ldflags: plainLDFlags, Typical: 20 * time.Second},
	{Name: Kwok, module: moduleControlPlane, pkg: "sigs.k8s.io/kwok/cmd/kwok", ldflags: kwokLDFlags, Typical: 30 * time.Second},
	{Name: Prometheus, module: modulePrometheus, pkg: "github.com/prometheus/prometheus/cmd/prometheus", ldflags: prometheusLDFlags, Typical: 7 * time.Minute},
}

// OnDemand lists binaries only some commands need, built the first time
// one of them runs (not by a plain `up`, so not on a first run's path):
// etcdctl saves etcd snapshots and etcdutl restores them (etcd 3.6 moved
// `snapshot restore` out of etcdctl); kwokctl is what `bench nodes`
// compares against (GhostFleet drives kwokctl's code in-process; linking
// kwokctl and etcdctl took 104 CPU-seconds of a first run); metrics-server runs
// on fleets brought up with --metrics-server, Karpenter's kwok provider on
// those brought up with --autoscaler karpenter (with its CRDs beside it).
var OnDemand = []Binary{
	{Name: Etcdctl, module: moduleControlPlane, pkg: "go.etcd.io/etcd/etcdctl/v3", ldflags: plainLDFlags, Typical: 15 * time.Second},
	{Name: Kwokctl, module: moduleControlPlane, pkg: "sigs.k8s.io/kwok/cmd/kwokctl", ldflags: kwokLDFlags, Typical: 40 * time.Second},
	{Name: Etcdutl, module: moduleControlPlane, pkg: "go.etcd.io/etcd/etcdutl/v3", ldflags: plainLDFlags, Typical: 30 * time.Second},
	{Name: MetricsServer, module: moduleMetricsServer, pkg: "sigs.k8s.io/metrics-server/cmd/metrics-server", ldflags: metricsServerLDFlags, Typical: 2 * time.Minute},
	{Name: Karpenter, module: moduleKarpenter, pkg: karpenterModule + "/kwok", ldflags: karpenterLDFlags, Typical: 5 * time.Minute,
		source: karpenterModule, patches: karpenterPatches, manifests: []string{"kwok/charts/crds", "kwok/apis/crds"}},
}

// Lookup returns the binary called name (of All or OnDemand).
func Lookup(name string) (Binary, error) {
	for _, b := range append(All[:len(All):len(All)], OnDemand...) {
		if b.Name == name {
			return b, nil
		}
	}
	return Binary{}, fmt.Errorf("unknown binary %q: allowed are %s", name, strings.Join(Names(), ", "))
}

// Names lists the names of All, then of OnDemand.
func Names() []string {
	var names []string
	for _, b := range append(All[:len(All):len(All)], OnDemand...) {
		names = append(names, b.Name)
	}
	return names
}

// EnvVar is the environment variable that points at a prebuilt binary,
// e.g. GHOSTFLEET_KUBE_APISERVER_BINARY.
func (b Binary) EnvVar() string {
	return "GHOSTFLEET_" + strings.ToUpper(strings.ReplaceAll(b.Name, "-", "_")) + "_BINARY"
}

// VersionOf is the version the named binary must report.
func (v Versions) VersionOf(name string) string {
	switch name {
	case Etcd, Etcdctl, Etcdutl:
		return v.Etcd
	case Kwok, Kwokctl:
		return v.Kwok
	case Prometheus:
		return v.Prometheus
	case MetricsServer:
		return v.MetricsServer
	case Karpenter:
		return v.Karpenter
	default:
		return v.Kubernetes
	}
}
