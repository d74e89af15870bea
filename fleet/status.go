package fleet

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// LabelWorkloadNamespace marks the namespaces GhostFleet's workloads use.
const LabelWorkloadNamespace = "ghostfleet.io/workloads"

// Status is a point-in-time view of a fleet.
type Status struct {
	Cluster    string            `json:"cluster"`
	Attached   bool              `json:"attached"`
	Profile    string            `json:"profile,omitempty"`
	Kubeconfig string            `json:"kubeconfig"`
	Components []ComponentHealth `json:"components"`
	Nodes      NodeCounts        `json:"nodes"`
	GPUs       GPUCounts         `json:"gpus"`
	Pods       PodCounts         `json:"pods"`
	Prometheus PrometheusStatus  `json:"prometheus"`
	// Etcd is etcd's alarms and database size (GhostFleet's own fleet;
	// nil when etcd did not answer or the cluster is attached).
	Etcd *EtcdSpace `json:"etcd,omitempty"`
	// Autoscaler is the fleet's Karpenter and its NodePools (nil when the
	// fleet does not autoscale).
	Autoscaler *AutoscalerStatus `json:"autoscaler,omitempty"`
}

// ComponentHealth is one control-plane process.
type ComponentHealth struct {
	Name    string `json:"name"`
	Running bool   `json:"running"`
	Healthy bool   `json:"healthy"`
	Detail  string `json:"detail,omitempty"`
}

// NodeCounts counts nodes.
type NodeCounts struct {
	Total int `json:"total"`
	Ready int `json:"ready"`
	Fake  int `json:"fake"`
}

// GPUCounts counts nvidia.com/gpu.
type GPUCounts struct {
	Allocatable int64 `json:"allocatable"`
	Allocated   int64 `json:"allocated"`
	// Devices is how many of Allocatable are DRA devices (ResourceSlices
	// of DRADriver) rather than nvidia.com/gpu; their allocations, from
	// ResourceClaims, count in Allocated alike.
	Devices int64 `json:"devices,omitempty"`
}

// PodCounts counts pods by phase in GhostFleet's workload namespaces.
type PodCounts struct {
	Namespaces []string `json:"namespaces"`
	Pending    int      `json:"pending"`
	Running    int      `json:"running"`
	Succeeded  int      `json:"succeeded"`
	Failed     int      `json:"failed"`
}

// PrometheusStatus is whether Prometheus answers and scrapes its targets.
type PrometheusStatus struct {
	URL string `json:"url"`
	// Version is the release GhostFleet's own fleet runs ("v3.16.0", or
	// "v2.42.0 (Debian's package)"); empty for an attached cluster.
	Version string `json:"version,omitempty"`
	// Pending is set while the fleet waits for its Prometheus to be
	// built (State.PrometheusPending).
	Pending   bool             `json:"pending,omitempty"`
	Reachable bool             `json:"reachable"`
	Error     string           `json:"error,omitempty"`
	Targets   []metrics.Target `json:"targets,omitempty"`
}

// Healthy reports whether every component is healthy and etcd has no
// alarm raised (with NOSPACE it answers, but refuses every write).
func (s Status) Healthy() bool {
	if s.Etcd != nil && len(s.Etcd.Alarms) > 0 {
		return false
	}
	for _, c := range s.Components {
		if !c.Healthy {
			return false
		}
	}
	return len(s.Components) > 0
}

// GetStatus gathers the status of target. prometheusURL may be empty for
// an attached cluster without a known Prometheus.
func GetStatus(ctx context.Context, t Target, prometheusURL string) (Status, error) {
	st := Status{Cluster: t.Name, Attached: t.Attached(), Kubeconfig: t.Kubeconfig}
	var autoscaler *AutoscalerState
	if !t.Attached() {
		state, err := LoadState(t.Name)
		if err != nil {
			return st, fmt.Errorf("fleet %q is not up (%v): run `ghostfleet up`", t.Name, err)
		}
		autoscaler = state.Autoscaler
		st.Profile = state.Profile
		prometheusURL = state.PrometheusURL()
		if prometheusURL != "" { // a fleet up with --prometheus-port 0 runs none
			st.Prometheus.Version = state.RunningVersions().Prometheus
		}
		st.Prometheus.Pending = state.PrometheusPending
	}
	st.Prometheus.URL = prometheusURL
	if prometheusURL != "" && !st.Prometheus.Pending {
		if prom, err := metrics.NewPrometheus(prometheusURL); err != nil {
			st.Prometheus.Error = err.Error()
		} else if targets, err := prom.Targets(ctx); err != nil {
			st.Prometheus.Error = err.Error()
		} else {
			st.Prometheus.Reachable = true
			st.Prometheus.Targets = targets
		}
	}

	cs, err := t.Clientset(false)
	if err != nil {
		return st, err
	}
	apiserver := ComponentHealth{Name: "kube-apiserver"}
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		apiserver.Detail = "/readyz: " + err.Error()
	} else {
		apiserver.Healthy = string(body) == "ok"
		apiserver.Running = true
		apiserver.Detail = "/readyz: " + string(body)
	}
	if t.Attached() {
		st.Components = append([]ComponentHealth{apiserver}, AttachedComponents(t)...)
		st.Components = append(st.Components, RemoteKwokHealth(ctx, t, cs)...)
	} else {
		st.Components = ownComponents(ctx, t.Name, apiserver, st.Prometheus)
		if space, err := EtcdStatus(ctx, t.Name); err == nil {
			st.Etcd = &space
		}
	}
	if !apiserver.Healthy {
		return st, nil
	}
	if err := countNodes(ctx, cs, &st); err != nil {
		return st, err
	}
	if err := countPods(ctx, cs, &st); err != nil {
		return st, err
	}
	if autoscaler != nil {
		if st.Autoscaler, err = autoscalerStatus(ctx, t, *autoscaler); err != nil {
			return st, err
		}
	}
	dra, err := ListDRA(ctx, cs)
	if err != nil {
		return st, err
	}
	st.GPUs.Devices = dra.Devices()
	st.GPUs.Allocatable += st.GPUs.Devices
	for _, n := range dra.Allocated {
		st.GPUs.Allocated += n
	}
	return st, nil
}

