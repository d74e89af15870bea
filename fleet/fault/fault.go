package fault

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Kind names a fault.
type Kind string

// The faults GhostFleet injects.
const (
	GPUXid   Kind = fleet.FaultGPUXid
	NVLink   Kind = fleet.FaultNVLink
	RDMA     Kind = fleet.FaultRDMA
	NodeDown Kind = fleet.FaultNodeDown
	PodExit  Kind = fleet.FaultPodExit
)

// RecordKind is the kind of the run records faults leave under results/.
const RecordKind = "fault"

// Info describes a fault kind for menus and help.
type Info struct {
	Kind Kind
	// Scope is "nodes" or "pods": what the fault is applied to.
	Scope       string
	Description string
}

// Kinds lists every fault, in menu order.
var Kinds = []Info{
	{GPUXid, "nodes", "DCGM Xid error (79: GPU fallen off the bus; 48: double-bit ECC): condition GpuXidProblem (and GpuDbeMsbeProblem for ECC Xids), one GPU less allocatable, taint nvidia.com/gpu-health"},
	{NVLink, "nodes", "NVLink down: condition NvLinkProblem, taint nvidia.com/gpu-health"},
	{RDMA, "nodes", "RoCE link down on a compute-fabric NIC: condition RoCELinksProblem, taint nvidia.com/gpu-health"},
	{NodeDown, "nodes", "kubelet stops posting status: every node condition Unknown (NotReady); the node lifecycle controller taints and later evicts"},
	{PodExit, "pods", "containers (or the pre-flight init container) terminate with an exit code after a delay plus jitter; NCCL test failure = exit code 3"},
}

// KindNames lists the fault names.
func KindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k.Kind)
	}
	return out
}

// LookupKind returns the fault called name or an error listing the names.
func LookupKind(name string) (Info, error) {
	for _, k := range Kinds {
		if string(k.Kind) == name {
			return k, nil
		}
	}
	return Info{}, fmt.Errorf("unknown fault %q: allowed are %s", name, strings.Join(KindNames(), ", "))
}

// Xids are the DCGM/driver Xid errors gpu-xid knows, with the driver's
// description. ECC ones also raise GpuDbeMsbeProblem.
var Xids = map[int]struct {
	Text string
	ECC  bool
}{
	13:  {"Graphics Engine Exception", false},
	31:  {"GPU memory page fault", false},
	43:  {"GPU stopped processing", false},
	45:  {"Preemptive cleanup, due to previous errors", false},
	48:  {"Double Bit ECC Error", true},
	63:  {"ECC page retirement or row remapping recording event", true},
	64:  {"ECC page retirement or row remapper recording failure", true},
	74:  {"NVLink Error", false},
	79:  {"GPU has fallen off the bus", false},
	92:  {"High single-bit ECC error rate", true},
	94:  {"Contained ECC error", true},
	95:  {"Uncontained ECC error", true},
	119: {"GSP RPC timeout", false},
	120: {"GSP error", false},
}

func xidList() string {
	ids := slices.Sorted(maps.Keys(Xids))
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ", ")
}

// Spec is one fault to apply.
type Spec struct {
	Kind Kind `json:"kind"`

	// Node faults: how many GhostFleet GPU nodes, chosen in name order or,
	// with Random, shuffled by Seed (the same seed picks the same nodes).
	Nodes  int   `json:"nodes,omitempty"`
	Random bool  `json:"random,omitempty"`
	Seed   int64 `json:"seed,omitempty"`
	// Xid is gpu-xid's error number (default 79).
	Xid int `json:"xid,omitempty"`
	// FailPods, for gpu-xid, nvlink and rdma, also ends the pods running
	// on the faulted nodes (their containers exit with code 1 and the
	// fault's message, as a CUDA or NCCL error ends a training worker),
	// besides marking the nodes.
	FailPods bool `json:"failPods,omitempty"`

	// Pod faults.
	ExitCode  int           `json:"exitCode"`
	Reason    string        `json:"reason,omitempty"`
	Message   string        `json:"message,omitempty"`
	Container string        `json:"container,omitempty"`
	Init      bool          `json:"init,omitempty"`
	Delay     time.Duration `json:"delay,omitempty"`
	Jitter    time.Duration `json:"jitter,omitempty"`
	Namespace string        `json:"namespace,omitempty"`
	Selector  string        `json:"selector,omitempty"`
}

