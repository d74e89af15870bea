package fleet

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
)

// Node autoscaling with Karpenter's kwok provider: kwokctl runs it as a
// component of the fleet (like metrics-server), against the fleet's
// apiserver; GhostFleet gives it one NodePool per GPU profile asked for,
// whose instance type carries the profile's capacity and whose nodes get
// the labels and taint `nodes` gives, so that the fleet's kwok controller
// runs them (it manages nodes annotated kwok.x-k8s.io/node=fake, which
// Karpenter's kwok provider puts on every node) and workloads land there.

// AutoscalerKarpenter is the one autoscaler up --autoscaler knows.
const AutoscalerKarpenter = "karpenter"

// Karpenter's API.
var (
	NodePoolGVR      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimGVR     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClassGVR = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

const (
	// LabelNodePool is the label Karpenter puts on the nodes it made.
	LabelNodePool = "karpenter.sh/nodepool"
	// KarpenterNodeClass names the one KWOKNodeClass the NodePools use.
	KarpenterNodeClass = "ghostfleet"
	// NodePoolPrefix starts the name of every NodePool GhostFleet makes.
	NodePoolPrefix = "gf-"
	// DefaultConsolidateAfter is how long a node stays empty or
	// underused before Karpenter removes it: short, so that an unload
	// shrinks the fleet within a run.
	DefaultConsolidateAfter = 10 * time.Second
	// DefaultAutoscaleMaxNodes caps each NodePool: the machine's two
	// cores are shared.
	DefaultAutoscaleMaxNodes = 100
	// karpenterZone is where Karpenter's nodes are: GhostFleet's first
	// data hall (nodes 0-255 of `nodes` are in it too).
	karpenterZone = "zone-a"
	// karpenterInstanceTypes is the instance-types file in the fleet's
	// folder (--instance-types-file-path).
	karpenterInstanceTypes = "karpenter-instance-types.json"
)

// NodePoolSpec is one NodePool: Karpenter may add up to MaxNodes nodes of
// Profile, and removes them ConsolidateAfter after they are empty or
// their pods fit elsewhere.
type NodePoolSpec struct {
	Profile          GPUProfile
	MaxNodes         int
	ConsolidateAfter time.Duration
}

// Name is the NodePool's name: gf-<profile>.
func (s NodePoolSpec) Name() string { return NodePoolPrefix + s.Profile.Name }

// NodePoolSpecs checks what up --autoscaler was given, before anything is
// built or created: profiles known and not repeated, a cap in range, a
// consolidation delay of at least a second.
func NodePoolSpecs(profiles []string, maxNodes int, consolidateAfter time.Duration) ([]NodePoolSpec, error) {
	if len(profiles) == 0 {
		return nil, fmt.Errorf("--nodepools: give at least one GPU profile: allowed are %s", strings.Join(GPUProfileNames(), ", "))
	}
	if maxNodes < 1 || maxNodes > MaxNodes {
		return nil, fmt.Errorf("--autoscale-max-nodes %d is out of range: allowed are 1-%d", maxNodes, MaxNodes)
	}
	if consolidateAfter < time.Second {
		return nil, fmt.Errorf("--consolidate-after %s is out of range: allowed are 1s or more", consolidateAfter)
	}
	var out []NodePoolSpec
	seen := map[string]bool{}
	for _, name := range profiles {
		p, err := LookupGPUProfile(name)
		if err != nil {
			return nil, fmt.Errorf("--nodepools: %w", err)
		}
		if seen[name] {
			return nil, fmt.Errorf("--nodepools: profile %q is given twice", name)
		}
		seen[name] = true
		out = append(out, NodePoolSpec{Profile: p, MaxNodes: maxNodes, ConsolidateAfter: consolidateAfter})
	}
	return out, nil
}

// profileArch is the CPU architecture of a profile's servers.
func profileArch(p GPUProfile) string {
	if p.Family == "blackwell" && p.Machine == "GB200-NVL72" {
		return "arm64"
	}
	return "amd64"
}

// profileCapacity is what a node of the profile offers.
func profileCapacity(p GPUProfile) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(p.CPU),
		corev1.ResourceMemory:           resource.MustParse(p.Memory),
		corev1.ResourceEphemeralStorage: resource.MustParse(p.Storage),
		corev1.ResourcePods:             *resource.NewQuantity(int64(p.Pods), resource.DecimalSI),
		ResourceGPU:                     *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI),
		ResourceRDMA:                    *resource.NewQuantity(int64(p.RDMANICs), resource.DecimalSI),
	}
}

