package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kwok/kustomize/crd"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// Attaching prepares a cluster GhostFleet did not create: kwok's CRDs,
// GhostFleet's stages, a record of what was installed, and (run locally,
// see localkwok.go) a kwok controller that manages only GhostFleet's
// nodes. Everything it creates carries LabelManaged, so that detaching
// finds it again and touches nothing else.
const (
	// AttachNamespace holds the attachment record.
	AttachNamespace = "ghostfleet-system"
	// AttachRecord is the ConfigMap in AttachNamespace that says the
	// cluster is prepared and which CRDs GhostFleet installed.
	AttachRecord = "ghostfleet-attach"
	// KwokNodeSelector is the label selector the local kwok controller
	// manages nodes by: GhostFleet's label and kwokctl's type label, both
	// on every node GhostFleet creates (NewNode) and on no other.
	KwokNodeSelector = LabelManaged + "=true," + LabelType + "=kwok"
)

// MaxKwokShards bounds attach --kwok-shards.
const MaxKwokShards = 16

// ShardSelector is the label selector of shard i of k kwok controllers:
// KwokNodeSelector and, when k > 1, the 32-node blocks whose number is i
// modulo k (topology.ghostfleet.io/block, on every GhostFleet node), so
// that the shards own disjoint slices of the nodes through kwok's own
// node selection, whole blocks each, without a label of their own.
func ShardSelector(i, k int) string {
	if k <= 1 {
		return KwokNodeSelector
	}
	var blocks []string
	for b := i; b*nodesPerBlock < MaxNodes; b += k {
		blocks = append(blocks, fmt.Sprintf("block-%03d", b))
	}
	return KwokNodeSelector + "," + LabelBlock + " in (" + strings.Join(blocks, ",") + ")"
}

// kwokCRDs are the kwok CRDs an attached cluster needs, from kwok's own
// module (the manifests kwokctl installs): stages for the lifecycles and
// faults, Metric and ClusterResourceUsage for DCGM series.
var kwokCRDs = []struct {
	Kind     string
	Manifest []byte
}{
	{"Stage", crd.Stage},
	{"Metric", crd.Metric},
	{"ClusterResourceUsage", crd.ClusterResourceUsage},
}