// nodeParams is a node fault's Spec without the pod fields.
type nodeParams struct {
	Kind     Kind  `json:"kind"`
	Nodes    int   `json:"nodes"`
	Random   bool  `json:"random,omitempty"`
	Seed     int64 `json:"seed,omitempty"`
	Xid      int   `json:"xid,omitempty"`
	FailPods bool  `json:"failPods,omitempty"`
}

// DefaultXid is gpu-xid's error when none is given: fallen off the bus.
const DefaultXid = 79

// MaxDelay bounds a pod fault's delay plus jitter.
const MaxDelay = 24 * time.Hour

// Validate checks what can be checked without the cluster.
func (s *Spec) Validate() error {
	info, err := LookupKind(string(s.Kind))
	if err != nil {
		return err
	}
	if info.Scope == "nodes" {
		if s.Nodes < 1 {
			return fmt.Errorf("--nodes %d is out of range: at least 1 node", s.Nodes)
		}
		if s.Kind == GPUXid {
			if s.Xid == 0 {
				s.Xid = DefaultXid
			}
			if _, ok := Xids[s.Xid]; !ok {
				return fmt.Errorf("--xid %d is not a known Xid: allowed are %s", s.Xid, xidList())
			}
		} else if s.Xid != 0 {
			return fmt.Errorf("--xid applies to gpu-xid only, not %s", s.Kind)
		}
		if s.FailPods && s.Kind == NodeDown {
			return fmt.Errorf("--fail-pods does not apply to node-down: a down node's pods are evicted by the node lifecycle controller, after their toleration")
		}
		return nil
	}
	switch {
	case s.ExitCode < 0 || s.ExitCode > 255:
		return fmt.Errorf("--exit-code %d is out of range: allowed are 0-255", s.ExitCode)
	case s.Delay < 0:
		return fmt.Errorf("--delay %s is out of range: it must be 0 or more", s.Delay)
	case s.Jitter < 0:
		return fmt.Errorf("--jitter %s is out of range: it must be 0 or more", s.Jitter)
	case s.Delay+s.Jitter > MaxDelay:
		return fmt.Errorf("--delay plus --jitter %s is out of range: at most %s", s.Delay+s.Jitter, MaxDelay)
	case s.Namespace == "" && s.Selector == "":
		return fmt.Errorf("pod-exit needs --namespace or --selector (or both) to say which pods fail")
	case len(s.Reason) > 256 || strings.ContainsAny(s.Reason, " \t\n"):
		return fmt.Errorf("--reason %q is not allowed: one word (CamelCase, like NCCLTestFailed), at most 256 characters", s.Reason)
	case len(s.Message) > 4096:
		return fmt.Errorf("--message is %d characters: at most 4096", len(s.Message))
	}
	if s.Selector != "" {
		if _, err := labels.Parse(s.Selector); err != nil {
			return fmt.Errorf("--selector %q is not a label selector: %v", s.Selector, err)
		}
	}
	if s.Nodes != 0 || s.Random || s.Xid != 0 || s.FailPods {
		return fmt.Errorf("--nodes, --seed, --xid and --fail-pods apply to node faults, not pod-exit")
	}
	return nil
}

// Clients are what applying a fault needs.
type Clients struct {
	Kube kubernetes.Interface
	Kwok kwokclient.Interface
}

// NewClients returns clients for target.
func NewClients(t fleet.Target) (Clients, error) {
	cs, err := t.Clientset(true)
	if err != nil {
		return Clients{}, err
	}
	cfg, err := t.RESTConfig()
	if err != nil {
		return Clients{}, err
	}
	kc, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: cs, Kwok: kc}, nil
}

