package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// Emulated CPU and memory usage. kwok evaluates a ClusterResourceUsage
// for every container of the pods on its nodes; the resource metrics it
// serves from it (metricsserver/metrics-resource.yaml) are what
// metrics-server, `kubectl top` and the HorizontalPodAutoscaler read.
// kwok takes the first ClusterResourceUsage that matches a pod and does
// not merge several, so GhostFleet has one for everything it emulates:
// CPU, memory and the GPUs the DCGM series derive from.
const (
	// UsageName names GhostFleet's ClusterResourceUsage.
	UsageName = "ghostfleet-usage"
	// legacyGPUUsageName is what fleets made before it called the GPU
	// half; it would shadow UsageName, so installing removes it.
	legacyGPUUsageName = "ghostfleet-gpu-usage"

	// AnnotationUsageCPU and AnnotationUsageMemory set a pod's usage
	// (per container: each container of the pod uses that much), as
	// quantities ("800m", "2Gi"); `ghostfleet usage set` writes them.
	AnnotationUsageCPU    = "usage.ghostfleet.io/cpu"
	AnnotationUsageMemory = "usage.ghostfleet.io/memory"
	// kwok's own annotations (its usage-from-annotation example) are
	// honoured too, after GhostFleet's.
	kwokAnnotationUsageCPU    = "kwok.x-k8s.io/usage-cpu"
	kwokAnnotationUsageMemory = "kwok.x-k8s.io/usage-memory"

	// DefaultUsageCPU and DefaultUsageMemory are what a container uses
	// when its pod says nothing: a small steady load, so that `kubectl
	// top` shows every pod and an HPA has a figure to start from.
	DefaultUsageCPU    = "100m"
	DefaultUsageMemory = "256Mi"
)

// usageExpression is the CEL expression of one resource's usage: the
// pod's annotation (GhostFleet's, then kwok's), else the default.
func usageExpression(annotation, kwokAnnotation, def string) string {
	return fmt.Sprintf(`%q in pod.metadata.annotations
  ? Quantity(pod.metadata.annotations[%q])
  : %q in pod.metadata.annotations
    ? Quantity(pod.metadata.annotations[%q])
    : Quantity(%q)`, annotation, annotation, kwokAnnotation, kwokAnnotation, def)
}

// Usage is GhostFleet's ClusterResourceUsage: every container of every
// pod on the fake nodes uses the CPU and memory its pod's annotations say
// (DefaultUsageCPU and DefaultUsageMemory when they say nothing), and a
// running container the nvidia.com/gpu it holds, so that
// node.Usage("nvidia.com/gpu") is the number of busy GPUs of a node.
func Usage() *v1alpha1.ClusterResourceUsage {
	cpu := usageExpression(AnnotationUsageCPU, kwokAnnotationUsageCPU, DefaultUsageCPU)
	memory := usageExpression(AnnotationUsageMemory, kwokAnnotationUsageMemory, DefaultUsageMemory)
	gpu := `pod.status.phase == "Running" && "` + ResourceGPU + `" in container.resources.limits
  ? container.resources.limits["` + ResourceGPU + `"]
  : Quantity("0")`
	u := &v1alpha1.ClusterResourceUsage{
		ObjectMeta: metav1.ObjectMeta{Name: UsageName},
		Spec: v1alpha1.ClusterResourceUsageSpec{Usages: []v1alpha1.ResourceUsageContainer{{
			Usage: map[string]v1alpha1.ResourceUsageValue{
				"cpu":       {Expression: &cpu},
				"memory":    {Expression: &memory},
				ResourceGPU: {Expression: &gpu},
			},
		}}},
	}
	u.APIVersion, u.Kind = v1alpha1.GroupVersion.String(), v1alpha1.ClusterResourceUsageKind
	return u
}

// InstallUsage creates (or replaces) GhostFleet's ClusterResourceUsage
// and removes the GPU-only one older fleets have, which would shadow it.
func InstallUsage(ctx context.Context, cs kwokclient.Interface) error {
	u := Usage()
	_, err := cs.KwokV1alpha1().ClusterResourceUsages().Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *v1alpha1.ClusterResourceUsage
		if cur, err = cs.KwokV1alpha1().ClusterResourceUsages().Get(ctx, u.Name, metav1.GetOptions{}); err == nil {
			u.ResourceVersion = cur.ResourceVersion
			_, err = cs.KwokV1alpha1().ClusterResourceUsages().Update(ctx, u, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("installing kwok ClusterResourceUsage %s: %w", u.Name, err)
	}
	err = cs.KwokV1alpha1().ClusterResourceUsages().Delete(ctx, legacyGPUUsageName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the older kwok ClusterResourceUsage %s: %w", legacyGPUUsageName, err)
	}
	return nil
}

// ParseUsage reads a usage value typed for flag (--cpu, --memory): a
// Kubernetes quantity above zero. The error names the value and
// what is allowed.
func ParseUsage(flag, value string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		example := "800m, 2 (cores)"
		if flag == "--memory" {
			example = "512Mi, 2Gi, 1.5G"
		}
		return q, fmt.Errorf("%s %q is not a quantity: allowed are Kubernetes quantities such as %s", flag, value, example)
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("%s %q is not above zero: usage must be more than 0 (metrics-server drops a container that reports none)", flag, value)
	}
	return q, nil
}