// KwokCRDKinds are the kinds the local kwok controller is started with
// (--enable-crds).
func KwokCRDKinds() []string {
	out := make([]string, len(kwokCRDs))
	for i, c := range kwokCRDs {
		out[i] = c.Kind
	}
	return out
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Attachment is what the attachment record says.
type Attachment struct {
	// Server and Context name the cluster as the attaching user saw it.
	Server  string `json:"server"`
	Context string `json:"context,omitempty"`
	// InstalledCRDs are the CRDs GhostFleet created (and detach deletes);
	// CRDs that were there before are never in it.
	InstalledCRDs []string  `json:"installedCRDs,omitempty"`
	Since         time.Time `json:"since"`
	// NodeSelector is what the local kwok controller manages.
	NodeSelector string `json:"nodeSelector"`
	// KwokShards is how many kwok controllers share the nodes; the last
	// RemoteShards of them run on other machines (ghostfleet kwok-shard
	// reads this to check its --shard and --of).
	KwokShards   int `json:"kwokShards,omitempty"`
	RemoteShards int `json:"remoteShards,omitempty"`
}

// ReadAttachment reads the attachment record; ok is false when the
// cluster has none (not attached, or detached).
func ReadAttachment(ctx context.Context, cs kubernetes.Interface) (a Attachment, ok bool, err error) {
	cm, err := cs.CoreV1().ConfigMaps(AttachNamespace).Get(ctx, AttachRecord, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if cm.Labels[LabelManaged] != "true" {
		return a, false, nil
	}
	if err := json.Unmarshal([]byte(cm.Data["attachment.json"]), &a); err != nil {
		return a, false, fmt.Errorf("configmap %s/%s: %w", AttachNamespace, AttachRecord, err)
	}
	return a, true, nil
}

// PrepareOptions say what to install on an attached cluster.
type PrepareOptions struct {
	Server, Context string
	// DCGMGPUs, when above 0, installs the DCGM Metric for nodes of that
	// many GPUs.
	DCGMGPUs int
	// KwokShards and RemoteShards go into the attachment record.
	KwokShards, RemoteShards int
	Report                   progress.Func
}

// Prepared says what Prepare did.
type Prepared struct {
	// CRDsInstalled are the CRDs created now; CRDsKept those that were
	// there already (not GhostFleet's unless an earlier attach made them).
	CRDsInstalled []string `json:"crdsInstalled,omitempty"`
	CRDsKept      []string `json:"crdsKept,omitempty"`
	// Stages counts the stages created or updated.
	Stages int  `json:"stages"`
	DCGM   bool `json:"dcgm,omitempty"`
	// Again is true when the cluster was attached already.
	Again bool `json:"again,omitempty"`
}

// Prepare installs what GhostFleet needs on an attached cluster: its
// namespace, kwok's CRDs (those missing), GhostFleet's stages and the
// attachment record. It refuses to replace anything it did not create.
func Prepare(ctx context.Context, cfg *rest.Config, o PrepareOptions) (Prepared, error) {
	var out Prepared
	report := o.Report
	if report == nil {
		report = progress.Discard
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return out, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return out, err
	}
	kc, err := kwokclient.NewForConfig(cfg)
	if err != nil {
		return out, err
	}
	prev, again, err := ReadAttachment(ctx, cs)
	if err != nil {
		return out, err
	}
	out.Again = again

	// The namespace first: a cluster that has one of that name which is
	// not GhostFleet's is refused before anything is written.
	ns, err := cs.CoreV1().Namespaces().Get(ctx, AttachNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: managedMeta(AttachNamespace)}, metav1.CreateOptions{})
		if err != nil {
			return out, fmt.Errorf("creating namespace %s: %w", AttachNamespace, err)
		}
	case err != nil:
		return out, fmt.Errorf("reading namespace %s: %w", AttachNamespace, err)
	case ns.Labels[LabelManaged] != "true":
		return out, fmt.Errorf("namespace %s exists and is not GhostFleet's (no %s=true label): refusing to use it", AttachNamespace, LabelManaged)
	case ns.DeletionTimestamp != nil:
		return out, fmt.Errorf("namespace %s is still being deleted by an earlier detach; wait a few seconds and attach again", AttachNamespace)
	}

	installed := slices.Clone(prev.InstalledCRDs)
	for _, c := range kwokCRDs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(c.Manifest, &obj.Object); err != nil {
			return out, fmt.Errorf("kwok's %s CRD manifest: %w", c.Kind, err)
		}
		name := obj.GetName()
		cur, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[LabelManaged] = "true"
			obj.SetLabels(labels)
			if _, err := dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return out, fmt.Errorf("installing kwok's CRD %s: %w", name, err)
			}
			out.CRDsInstalled = append(out.CRDsInstalled, name)
			if !slices.Contains(installed, name) {
				installed = append(installed, name)
			}
			report(progress.Event{Kind: progress.Info, Message: "installed CRD " + name})
		case err != nil:
			return out, fmt.Errorf("reading CRD %s: %w", name, err)
		default:
			if !slices.Contains(installed, name) && cur.GetLabels()[LabelManaged] == "true" {
				installed = append(installed, name) // an attach cut short before its record
			}
			out.CRDsKept = append(out.CRDsKept, name)
		}
		if err := waitEstablished(ctx, dyn, name); err != nil {
			return out, err
		}
	}
	sort.Strings(installed)

	// Record what was installed before the stages: a detach after a
	// failure below still finds the CRDs to delete.
	a := Attachment{Server: o.Server, Context: o.Context, InstalledCRDs: installed, Since: prev.Since, NodeSelector: KwokNodeSelector,
		KwokShards: o.KwokShards, RemoteShards: o.RemoteShards}
	if a.Since.IsZero() {
		a.Since = time.Now().UTC()
	}
	if err := writeAttachment(ctx, cs, a); err != nil {
		return out, err
	}

	stages, err := Stages(0)
	if err != nil {
		return out, err
	}
	for _, s := range stages {
		cur, err := kc.KwokV1alpha1().Stages().Get(ctx, s.Name, metav1.GetOptions{})
		if err == nil && cur.Labels[LabelManaged] != "true" {
			return out, fmt.Errorf("kwok stage %s exists and is not GhostFleet's (another kwok runs on this cluster?): refusing to replace it", s.Name)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("reading kwok stage %s: %w", s.Name, err)
		}
		s.Labels = withManaged(s.Labels)
	}
	if out.Stages, err = EnsureStages(ctx, kc, stages); err != nil {
		return out, err
	}
	report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("%d kwok stages installed or updated", out.Stages)})

	if o.DCGMGPUs > 0 {
		if err := installAttachedDCGM(ctx, kc, o.DCGMGPUs); err != nil {
			return out, err
		}
		out.DCGM = true
	}
	return out, nil
}