// ownComponents checks each process kwok started: alive (kwok's pid
// files), and healthy when Prometheus's last scrape of it succeeded (the
// apiserver: when /readyz answers ok).
func ownComponents(ctx context.Context, name string, apiserver ComponentHealth, prom PrometheusStatus) []ComponentHealth {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return []ComponentHealth{apiserver}
	}
	components, err := rt.ListComponents(ctx)
	if err != nil {
		return []ComponentHealth{apiserver}
	}
	scrape := map[string]metrics.Target{}
	for _, t := range prom.Targets {
		scrape[t.Job] = t
	}
	out := make([]ComponentHealth, 0, len(components))
	for _, c := range components {
		h := ComponentHealth{Name: c.Name, Running: componentAlive(name, c.Name)}
		switch {
		case !h.Running:
			h.Detail = "process not running"
		case c.Name == apiserver.Name:
			h.Healthy, h.Detail = apiserver.Healthy, apiserver.Detail
		case c.Name == "prometheus":
			h.Healthy = prom.Reachable
			h.Detail = "HTTP API answers"
			if !prom.Reachable {
				h.Detail = prom.Error
			}
		default:
			if t, ok := scrape[c.Name]; ok {
				h.Healthy = t.Up()
				h.Detail = "scrape " + t.Health
				if t.LastError != "" {
					h.Detail += ": " + t.LastError
				}
			} else {
				h.Healthy = true
				h.Detail = "process alive (not scraped)"
			}
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func countNodes(ctx context.Context, cs kubernetes.Interface, st *Status) error {
	// A consistent read: status right after `nodes N` must show N, and a
	// list at resourceVersion 0 may still serve the cache's older view.
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		st.Nodes.Total++
		if NodeReady(n) {
			st.Nodes.Ready++
		}
		if n.Annotations[AnnotationFake] == "fake" {
			st.Nodes.Fake++
		}
		if q, ok := n.Status.Allocatable[ResourceGPU]; ok {
			st.GPUs.Allocatable += q.Value()
		}
	}
	return nil
}

// countPods counts GPUs held by every bound, unfinished pod in the
// cluster, and pods by phase in GhostFleet's workload namespaces.
func countPods(ctx context.Context, cs kubernetes.Interface, st *Status) error {
	namespaces, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelWorkloadNamespace + "=true"})
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	ours := map[string]bool{}
	st.Pods.Namespaces = []string{}
	for _, ns := range namespaces.Items {
		ours[ns.Name] = true
		st.Pods.Namespaces = append(st.Pods.Namespaces, ns.Name)
	}
	return EachPod(ctx, cs, func(p *corev1.Pod) {
		if HoldsGPUs(p) {
			st.GPUs.Allocated += PodGPUs(p)
		}
		if !ours[p.Namespace] {
			return
		}
		switch p.Status.Phase {
		case corev1.PodPending:
			st.Pods.Pending++
		case corev1.PodRunning:
			st.Pods.Running++
		case corev1.PodSucceeded:
			st.Pods.Succeeded++
		case corev1.PodFailed:
			st.Pods.Failed++
		}
	})
}

// EachPod calls fn for every pod in the cluster, a page at a time.
func EachPod(ctx context.Context, cs kubernetes.Interface, fn func(*corev1.Pod)) error {
	opts := metav1.ListOptions{Limit: 1000}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// AllocatedGPUs sums the GPUs held on each node by bound, unfinished pods.
func AllocatedGPUs(ctx context.Context, cs kubernetes.Interface) (map[string]int64, error) {
	used := map[string]int64{}
	err := EachPod(ctx, cs, func(p *corev1.Pod) {
		if HoldsGPUs(p) {
			used[p.Spec.NodeName] += PodGPUs(p)
		}
	})
	return used, err
}

// HoldsGPUs says the pod holds its GPUs on a node: bound and not finished.
func HoldsGPUs(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// PodGPUs is the pod's effective nvidia.com/gpu request, as the scheduler
// counts it: the larger of the sum over containers and any init container.
// It is 0 once the scheduler has served the request with DRA devices
// (status.extendedResourceClaimStatus names the claim it made for them,
// see NewDeviceClass): those GPUs are the claim's devices and count with
// every claim's (ClaimGPUs), not a second time here.
func PodGPUs(p *corev1.Pod) int64 {
	if p.Status.ExtendedResourceClaimStatus != nil {
		return 0
	}
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		sum += gpuRequest(c)
	}
	for _, c := range p.Spec.InitContainers {
		initMax = max(initMax, gpuRequest(c))
	}
	return max(sum, initMax)
}

func gpuRequest(c corev1.Container) int64 {
	if q, ok := c.Resources.Requests[ResourceGPU]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[ResourceGPU]; ok {
		return q.Value()
	}
	return 0
}
