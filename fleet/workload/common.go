// Package workload is the load GhostFleet puts on its fleet: bulk GPU pods
// (load), open-loop create/delete churn, with the accounting that makes
// their numbers comparable to ClusterLoader2's.
package workload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// Labels on everything a workload creates.
const (
	LabelRun  = "ghostfleet.io/run"
	LabelKind = "ghostfleet.io/workload"
	// Image is never pulled: kwok fakes the containers.
	Image = "registry.k8s.io/pause:3.10"
	// ServiceAccount is the identity workload traffic is sent as. It is not
	// an administrator, so API Priority and Fairness treats it like any
	// tenant (priority level workload-low) instead of exempting it.
	ServiceAccount = "ghostfleet-load"
)

// Clients are the two identities a workload uses: the load identity for
// the requests being measured, and an administrator for set-up and for
// watching (the observer must not be throttled like the load).
type Clients struct {
	Admin kubernetes.Interface
	// LoadConfig builds the load client for a namespace: unthrottled on the
	// client side and impersonating the namespace's ServiceAccount.
	LoadConfig func(namespace string) (*rest.Config, error)
}

// NewClients returns clients for target.
func NewClients(t fleet.Target) (Clients, error) {
	admin, err := t.Clientset(true)
	if err != nil {
		return Clients{}, err
	}
	base, err := t.RESTConfig()
	if err != nil {
		return Clients{}, err
	}
	return Clients{
		Admin: admin,
		LoadConfig: func(ns string) (*rest.Config, error) {
			cfg := rest.CopyConfig(base)
			cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
			cfg.Impersonate = rest.ImpersonationConfig{
				UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, ServiceAccount),
				Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			}
			cfg.UserAgent = "ghostfleet-load"
			return cfg, nil
		},
	}, nil
}

// LoadClientset is the load identity's clientset for ns, with a counter
// of every request it sends: none is retried (see requests.Counter), so
// each 429 is counted where the run meets it.
func (c Clients) LoadClientset(ns string) (kubernetes.Interface, *requests.Counter, error) {
	cfg, err := c.LoadConfig(ns)
	if err != nil {
		return nil, nil, err
	}
	counter := requests.NewCounter()
	counter.Configure(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	return cs, counter, err
}

// CheckNamespace checks a workload namespace's name before any cluster is
// asked: a DNS-1123 label, as Kubernetes requires.
func CheckNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("--namespace %q is not a namespace name: lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit (e.g. gf-load)", ns)
	}
	return nil
}

// loadRules are what the load identity may do in a workload namespace:
// the workloads, and the PodGroups of gang-scheduled training jobs.
var loadRules = []rbacv1.PolicyRule{{
	APIGroups: []string{"", "apps", "batch", "scheduling.k8s.io"},
	Resources: []string{"pods", "deployments", "jobs", "replicasets", "podgroups", "workloads"},
	Verbs:     []string{"create", "delete", "deletecollection", "get", "list", "watch", "patch", "update"},
}}

// EnsureNamespace creates (or reuses) a workload namespace with the load
// identity and its permissions in it.
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{fleet.LabelWorkloadNamespace: "true", fleet.LabelManaged: "true"},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if existing.DeletionTimestamp != nil {
			return fmt.Errorf("namespace %s is still being deleted from an earlier run; wait a few seconds and retry", ns)
		}
		if existing.Labels[fleet.LabelWorkloadNamespace] != "true" {
			return fmt.Errorf("namespace %s exists but is not a GhostFleet workload namespace; pick another with --namespace", ns)
		}
	} else if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount},
				Rules:      loadRules,
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) { // a namespace from before a rule was added gets it
				var role *rbacv1.Role
				if role, err = cs.RbacV1().Roles(ns).Get(ctx, ServiceAccount, metav1.GetOptions{}); err == nil && !equality.Semantic.DeepEqual(role.Rules, loadRules) {
					role.Rules = loadRules
					_, err = cs.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
				}
			}
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: ServiceAccount},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: ServiceAccount, Namespace: ns}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("setting up namespace %s: %w", ns, err)
		}
	}
	// Pods are admitted only once the namespace's default ServiceAccount
	// exists; the controller-manager creates it within moments.
	return waitDefaultServiceAccount(ctx, cs, ns, 30*time.Second)
}

// waitDefaultServiceAccount waits until ns has its default ServiceAccount,
// or says why not: pods sent before it exists are refused.
func waitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf("namespace %s has no default ServiceAccount after %s (is the controller-manager running?): %v", ns, timeout, last)
	}
}

// PodSpec is the spec of every GPU pod: it requests gpus nvidia.com/gpu
// (as limits, as the device plugin convention wants), selects kwok's fake
// nodes and tolerates their taint, so it can never land on a real node.
func PodSpec(gpus int) corev1.PodSpec {
	q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	zero := int64(0)
	no := false
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:      "gpu",
			Image:     Image,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{fleet.ResourceGPU: q}},
		}},
		NodeSelector:                  map[string]string{fleet.LabelType: "kwok"},
		Tolerations:                   []corev1.Toleration{{Key: fleet.TaintFake, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		TerminationGracePeriodSeconds: &zero,
		AutomountServiceAccountToken:  &no,
		RestartPolicy:                 corev1.RestartPolicyAlways,
	}
}