// installAttachedDCGM installs the DCGM Metric and usage only on a cluster
// that has no Metric or ClusterResourceUsage of anyone else's, since
// InstallDCGM replaces objects of its names; then labels them GhostFleet's.
func installAttachedDCGM(ctx context.Context, kc kwokclient.Interface, gpus int) error {
	api := kc.KwokV1alpha1()
	ms, err := api.Metrics().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	us, err := api.ClusterResourceUsages().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, m := range ms.Items {
		if m.Labels[LabelManaged] != "true" {
			return fmt.Errorf("--dcgm: the cluster has a kwok Metric %s that is not GhostFleet's: refusing to install beside it", m.Name)
		}
	}
	for _, u := range us.Items {
		if u.Labels[LabelManaged] != "true" {
			return fmt.Errorf("--dcgm: the cluster has a kwok ClusterResourceUsage %s that is not GhostFleet's: refusing to install beside it", u.Name)
		}
	}
	if err := InstallDCGM(ctx, kc, gpus); err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, LabelManaged))
	if ms, err = api.Metrics().List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	for _, m := range ms.Items {
		if _, err := api.Metrics().Patch(ctx, m.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	if us, err = api.ClusterResourceUsages().List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	for _, u := range us.Items {
		if _, err := api.ClusterResourceUsages().Patch(ctx, u.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cur, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established after 30s: %w", name, err)
	}
	return nil
}

func writeAttachment(ctx context.Context, cs kubernetes.Interface, a Attachment) error {
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: managedMeta(AttachRecord), Data: map[string]string{"attachment.json": string(data)}}
	cm.Namespace = AttachNamespace
	api := cs.CoreV1().ConfigMaps(AttachNamespace)
	_, err = api.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = api.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing the attachment record %s/%s: %w", AttachNamespace, AttachRecord, err)
	}
	return nil
}

func managedMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManaged: "true"}}
}

func withManaged(l map[string]string) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManaged] = "true"
	return l
}

// Removed says what Unprepare deleted, by kind, with names.
type Removed map[string][]string

// Count is how many objects were removed.
func (r Removed) Count() int {
	n := 0
	for _, v := range r {
		n += len(v)
	}
	return n
}

