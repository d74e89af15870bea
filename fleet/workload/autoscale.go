package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// AutoscaleOptions ask for Pods GPU pods of GPUs each on a fleet whose
// nodes Karpenter adds: those that do not fit wait for the nodes it makes.
type AutoscaleOptions struct {
	Pods      int           `json:"pods"`
	GPUs      int           `json:"gpusPerPod"`
	Namespace string        `json:"namespace"`
	Timeout   time.Duration `json:"timeout"`
	// ScaleDown removes the pods once they all run and waits until
	// Karpenter has removed the nodes it added.
	ScaleDown bool          `json:"scaleDown"`
	RunID     string        `json:"-"`
	Report    progress.Func `json:"-"`
	// ScaledUp, when set, is called once every pod runs, before the
	// scale-down: the caller reads the scale-up's CPU there.
	ScaledUp func() `json:"-"`
}

// Check checks the options before any cluster is asked.
func (o AutoscaleOptions) Check() error {
	if o.Pods < 1 || o.Pods > 100000 {
		return fmt.Errorf("pod count %d is out of range: allowed are 1-100000", o.Pods)
	}
	if o.GPUs < 1 || o.GPUs > 64 {
		return fmt.Errorf("GPUs per pod %d is out of range: allowed are 1-64", o.GPUs)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %s is out of range: allowed is more than 0", o.Timeout)
	}
	return CheckNamespace(o.Namespace)
}

// AutoscaleResult is what a scale-up (and scale-down) measured. Stage
// latencies are over the pods that ran on a node Karpenter added.
type AutoscaleResult struct {
	Pods    int `json:"pods"`
	Running int `json:"running"`
	// OnNewNodes counts pods that ran on nodes Karpenter added.
	OnNewNodes int `json:"onNewNodes"`
	NodeClaims int `json:"nodeClaims"`
	NodesAdded int `json:"nodesAdded"`
	// NodesRemoved counts nodes Karpenter removed after the pods went.
	NodesRemoved int `json:"nodesRemoved"`
	// PodToNodeClaim: pod created → the NodeClaim for its node created;
	// NodeClaimToReady: → its node Ready; ReadyToRunning: → the pod
	// Running; PodToRunning is the whole, for every pod.
	PodToNodeClaim   Percentiles `json:"podToNodeClaim"`
	NodeClaimToReady Percentiles `json:"nodeClaimToReady"`
	ReadyToRunning   Percentiles `json:"readyToRunning"`
	PodToRunning     Percentiles `json:"podToRunning"`
	NewNodePods      Percentiles `json:"podToRunningOnNewNodes"`
	// ScaleUpSeconds is from the first pod created to the last Running;
	// ScaleDownSeconds from the pods' deletion to the last added node gone.
	ScaleUpSeconds   float64 `json:"scaleUpSeconds"`
	ScaleDownSeconds float64 `json:"scaleDownSeconds,omitempty"`
	// Remaining says what is left when the run did not finish.
	Remaining string `json:"remaining,omitempty"`
}

// autoscaleWatch times what a run sees: pods, NodeClaims and Karpenter's
// nodes, each when this process first saw it in a state (watch events,
// so the observer costs the apiserver no polling).
type autoscaleWatch struct {
	mu           sync.Mutex
	podCreated   map[string]time.Time
	podRunning   map[string]time.Time
	podNode      map[string]string
	claimCreated map[string]time.Time
	nodeClaim    map[string]string // node → NodeClaim (its hostname label)
	nodeReady    map[string]time.Time
	nodesSeen    map[string]bool
	nodesGone    map[string]time.Time
	before       map[string]bool // Karpenter's nodes before the run
}

func newAutoscaleWatch() *autoscaleWatch {
	return &autoscaleWatch{podCreated: map[string]time.Time{}, podRunning: map[string]time.Time{}, podNode: map[string]string{},
		claimCreated: map[string]time.Time{}, nodeClaim: map[string]string{}, nodeReady: map[string]time.Time{},
		nodesSeen: map[string]bool{}, nodesGone: map[string]time.Time{}, before: map[string]bool{}}
}

func (w *autoscaleWatch) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.Status.Phase == corev1.PodRunning && w.podRunning[p.Name].IsZero() {
		w.podRunning[p.Name] = time.Now()
		w.podNode[p.Name] = p.Spec.NodeName
	}
}

func (w *autoscaleWatch) claim(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.claimCreated[u.GetName()]; !ok {
		w.claimCreated[u.GetName()] = time.Now()
	}
}

func (w *autoscaleWatch) node(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || !fleet.IsKarpenterNode(n) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodesSeen[n.Name] = true
	w.nodeClaim[n.Name] = n.Labels[corev1.LabelHostname]
	if fleet.NodeReady(n) && w.nodeReady[n.Name].IsZero() {
		w.nodeReady[n.Name] = time.Now()
	}
}

func (w *autoscaleWatch) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		w.mu.Lock()
		w.nodesGone[n.Name] = time.Now()
		w.mu.Unlock()
	}
}