// UsageChange is a change of the emulated usage of the pods that
// Namespace (every namespace when empty) and Selector (a label selector)
// pick; CPU and Memory are quantities, an empty one stays as it is.
type UsageChange struct {
	Namespace string `json:"namespace,omitempty"`
	Selector  string `json:"selector,omitempty"`
	CPU       string `json:"cpu,omitempty"`
	Memory    string `json:"memory,omitempty"`
}

// Validate checks the change without the cluster; each error names the
// value and what is allowed.
func (c UsageChange) Validate() error {
	if c.CPU == "" && c.Memory == "" {
		return fmt.Errorf("nothing to set: give --cpu (e.g. 800m) and/or --memory (e.g. 2Gi)")
	}
	if c.CPU != "" {
		if _, err := ParseUsage("--cpu", c.CPU); err != nil {
			return err
		}
	}
	if c.Memory != "" {
		if _, err := ParseUsage("--memory", c.Memory); err != nil {
			return err
		}
	}
	if c.Namespace == "" && c.Selector == "" {
		return fmt.Errorf("say which pods: --selector (e.g. ghostfleet.io/workload for all of GhostFleet's, app=trainer) and/or --namespace")
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q is not a namespace name: lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit", c.Namespace)
		}
	}
	if c.Selector != "" {
		if _, err := labels.Parse(c.Selector); err != nil {
			return fmt.Errorf("--selector %q is not a label selector (allowed: key=value, key!=value, key in (a,b), key, !key, comma-separated): %v", c.Selector, err)
		}
	}
	return nil
}

// where says which pods, for messages.
func (c UsageChange) where() string {
	s := "pods"
	if c.Selector != "" {
		s += " matching " + strconv.Quote(c.Selector)
	}
	if c.Namespace != "" {
		s += " in namespace " + c.Namespace
	} else {
		s += " in any namespace"
	}
	return s
}

// annotations are the pod annotations the change writes.
func (c UsageChange) annotations() map[string]string {
	a := map[string]string{}
	if c.CPU != "" {
		a[AnnotationUsageCPU] = c.CPU
	}
	if c.Memory != "" {
		a[AnnotationUsageMemory] = c.Memory
	}
	return a
}

// UsageSet is what SetUsage changed.
type UsageSet struct {
	// Pods counts the pods whose usage was set; PodNames are the first
	// ones (namespace/name).
	Pods     int      `json:"pods"`
	PodNames []string `json:"podNames,omitempty"`
	// Matched counts the pods that the change picked.
	Matched int `json:"matched"`
}

// maxUsagePodNames bounds the pod names kept in a result.
const maxUsagePodNames = 20

// SetUsage sets the emulated usage of the pods c picks that are pending
// or running on kwok's fake nodes, by annotating them; kwok serves the new
// figures from its next scrape on. It validates c and picks the pods
// before changing anything: an error then means nothing was changed. A
// patch that fails part way stops the rest and says how many were set.
func SetUsage(ctx context.Context, cs kubernetes.Interface, c UsageChange, report progress.Func) (UsageSet, error) {
	if report == nil {
		report = progress.Discard
	}
	if err := c.Validate(); err != nil {
		return UsageSet{}, err
	}
	pods, err := usagePods(ctx, cs, c)
	if err != nil {
		return UsageSet{}, err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": c.annotations()}})
	if err != nil {
		return UsageSet{}, err
	}
	res := UsageSet{Matched: len(pods)}
	for i := 0; i < len(pods) && i < maxUsagePodNames; i++ {
		res.PodNames = append(res.PodNames, pods[i].Namespace+"/"+pods[i].Name)
	}
	done := progress.Step(report, "usage", fmt.Sprintf("setting the usage of %d %s", len(pods), c.where()), 0)
	res.Pods, err = parallel(ctx, len(pods), 16, report, "usage", func(ctx context.Context, k int) error {
		p := pods[k]
		_, err := cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil // gone since the list: nothing to set
		}
		return err
	})
	done()
	if err != nil && ctx.Err() == nil {
		return res, fmt.Errorf("setting usage: %d of %d %s set, then: %w (run the same command again to finish)", res.Pods, len(pods), c.where(), err)
	}
	return res, nil
}

// usagePods lists the pods c picks that are pending or running on kwok's
// fake nodes (or not yet scheduled), sorted by namespace and name; it is
// an error when there are none.
func usagePods(ctx context.Context, cs kubernetes.Interface, c UsageChange) ([]corev1.Pod, error) {
	out, listed, err := LivePodsOnFakeNodes(ctx, cs, c.Namespace, c.Selector)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if listed == 0 {
			return nil, fmt.Errorf("no %s: nothing changed (see `kubectl get pods -A --show-labels` for the labels there are)", c.where())
		}
		return nil, fmt.Errorf("none of the %d %s is pending or running on GhostFleet's fake nodes: nothing changed", listed, c.where())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