// Result is what a fault (or a clear) touched; it is the run record's
// result.
type Result struct {
	Kind  Kind     `json:"kind"`
	Nodes []string `json:"nodes,omitempty"`
	Pods  int      `json:"pods,omitempty"`
	// PodNames are the first pods (namespace/name), for the report.
	PodNames []string `json:"podNames,omitempty"`
	// NotBefore and NotAfter bound when a pod fault fires.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`
	// Cleared lists what a clear removed, by kind.
	Cleared map[Kind]int `json:"cleared,omitempty"`
}

// maxPodNames bounds the pod names kept in a record.
const maxPodNames = 20

// Apply injects the fault: it validates spec and its scope against the
// cluster first (nothing is changed when anything is wrong), makes sure
// the fault stages are installed, then marks the nodes or pods. The
// returned record (kind "fault") is not written: the caller adds the
// cluster's name and writes it with record.WriteRecord, which names it.
// It is the zero Record when Apply refused and changed nothing.
func Apply(ctx context.Context, c Clients, spec Spec) (record.Record, error) {
	if err := spec.Validate(); err != nil {
		return record.Record{}, err
	}
	now := time.Now().UTC()
	rec := record.Record{Kind: RecordKind, Started: now, Ended: now, Params: spec}
	if spec.Kind != PodExit {
		rec.Params = nodeParams{Kind: spec.Kind, Nodes: spec.Nodes, Random: spec.Random, Seed: spec.Seed, Xid: spec.Xid, FailPods: spec.FailPods}
	}
	var (
		res Result
		err error
	)
	if spec.Kind == PodExit {
		res, err = applyPods(ctx, c, spec, now)
	} else {
		res, err = applyNodes(ctx, c, spec)
	}
	if err != nil && len(res.Nodes) == 0 && res.Pods == 0 && ctx.Err() == nil {
		// Refused before anything was changed: there is nothing to record.
		return record.Record{}, err
	}
	rec.Result = res
	if res.NotAfter != nil {
		rec.Ended = *res.NotAfter
	}
	rec.Phases = []record.Phase{{Name: string(spec.Kind), Start: rec.Started, End: rec.Ended}}
	rec.Outcome = record.Outcome(ctx, err)
	return rec, err
}

// ensureStages installs the fault stages a fleet created by an older
// GhostFleet lacks.
func ensureStages(ctx context.Context, c Clients) error {
	stages, err := fleet.Stages(0)
	if err != nil {
		return err
	}
	// Only GhostFleet's own stages: kwok's stock ones carry the fleet's
	// heartbeat period, which Stages(0) does not know.
	var own = stages[:0]
	for _, s := range stages {
		if strings.HasPrefix(s.Name, "ghostfleet-") || s.Name == "node-initialize" {
			own = append(own, s)
		}
	}
	if _, err := fleet.EnsureStages(ctx, c.Kwok, own); err != nil {
		return fmt.Errorf("%w (faults need kwok's Stage resource, which GhostFleet's fleets serve)", err)
	}
	return nil
}