// Autoscale creates the pods, times them through Karpenter's node
// provisioning to Running and, with ScaleDown, deletes them and times
// Karpenter's removal of the nodes it added.
func Autoscale(ctx context.Context, clients Clients, dc dynamic.Interface, o AutoscaleOptions) (AutoscaleResult, error) {
	res := AutoscaleResult{Pods: o.Pods}
	report := o.Report
	if report == nil {
		report = progress.Discard
	}
	cs := clients.Admin
	if err := EnsureNamespace(ctx, cs, o.Namespace); err != nil {
		return res, err
	}
	w := newAutoscaleWatch()
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = LabelRun + "=" + o.RunID }))
	nodes := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = fleet.LabelNodePool }))
	claims := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	podHandler := cache.ResourceEventHandlerFuncs{AddFunc: w.pod, UpdateFunc: func(_, o any) { w.pod(o) }}
	if _, err := pods.Core().V1().Pods().Informer().AddEventHandler(podHandler); err != nil {
		return res, err
	}
	nodeHandler := cache.ResourceEventHandlerFuncs{AddFunc: w.node, UpdateFunc: func(_, o any) { w.node(o) }, DeleteFunc: w.nodeDeleted}
	if _, err := nodes.Core().V1().Nodes().Informer().AddEventHandler(nodeHandler); err != nil {
		return res, err
	}
	if _, err := claims.ForResource(fleet.NodeClaimGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.claim}); err != nil {
		return res, err
	}
	pods.Start(ictx.Done())
	nodes.Start(ictx.Done())
	claims.Start(ictx.Done())
	pods.WaitForCacheSync(ictx.Done())
	nodes.WaitForCacheSync(ictx.Done())
	claims.WaitForCacheSync(ictx.Done())
	w.mu.Lock()
	for n := range w.nodesSeen {
		w.before[n] = true
	}
	for c := range w.claimCreated {
		delete(w.claimCreated, c) // NodeClaims from before the run
	}
	w.mu.Unlock()

	start := time.Now()
	done := progress.Step(report, "create", fmt.Sprintf("creating %d pods of %d GPUs in %s", o.Pods, o.GPUs, o.Namespace), 0)
	for i := 0; i < o.Pods; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("autoscale-%05d", i), Namespace: o.Namespace,
				Labels: map[string]string{LabelRun: o.RunID, LabelKind: "autoscale"}},
			Spec: PodSpec(o.GPUs),
		}
		created := time.Now()
		if _, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			done()
			return res, fmt.Errorf("creating pod %d of %d: %w", i+1, o.Pods, err)
		}
		w.mu.Lock()
		w.podCreated[p.Name] = created
		w.mu.Unlock()
	}
	done()

	done = progress.Step(report, "scale-up", fmt.Sprintf("waiting for %d pods to run (Karpenter adds the nodes they need)", o.Pods), 0)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		running, added := len(w.podRunning), len(w.nodesSeen)-len(w.before)
		w.mu.Unlock()
		report(progress.Event{Kind: progress.Update, Step: "scale-up", Done: running, Total: o.Pods,
			Message: fmt.Sprintf("%d nodes added", added)})
		return running >= o.Pods, nil
	})
	done()
	res.ScaleUpSeconds = time.Since(start).Seconds()
	w.summarise(&res)
	if err != nil {
		res.Remaining = fmt.Sprintf("%d of %d pods not running; the pods are in %s (`ghostfleet unload` removes them and Karpenter then the nodes)", o.Pods-res.Running, o.Pods, o.Namespace)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("timed out after %s: %d of %d pods running, %d nodes added (Karpenter's log says why)", o.Timeout, res.Running, o.Pods, res.NodesAdded)
	}
	if o.ScaledUp != nil {
		o.ScaledUp()
	}
	if !o.ScaleDown {
		return res, nil
	}

	down := time.Now()
	done = progress.Step(report, "scale-down", fmt.Sprintf("deleting the pods; waiting for Karpenter to remove the %d nodes it added", res.NodesAdded), 0)
	defer done()
	if err := cs.CoreV1().Pods(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: LabelRun + "=" + o.RunID}); err != nil {
		return res, fmt.Errorf("deleting the pods: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		gone := w.gone()
		report(progress.Event{Kind: progress.Update, Step: "scale-down", Done: gone, Total: res.NodesAdded})
		return gone >= res.NodesAdded, nil
	})
	res.NodesRemoved = w.gone()
	res.ScaleDownSeconds = time.Since(down).Seconds()
	if err != nil {
		res.Remaining = fmt.Sprintf("%d of the %d nodes Karpenter added are still there", res.NodesAdded-res.NodesRemoved, res.NodesAdded)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("timed out after %s: Karpenter removed %d of the %d nodes it added", o.Timeout, res.NodesRemoved, res.NodesAdded)
	}
	return res, nil
}

// gone counts nodes added during the run that are gone again.
func (w *autoscaleWatch) gone() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name := range w.nodesGone {
		if w.nodesSeen[name] && !w.before[name] {
			n++
		}
	}
	return n
}

// summarise turns the timestamps into the result's figures.
func (w *autoscaleWatch) summarise(res *AutoscaleResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	res.Running = len(w.podRunning)
	res.NodeClaims = len(w.claimCreated)
	res.NodesAdded = len(w.nodesSeen) - len(w.before)
	var toClaim, toReady, toRunning, total, onNew []time.Duration
	for pod, created := range w.podCreated {
		running, ok := w.podRunning[pod]
		if !ok {
			continue
		}
		total = append(total, running.Sub(created))
		node := w.podNode[pod]
		if !w.nodesSeen[node] || w.before[node] {
			continue // on a node that was there before
		}
		res.OnNewNodes++
		onNew = append(onNew, running.Sub(created))
		claimed, okc := w.claimCreated[w.nodeClaim[node]]
		ready, okr := w.nodeReady[node]
		if okc {
			toClaim = append(toClaim, claimed.Sub(created))
		}
		if okc && okr {
			toReady = append(toReady, ready.Sub(claimed))
		}
		if okr {
			toRunning = append(toRunning, running.Sub(ready))
		}
	}
	res.PodToNodeClaim, res.NodeClaimToReady = Summarise(toClaim), Summarise(toReady)
	res.ReadyToRunning, res.PodToRunning, res.NewNodePods = Summarise(toRunning), Summarise(total), Summarise(onNew)
}