// PreflightContainer is the name of the init container WithPreflight adds.
const PreflightContainer = "preflight"

// WithPreflight adds a pre-flight init container to spec, like the NCCL
// all-reduce and GPU burn checks training platforms run before the job:
// kwok completes it at once unless a fault (`fault pod-exit --init`)
// makes it fail.
func WithPreflight(spec corev1.PodSpec) corev1.PodSpec {
	spec.InitContainers = append(spec.InitContainers, corev1.Container{
		Name:      PreflightContainer,
		Image:     Image,
		Resources: spec.Containers[0].Resources,
	})
	return spec
}

// Capacity is what the fleet offers a workload.
type Capacity struct {
	FakeNodes   int
	TotalGPUs   int64
	FreeGPUs    int64
	MaxNodeGPUs int64
	// Devices, FreeDevices and MaxNodeDevices are the same for GPUs
	// published through DRA (ResourceSlices of fleet.DRADriver), and
	// Products counts those devices by productName.
	Devices, FreeDevices, MaxNodeDevices int64
	Products                             map[string]int64
	// ServesExtended says a DeviceClass serves nvidia.com/gpu requests
	// with those devices (fleet.ServesExtendedGPU): pods that ask for
	// nvidia.com/gpu run on a DRA fleet too.
	ServesExtended bool
}

// DRA says the fleet offers its GPUs only as devices.
func (c Capacity) DRA() bool { return c.TotalGPUs == 0 && c.Devices > 0 }

// CheckFleet refuses to run when pods could land on nodes that are not
// kwok fake nodes (a real node labelled type=kwok), or when there are no
// fake nodes at all; it returns what the fleet offers.
func CheckFleet(ctx context.Context, cs kubernetes.Interface) (Capacity, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelType + "=kwok"})
	if err != nil {
		return Capacity{}, fmt.Errorf("listing nodes: %w", err)
	}
	var c Capacity
	allocatable := map[string]int64{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Annotations[fleet.AnnotationFake] != "fake" {
			return Capacity{}, fmt.Errorf("node %s is labelled %s=kwok but is not a kwok fake node (no %s annotation): refusing to place load where it could land on it",
				n.Name, fleet.LabelType, fleet.AnnotationFake)
		}
		q := n.Status.Allocatable[fleet.ResourceGPU]
		allocatable[n.Name] = q.Value()
		c.FakeNodes++
		c.MaxNodeGPUs = max(c.MaxNodeGPUs, q.Value())
		c.TotalGPUs += q.Value()
	}
	c.FreeGPUs = c.TotalGPUs
	if c.FakeNodes == 0 {
		return c, fmt.Errorf("the fleet has no fake GPU nodes: run `ghostfleet nodes N` first")
	}
	used, err := fleet.AllocatedGPUs(ctx, cs)
	if err != nil {
		return c, err
	}
	for node, n := range used {
		if _, ok := allocatable[node]; ok {
			c.FreeGPUs -= n
		}
	}
	dra, err := fleet.ListDRA(ctx, cs)
	if err != nil {
		return c, err
	}
	if len(dra.Products) > 0 {
		c.Products = dra.Products
	}
	for node, n := range dra.Published {
		if _, ok := allocatable[node]; ok {
			c.Devices += n
			c.FreeDevices += n - dra.Allocated[node]
			c.MaxNodeDevices = max(c.MaxNodeDevices, n)
		}
	}
	if c.Devices > 0 {
		c.ServesExtended, err = fleet.ServesExtendedGPU(ctx, cs)
	}
	return c, err
}

// DeleteAll removes every GhostFleet workload namespace (and so every pod,
// Deployment and Job in them) and waits until they are gone.
func DeleteAll(ctx context.Context, cs kubernetes.Interface) (int, error) {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelWorkloadNamespace + "=true"})
	if err != nil {
		return 0, err
	}
	for _, ns := range list.Items {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	left := 0
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelWorkloadNamespace + "=true"})
		if err != nil {
			return false, err
		}
		left = len(l.Items)
		return left == 0, nil
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, fmt.Errorf("%d namespaces still terminating: %w", left, ctx.Err())
	case err != nil:
		return 0, err
	}
	return len(list.Items), nil
}

// run is what a started run sends and watches through.
type run struct {
	load     kubernetes.Interface // the load identity, never retrying
	requests *requests.Counter    // every request load sent
	tracker  *Tracker
}

// startRun prepares a run's namespace and starts watching its pods (those
// labelled with runID).
func startRun(ctx context.Context, clients Clients, ns, runID, groupLabel string) (run, error) {
	if err := EnsureNamespace(ctx, clients.Admin, ns); err != nil {
		return run{}, err
	}
	load, counter, err := clients.LoadClientset(ns)
	if err != nil {
		return run{}, err
	}
	tracker, err := StartTracker(ctx, clients.Admin, ns, LabelRun+"="+runID, groupLabel)
	if err != nil {
		return run{}, err
	}
	return run{load: load, requests: counter, tracker: tracker}, nil
}