// String lists what was removed, kind by kind.
func (r Removed) String() string {
	kinds := make([]string, 0, len(r))
	for k := range r {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", len(r[k]), k))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// UnprepareWorkloads deletes GhostFleet's workload namespaces and nodes
// (while the kwok controller still runs, so that their pods go at once),
// and waits until they are gone.
func UnprepareWorkloads(ctx context.Context, cs kubernetes.Interface, removed Removed, report progress.Func) error {
	if report == nil {
		report = progress.Discard
	}
	// Only namespaces GhostFleet created: a workload namespace it made
	// carries both labels (workload.EnsureNamespace).
	ours := metav1.ListOptions{LabelSelector: LabelWorkloadNamespace + "=true," + LabelManaged + "=true"}
	nss, err := cs.CoreV1().Namespaces().List(ctx, ours)
	if err != nil {
		return err
	}
	for _, ns := range nss.Items {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		removed["namespaces"] = append(removed["namespaces"], ns.Name)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: KwokNodeSelector})
	if err != nil {
		return err
	}
	var names []string
	for _, n := range nodes.Items {
		if n.Annotations[AnnotationFake] == "fake" { // GhostFleet's nodes carry both: anything else is not ours
			names = append(names, n.Name)
		}
	}
	// In parallel, as nodes creates them: one by one at the client's
	// default 5 requests/s, 5,000 nodes took more than ten minutes.
	if len(names) > 0 {
		done := progress.Step(report, "delete-nodes", fmt.Sprintf("deleting %d GhostFleet nodes", len(names)), 0)
		n, err := parallel(ctx, len(names), 64, report, "delete-nodes", func(ctx context.Context, k int) error {
			if err := cs.CoreV1().Nodes().Delete(ctx, names[k], metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting node %s: %w", names[k], err)
			}
			return nil
		})
		done()
		removed["nodes"] = append(removed["nodes"], names...)
		if err != nil {
			return fmt.Errorf("deleted %d of %d GhostFleet nodes: %w (detach again to finish)", n, len(names), err)
		}
	}
	if len(nss.Items) > 0 {
		report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("waiting for %d namespaces to be deleted", len(nss.Items))})
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().Namespaces().List(ctx, ours)
		if err != nil {
			return false, nil
		}
		return len(left.Items) == 0, nil
	})
}

// Unprepare deletes what Prepare installed: GhostFleet's stages, Metrics
// and ClusterResourceUsages, the CRDs the record says GhostFleet created,
// and its namespace with the record. Run it after the local kwok
// controller has stopped.
func Unprepare(ctx context.Context, cfg *rest.Config, removed Removed) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	a, _, err := ReadAttachment(ctx, cs)
	if err != nil {
		return err
	}
	sel := metav1.ListOptions{LabelSelector: LabelManaged + "=true"}
	kwokGroup := "kwok.x-k8s.io"
	for _, r := range []string{"stages", "metrics", "clusterresourceusages"} {
		gvr := schema.GroupVersionResource{Group: kwokGroup, Version: "v1alpha1", Resource: r}
		list, err := dyn.Resource(gvr).List(ctx, sel)
		if apierrors.IsNotFound(err) {
			continue // no such CRD: nothing of this kind to remove
		}
		if err != nil {
			return fmt.Errorf("listing kwok %s: %w", r, err)
		}
		for _, o := range list.Items {
			if err := dyn.Resource(gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting kwok %s %s: %w", r, o.GetName(), err)
			}
			removed[r] = append(removed[r], o.GetName())
		}
	}
	// The DRA DeviceClass `nodes --gpu-model dra` made: left behind, it
	// would hold NVIDIA's class name on someone else's cluster.
	classes, err := cs.ResourceV1().DeviceClasses().List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("listing DeviceClasses: %w", err)
	}
	if err == nil {
		for _, c := range classes.Items {
			if err := cs.ResourceV1().DeviceClasses().Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting DeviceClass %s: %w", c.Name, err)
			}
			removed["DeviceClasses"] = append(removed["DeviceClasses"], c.Name)
		}
	}
	for _, name := range a.InstalledCRDs {
		cur, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading CRD %s: %w", name, err)
		}
		if cur.GetLabels()[LabelManaged] != "true" {
			continue // replaced by someone else since: theirs now
		}
		if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CRD %s: %w", name, err)
		}
		removed["CRDs"] = append(removed["CRDs"], name)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, AttachNamespace, metav1.GetOptions{})
	if err == nil && ns.Labels[LabelManaged] == "true" && ns.DeletionTimestamp == nil {
		if err := cs.CoreV1().Namespaces().Delete(ctx, AttachNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", AttachNamespace, err)
		}
		removed["namespaces"] = append(removed["namespaces"], AttachNamespace)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