// profileLabels are the labels `nodes` gives a node of the profile that
// do not depend on its place (rack, block, NVLink domain and zone are
// numbered by node, which Karpenter cannot do).
func profileLabels(p GPUProfile) map[string]string {
	return map[string]string{
		LabelManaged:             "true",
		LabelGPUProfile:          p.Name,
		LabelType:                "kwok",
		"nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": p.Product,
		"nvidia.com/gpu.family":  p.Family,
		"nvidia.com/gpu.machine": p.Machine,
		"nvidia.com/gpu.count":   strconv.Itoa(p.GPUs),
		"nvidia.com/gpu.memory":  strconv.Itoa(p.GPUMemoryMB),
	}
}

// karpenterInstanceType is one entry of the kwok provider's
// instance-types file (its InstanceTypeOptions): named like the
// node.kubernetes.io/instance-type of the profile's nodes, one on-demand
// offering in karpenterZone, the profile's capacity.
type karpenterInstanceType struct {
	Name             string              `json:"name"`
	Offerings        []karpenterOffering `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []string            `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

// karpenterOffering is spelled as the provider's file spells it (its
// Go field names, no JSON tags).
type karpenterOffering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// KarpenterInstanceTypes is the instance-types file for the NodePools:
// one instance type per profile. The price is the GPU count, so that
// among several NodePools Karpenter prefers the smaller server.
func KarpenterInstanceTypes(pools []NodePoolSpec) ([]byte, error) {
	types := make([]karpenterInstanceType, 0, len(pools))
	for _, s := range pools {
		p := s.Profile
		types = append(types, karpenterInstanceType{
			Name: p.Machine,
			Offerings: []karpenterOffering{{
				Price: float64(p.GPUs), Available: true,
				Requirements: []corev1.NodeSelectorRequirement{
					{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
					{Key: LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{karpenterZone}},
					{Key: LabelRegion, Operator: corev1.NodeSelectorOpIn, Values: []string{"ghostfleet"}},
				},
			}},
			Architecture:     profileArch(p),
			OperatingSystems: []string{"linux"},
			Resources:        profileCapacity(p),
		})
	}
	return json.MarshalIndent(types, "", "  ")
}

// KarpenterNodeClassObject is the KWOKNodeClass every NodePool refers to:
// nodes register at once (no emulated boot time).
func KarpenterNodeClassObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KWOKNodeClassGVR.GroupVersion().String(),
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": KarpenterNodeClass, "labels": map[string]any{LabelManaged: "true"}},
	}}
}

// NodePool is the Karpenter NodePool of s: nodes with the profile's
// labels and kwok's taint, the profile's one instance type, at most
// MaxNodes of them (as a GPU limit), consolidated when empty or
// underused.
func (s NodePoolSpec) NodePool() (*unstructured.Unstructured, error) {
	p := s.Profile
	req := func(key string, values ...string) map[string]any {
		return map[string]any{"key": key, "operator": "In", "values": values}
	}
	labels := map[string]any{}
	for k, v := range profileLabels(p) {
		labels[k] = v
	}
	pool := map[string]any{
		"apiVersion": NodePoolGVR.GroupVersion().String(),
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": s.Name(), "labels": map[string]any{LabelManaged: "true", LabelGPUProfile: p.Name}},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": KWOKNodeClassGVR.Group, "kind": "KWOKNodeClass", "name": KarpenterNodeClass},
					"requirements": []any{
						req(corev1.LabelInstanceTypeStable, p.Machine),
						req("karpenter.sh/capacity-type", "on-demand"),
						req(corev1.LabelArchStable, profileArch(p)),
						req(corev1.LabelOSStable, "linux"),
						req(LabelZone, karpenterZone),
						req(LabelRegion, "ghostfleet"),
					},
					"taints":      []any{map[string]any{"key": TaintFake, "value": "fake", "effect": string(corev1.TaintEffectNoSchedule)}},
					"expireAfter": "Never",
				},
			},
			"limits": map[string]any{ResourceGPU: strconv.Itoa(s.MaxNodes * p.GPUs)},
			"disruption": map[string]any{
				"consolidationPolicy": "WhenEmptyOrUnderutilized",
				"consolidateAfter":    s.ConsolidateAfter.String(),
			},
		},
	}
	// Through JSON, so that the object holds only JSON types, as one read
	// from the apiserver would (DeepCopy panics on []map[string]any).
	data, err := json.Marshal(pool)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	return obj, obj.UnmarshalJSON(data)
}