// fakeNodes lists GhostFleet's fake GPU nodes, by name.
func fakeNodes(ctx context.Context, cs kubernetes.Interface) ([]corev1.Node, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelManaged + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if n.Annotations[fleet.AnnotationFake] == "fake" {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SelectNodes chooses k of the nodes that do not have the fault yet (and,
// for node-down, are Ready): the first k by name, or k shuffled by seed.
func SelectNodes(nodes []corev1.Node, spec Spec) ([]string, error) {
	var eligible []string
	for i := range nodes {
		n := &nodes[i]
		if n.Labels[fleet.FaultLabel(string(spec.Kind))] == fleet.FaultActive {
			continue
		}
		if spec.Kind == NodeDown && !fleet.NodeReady(n) {
			continue
		}
		eligible = append(eligible, n.Name)
	}
	if spec.Nodes > len(eligible) {
		return nil, fmt.Errorf("--nodes %d is more than the %d GhostFleet GPU nodes that could take a %s fault (%d nodes in all): allowed are 1-%d",
			spec.Nodes, len(eligible), spec.Kind, len(nodes), len(eligible))
	}
	sort.Strings(eligible)
	if spec.Random {
		r := rand.New(rand.NewPCG(uint64(spec.Seed), 0x6768_6f73_7466_6c74))
		r.Shuffle(len(eligible), func(i, j int) { eligible[i], eligible[j] = eligible[j], eligible[i] })
	}
	out := slices.Clone(eligible[:spec.Nodes])
	sort.Strings(out)
	return out, nil
}

func applyNodes(ctx context.Context, c Clients, spec Spec) (Result, error) {
	res := Result{Kind: spec.Kind}
	nodes, err := fakeNodes(ctx, c.Kube)
	if err != nil {
		return res, err
	}
	if len(nodes) == 0 {
		return res, fmt.Errorf("the fleet has no GhostFleet GPU nodes: run `ghostfleet nodes N` first")
	}
	chosen, err := SelectNodes(nodes, spec)
	if err != nil {
		return res, err
	}
	if err := ensureStages(ctx, c); err != nil {
		return res, err
	}
	kind := string(spec.Kind)
	annotations := map[string]string{}
	if spec.Kind == GPUXid {
		x := Xids[spec.Xid]
		annotations[fleet.FaultAnnotation(kind, "reason")] = fmt.Sprintf("Xid%d", spec.Xid)
		annotations[fleet.FaultAnnotation(kind, "message")] = fmt.Sprintf("Xid %d: %s", spec.Xid, x.Text)
		if x.ECC {
			annotations[fleet.FaultAnnotation(kind, "extra")] = "true"
		}
	}
	_, taint := fleet.LookupConditionFault(kind)
	done, err := forEach(ctx, len(chosen), func(ctx context.Context, i int) error {
		return updateNode(ctx, c.Kube, chosen[i], func(n *corev1.Node) {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Labels[fleet.FaultLabel(kind)] = fleet.FaultActive
			for k, v := range annotations {
				n.Annotations[k] = v
			}
			if taint && !hasGPUHealthTaint(n) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: fleet.TaintGPUHealth, Value: fleet.TaintGPUHealthValue, Effect: corev1.TaintEffectNoSchedule})
			}
		})
	})
	// An interrupted or failed marking records only the nodes it marked.
	for i, name := range chosen {
		if done[i] {
			res.Nodes = append(res.Nodes, name)
		}
	}
	if err != nil {
		return res, fmt.Errorf("marking %d nodes: %w (`ghostfleet fault clear %s` undoes what was done)", len(chosen), err, kind)
	}
	if spec.FailPods {
		f, _ := fleet.LookupConditionFault(kind)
		message := cmp.Or(annotations[fleet.FaultAnnotation(kind, "message")], f.Message)
		return failPodsOn(ctx, c, res, message, time.Now().UTC())
	}
	return res, nil
}

// failPodsOn ends the pods running or pending on res's nodes, except
// DaemonSet pods (a node's agents, not its workload): their containers
// exit with code 1 and message.
func failPodsOn(ctx context.Context, c Clients, res Result, message string, now time.Time) (Result, error) {
	live, _, err := fleet.LivePodsOnFakeNodes(ctx, c.Kube, "", "")
	if err != nil {
		return res, fmt.Errorf("the nodes are marked, but their pods were not failed: %w (`ghostfleet fault clear %s` undoes the marking)", err, res.Kind)
	}
	on := map[string]bool{}
	for _, n := range res.Nodes {
		on[n] = true
	}
	var pods []corev1.Pod
	for _, p := range live {
		if on[p.Spec.NodeName] && !ownedByDaemonSet(p) {
			pods = append(pods, p)
		}
	}
	return markPods(ctx, c, pods, Spec{Kind: PodExit, ExitCode: 1, Message: message}, now, res)
}

func ownedByDaemonSet(p corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}

func hasGPUHealthTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == fleet.TaintGPUHealth })
}

func updateNode(ctx context.Context, cs kubernetes.Interface, name string, edit func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(n)
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// SelectPods returns the pods a pod fault applies to: not being deleted,
// Running or Pending, and not on a node kwok does not fake.
func SelectPods(ctx context.Context, cs kubernetes.Interface, spec Spec) ([]corev1.Pod, error) {
	out, listed, err := fleet.LivePodsOnFakeNodes(ctx, cs, spec.Namespace, spec.Selector)
	if err != nil {
		return nil, err
	}
	where := "pods"
	if spec.Namespace != "" {
		where += " in namespace " + spec.Namespace
	}
	if spec.Selector != "" {
		where += " matching " + strconv.Quote(spec.Selector)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s are running or pending on GhostFleet's fake nodes (%d in all): nothing to fail", where, listed)
	}
	var noInit, noContainer int
	for _, p := range out {
		cs := p.Spec.Containers
		if spec.Init {
			cs = p.Spec.InitContainers
			if len(cs) == 0 {
				noInit++
				continue
			}
		}
		if spec.Container != "" && !slices.ContainsFunc(cs, func(c corev1.Container) bool { return c.Name == spec.Container }) {
			noContainer++
		}
	}
	if noInit > 0 {
		return nil, fmt.Errorf("--init: %d of the %d %s have no init container (start pods with one: `ghostfleet load --preflight`)", noInit, len(out), where)
	}
	if noContainer > 0 {
		what := "container"
		if spec.Init {
			what = "init container"
		}
		return nil, fmt.Errorf("--container %q: %d of the %d %s have no %s of that name", spec.Container, noContainer, len(out), where, what)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func podKind(init bool) string {
	if init {
		return fleet.FaultPodInitExit
	}
	return fleet.FaultPodExit
}

func applyPods(ctx context.Context, c Clients, spec Spec, now time.Time) (Result, error) {
	res := Result{Kind: spec.Kind}
	pods, err := SelectPods(ctx, c.Kube, spec)
	if err != nil {
		return res, err
	}
	if err := ensureStages(ctx, c); err != nil {
		return res, err
	}
	return markPods(ctx, c, pods, spec, now, res)
}

// markPods marks pods with spec's pod-exit fault, counting the ones
// marked into res.
func markPods(ctx context.Context, c Clients, pods []corev1.Pod, spec Spec, now time.Time, res Result) (Result, error) {
	kind := podKind(spec.Init)
	notBefore, notAfter := now.Add(spec.Delay), now.Add(spec.Delay+spec.Jitter)
	res.NotBefore, res.NotAfter = &notBefore, &notAfter
	ann := map[string]string{
		fleet.FaultAnnotation(kind, "exit-code"):  strconv.Itoa(spec.ExitCode),
		fleet.FaultAnnotation(kind, "not-before"): notBefore.Format(time.RFC3339Nano),
		fleet.FaultAnnotation(kind, "not-after"):  notAfter.Format(time.RFC3339Nano),
	}
	for param, v := range map[string]string{"reason": spec.Reason, "message": spec.Message, "container": spec.Container} {
		if v != "" {
			ann[fleet.FaultAnnotation(kind, param)] = v
		}
	}
	patch, err := metadataPatch(map[string]any{fleet.FaultLabel(kind): fleet.FaultActive}, toAny(ann))
	if err != nil {
		return res, err
	}
	done, err := forEach(ctx, len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		_, err := c.Kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, mergePatch, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil // gone meanwhile: nothing to fail
		}
		return err
	})
	for i, p := range pods {
		if !done[i] {
			continue
		}
		res.Pods++
		if len(res.PodNames) < maxPodNames {
			res.PodNames = append(res.PodNames, p.Namespace+"/"+p.Name)
		}
	}
	if err != nil {
		return res, fmt.Errorf("marking %d pods: %w (`ghostfleet fault clear pod-exit` cancels the marked ones that have not failed yet)", len(pods), err)
	}
	return res, nil
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
