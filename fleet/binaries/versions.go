package binaries

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// The pinned build modules are the one place where versions are set: the
// constants below are read from them, so a version bump is a go.mod edit
// (see hack/pin-versions.sh) and nothing else.
var (
	//go:embed modules/controlplane.mod
	controlPlaneMod []byte
	//go:embed modules/controlplane.sum
	controlPlaneSum []byte
	//go:embed modules/prometheus.mod
	prometheusMod []byte
	//go:embed modules/prometheus.sum
	prometheusSum []byte
	//go:embed modules/metricsserver.mod
	metricsServerMod []byte
	//go:embed modules/metricsserver.sum
	metricsServerSum []byte
	//go:embed modules/karpenter.mod
	karpenterMod []byte
	//go:embed modules/karpenter.sum
	karpenterSum []byte
)

// Versions is the set of component versions GhostFleet runs.
type Versions struct {
	Kubernetes string `json:"kubernetes"` // v1.36.3
	Etcd       string `json:"etcd"`       // v3.6.16
	Kwok       string `json:"kwok"`       // v0.8.0
	Prometheus string `json:"prometheus"` // v3.16.0 (module v0.316.0)
	// MetricsServer is built only for fleets that run it (up
	// --metrics-server) and is cached in a folder of its own (see
	// Resolver.cachePath), so it is not part of SetName: pinning it
	// never invalidates the control plane's cache.
	MetricsServer string `json:"metricsServer,omitempty"` // v0.8.0
	// Karpenter is the kwok provider of Karpenter, built only for fleets
	// that autoscale (up --autoscaler karpenter), cached like
	// metrics-server in a folder of its own. v1.14.0, not v1.15.0:
	// v1.15.0 declares go 1.26.9, and CI and the machines GhostFleet is
	// developed on build with go1.26.8 under GOTOOLCHAIN=local; v1.14.0
	// declares go 1.26.5.
	Karpenter string `json:"karpenter,omitempty"` // v1.14.0
}

// SetName names the version set; it keys the binary cache so that a version
// bump never mixes binaries.
func (v Versions) SetName() string {
	return fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s_prometheus-%s", v.Kubernetes, v.Etcd, v.Kwok, v.Prometheus)
}

// Pinned returns the versions pinned by the embedded build modules.
func Pinned() Versions {
	v, err := parseVersions(controlPlaneMod, prometheusMod)
	if err == nil {
		var ms map[string]string
		if ms, err = requires("metricsserver.mod", metricsServerMod); err == nil {
			v.MetricsServer = ms["sigs.k8s.io/metrics-server"]
		}
	}
	if err == nil {
		var km map[string]string
		if km, err = requires("karpenter.mod", karpenterMod); err == nil {
			v.Karpenter = km[karpenterModule]
		}
	}
	if err != nil || v.MetricsServer == "" || v.Karpenter == "" {
		// The modules are embedded at compile time and covered by tests.
		panic(fmt.Sprintf("pinned modules: %v (metrics-server %q, karpenter %q)", err, v.MetricsServer, v.Karpenter))
	}
	return v
}

func parseVersions(controlPlane, prometheus []byte) (Versions, error) {
	cp, err := requires("controlplane.mod", controlPlane)
	if err != nil {
		return Versions{}, err
	}
	pm, err := requires("prometheus.mod", prometheus)
	if err != nil {
		return Versions{}, err
	}
	v := Versions{
		Kubernetes: cp["k8s.io/kubernetes"],
		Etcd:       cp["go.etcd.io/etcd/server/v3"],
		Kwok:       cp["sigs.k8s.io/kwok"],
	}
	if v.Prometheus, err = prometheusRelease(pm["github.com/prometheus/prometheus"]); err != nil {
		return Versions{}, err
	}
	for name, got := range map[string]string{"k8s.io/kubernetes": v.Kubernetes, "etcd server": v.Etcd, "kwok": v.Kwok} {
		if got == "" {
			return Versions{}, fmt.Errorf("controlplane.mod does not require %s", name)
		}
	}
	return v, nil
}

func requires(name string, data []byte) (map[string]string, error) {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out, nil
}

// prometheusRelease maps Prometheus's Go module version to its release:
// v0.316.0 is Prometheus 3.16.0.
func prometheusRelease(module string) (string, error) {
	parts := strings.Split(strings.TrimPrefix(module, "v"), ".")
	if len(parts) != 3 || parts[0] != "0" {
		return "", fmt.Errorf("prometheus module version %q is not of the form v0.MMM.P", module)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 100 {
		return "", fmt.Errorf("prometheus module version %q is not of the form v0.MMM.P", module)
	}
	return fmt.Sprintf("v%d.%d.%s", minor/100, minor%100, parts[2]), nil
}