// AutoscalerState is what a fleet that autoscales records (State).
type AutoscalerState struct {
	Name        string   `json:"name"`
	NodePools   []string `json:"nodePools"` // GPU profiles
	MaxNodes    int      `json:"maxNodes"`  // per NodePool
	Consolidate string   `json:"consolidateAfter"`
	MetricsPort int      `json:"metricsPort"`
	HealthPort  int      `json:"healthPort"`
	Binary      string   `json:"binary"`
}

// Specs are the NodePools the state records.
func (a AutoscalerState) Specs() ([]NodePoolSpec, error) {
	d, err := time.ParseDuration(a.Consolidate)
	if err != nil {
		return nil, fmt.Errorf("autoscaler state: %w", err)
	}
	return NodePoolSpecs(a.NodePools, a.MaxNodes, d)
}

// karpenterComponent is Karpenter's kwok provider as kwokctl runs it: the
// fleet's kubeconfig, leader election off (one instance; it would also
// need a namespace for its Lease), metrics and health on 127.0.0.1 (the
// build patches its bind address), GhostFleet's instance types, and
// scraped by the fleet's Prometheus. Karpenter v1 has no webhooks.
func karpenterComponent(workdir string, a AutoscalerState) internalversion.Component {
	host := func(port int) string { return net.JoinHostPort(BindAddress, strconv.Itoa(port)) }
	return internalversion.Component{
		Name:    binaries.Karpenter,
		Links:   []string{"kube-apiserver"},
		Binary:  a.Binary,
		WorkDir: workdir,
		Args: []string{
			"--disable-leader-election=true",
			"--metrics-port=" + strconv.Itoa(a.MetricsPort),
			"--health-probe-port=" + strconv.Itoa(a.HealthPort),
			"--instance-types-file-path=" + filepath.Join(workdir, karpenterInstanceTypes),
			"--log-level=info",
		},
		Envs: []internalversion.Env{{Name: "KUBECONFIG", Value: filepath.Join(workdir, "kubeconfig.yaml")}},
		Ports: []internalversion.Port{
			{Name: "metrics", Port: uint32(a.MetricsPort), HostPort: uint32(a.MetricsPort), Protocol: internalversion.ProtocolTCP},
			{Name: "health", Port: uint32(a.HealthPort), HostPort: uint32(a.HealthPort), Protocol: internalversion.ProtocolTCP},
		},
		Metric:  &internalversion.ComponentMetric{Scheme: "http", Host: host(a.MetricsPort), Path: "/metrics"},
		Version: a.Name,
	}
}

// KarpenterHealthURL is where Karpenter answers its readiness probe.
func (a AutoscalerState) KarpenterHealthURL() string {
	return "http://" + net.JoinHostPort(BindAddress, strconv.Itoa(a.HealthPort)) + "/readyz"
}

// IsKarpenterNode reports whether Karpenter made the node.
func IsKarpenterNode(n *corev1.Node) bool { return n.Labels[LabelNodePool] != "" }

// AutoscalerNames lists what --autoscaler accepts.
func AutoscalerNames() []string { return []string{AutoscalerKarpenter} }

// CheckAutoscaler checks an --autoscaler value ("" is none).
func CheckAutoscaler(name string) error {
	if name == "" || slices.Contains(AutoscalerNames(), name) {
		return nil
	}
	return fmt.Errorf("--autoscaler %q is unknown: allowed is %s", name, strings.Join(AutoscalerNames(), ", "))
}
