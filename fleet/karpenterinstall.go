package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// NewAutoscalerState settles what a fleet brought up with --autoscaler
// karpenter runs: Karpenter's binary (whose CRDs the build put beside
// it), two free ports on 127.0.0.1 and the NodePools.
func NewAutoscalerState(binary string, pools []NodePoolSpec) (AutoscalerState, error) {
	a := AutoscalerState{Name: AutoscalerKarpenter, Binary: binary}
	for _, p := range pools {
		a.NodePools = append(a.NodePools, p.Profile.Name)
		a.MaxNodes, a.Consolidate = p.MaxNodes, p.ConsolidateAfter.String()
	}
	if _, err := karpenterCRDs(binary); err != nil {
		return a, err
	}
	var err error
	if a.MetricsPort, err = freeLoopbackPort(); err != nil {
		return a, err
	}
	a.HealthPort, err = freeLoopbackPort()
	return a, err
}

// prepareKarpenter writes the instance-types file into the fleet's folder
// before kwokctl starts Karpenter, which reads it once at start.
func prepareKarpenter(name string, a AutoscalerState) error {
	pools, err := a.Specs()
	if err != nil {
		return err
	}
	data, err := KarpenterInstanceTypes(pools)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(clusterWorkdir(name), karpenterInstanceTypes), data, 0o644)
}

// karpenterCRDs reads the CRDs the build copied from Karpenter's module
// next to its binary (binaries.ManifestsDir): NodePool, NodeClaim,
// NodeOverlay, KWOKNodeClass and CapacityBuffer.
func karpenterCRDs(binary string) ([]*unstructured.Unstructured, error) {
	dir := binaries.ManifestsDir(binary)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no CRDs in %s: the build copies them there from Karpenter's module; remove %s so that `up --autoscaler karpenter` builds it again", dir, binary)
	}
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---")))) == 0 {
				continue
			}
			obj := &unstructured.Unstructured{}
			j, err := yaml.YAMLToJSON(doc)
			if err == nil {
				err = obj.UnmarshalJSON(j)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// installKarpenterCRDs creates Karpenter's CRDs and waits until the
// apiserver serves them, so that Karpenter finds its kinds.
func installKarpenterCRDs(ctx context.Context, dc dynamic.Interface, a AutoscalerState) error {
	crds, err := karpenterCRDs(a.Binary)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := applyAs(ctx, dc, crdGVR, crd); err != nil {
			return err
		}
	}
	var pending string
	err = poll(ctx, time.Minute, func() (bool, error) {
		pending = ""
		for _, crd := range crds {
			cur, err := dc.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil || !crdEstablished(cur) {
				pending = crd.GetName()
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", pending, err)
	}
	return nil
}

func crdEstablished(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}

// InstallKarpenter gives the fleet called name what Karpenter works from:
// its CRDs, the KWOKNodeClass and one NodePool per profile; Karpenter
// itself is a component kwokctl runs. On a fleet just created (created)
// it started before its CRDs existed, which leaves it without the
// NodeClaim and NodePool field indexes it sets up once at start (it
// logs "failed to setup nodeclaim provider id indexer" and carries on):
// it is restarted then, and whenever it does not answer its readiness
// probe.
func InstallKarpenter(ctx context.Context, name string, a AutoscalerState, created bool, report progress.Func) error {
	pools, err := a.Specs()
	if err != nil {
		return err
	}
	cfg, err := Own(name).RESTConfig()
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	names := make([]string, len(pools))
	for i, p := range pools {
		names[i] = p.Name()
	}
	done := progress.Step(report, "karpenter", fmt.Sprintf("starting Karpenter (kwok provider, 127.0.0.1:%d) with NodePools %s", a.HealthPort, strings.Join(names, ", ")), 20*time.Second)
	defer done()
	if err := installKarpenterCRDs(ctx, dc, a); err != nil {
		return err
	}
	if err := applyAs(ctx, dc, KWOKNodeClassGVR, KarpenterNodeClassObject()); err != nil {
		return err
	}
	for _, p := range pools {
		obj, err := p.NodePool()
		if err != nil {
			return err
		}
		if err := applyAs(ctx, dc, NodePoolGVR, obj); err != nil {
			return err
		}
	}
	if !created && karpenterReady(ctx, a) {
		return nil
	}
	if _, err := RestartComponent(ctx, name, binaries.Karpenter, time.Minute); err != nil {
		return err
	}
	err = poll(ctx, 2*time.Minute, func() (bool, error) { return karpenterReady(ctx, a), nil })
	if err != nil {
		return fmt.Errorf("karpenter did not become ready at %s: %w (its log: %s)", a.KarpenterHealthURL(), err, componentLog(name, binaries.Karpenter))
	}
	return nil
}

// karpenterReady asks Karpenter's readiness probe, which passes once its
// caches synced and its CRDs are served.
func karpenterReady(ctx context.Context, a AutoscalerState) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.KarpenterHealthURL(), nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// NodePoolStatus is one NodePool as status shows it.
type NodePoolStatus struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	// Nodes counts the nodes Karpenter made for it; Ready those Ready.
	Nodes int `json:"nodes"`
	Ready int `json:"ready"`
	// MaxNodes is its limit, in nodes of its profile.
	MaxNodes int `json:"maxNodes"`
	// Missing is set when the NodePool is not on the cluster.
	Missing bool `json:"missing,omitempty"`
}

// AutoscalerStatus is the fleet's autoscaler in status.
type AutoscalerStatus struct {
	Name             string           `json:"name"`
	ConsolidateAfter string           `json:"consolidateAfter"`
	NodePools        []NodePoolStatus `json:"nodePools"`
	// NodeClaims counts Karpenter's NodeClaims (launched, not yet
	// registered ones included).
	NodeClaims int `json:"nodeClaims"`
}

// autoscalerStatus reads the NodePools and what Karpenter made for each.
func autoscalerStatus(ctx context.Context, t Target, a AutoscalerState) (*AutoscalerStatus, error) {
	cfg, err := t.RESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := t.Clientset(false)
	if err != nil {
		return nil, err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelNodePool})
	if err != nil {
		return nil, fmt.Errorf("listing Karpenter's nodes: %w", err)
	}
	st := &AutoscalerStatus{Name: a.Name, ConsolidateAfter: a.Consolidate}
	specs, err := a.Specs()
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		ps := NodePoolStatus{Name: s.Name(), Profile: s.Profile.Name, MaxNodes: s.MaxNodes}
		if _, err := dc.Resource(NodePoolGVR).Get(ctx, s.Name(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			ps.Missing = true
		}
		for i := range nodes.Items {
			if nodes.Items[i].Labels[LabelNodePool] == s.Name() {
				ps.Nodes++
				if NodeReady(&nodes.Items[i]) {
					ps.Ready++
				}
			}
		}
		st.NodePools = append(st.NodePools, ps)
	}
	if claims, err := dc.Resource(NodeClaimGVR).List(ctx, metav1.ListOptions{}); err == nil {
		st.NodeClaims = len(claims.Items)
	}
	return st, nil
}

// installKarpenterCRDsOn installs the CRDs on the fleet being created,
// right after its stages: Karpenter, already started, waits for them.
func installKarpenterCRDsOn(ctx context.Context, name string, a AutoscalerState) error {
	cfg, err := Own(name).RESTConfig()
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return installKarpenterCRDs(ctx, dc, a)
}

// sameAutoscaler refuses an up that asks a running fleet for another
// autoscaler set-up than it was created with: kwokctl cannot add a
// component to a fleet that exists, and its NodePools are chosen then.
func sameAutoscaler(opts UpOptions, state State) error {
	if len(opts.Autoscaler) == 0 {
		return nil // a plain up keeps what the fleet runs
	}
	asked := make([]string, len(opts.Autoscaler))
	for i, p := range opts.Autoscaler {
		asked[i] = p.Profile.Name
	}
	if state.Autoscaler == nil {
		return fmt.Errorf("fleet %s is up without an autoscaler, which kwokctl cannot add to a running cluster: run `ghostfleet clean --name %s` and then `ghostfleet up --autoscaler karpenter`", opts.Name, opts.Name)
	}
	if got := strings.Join(state.Autoscaler.NodePools, ","); got != strings.Join(asked, ",") {
		return fmt.Errorf("fleet %s autoscales with NodePools for %s, not %s: run `ghostfleet clean --name %s` and up again to change them", opts.Name, got, strings.Join(asked, ","), opts.Name)
	}
	return nil
}

// ComponentLogPath is the log of component of GhostFleet's fleet name.
func ComponentLogPath(name, component string) string { return componentLog(name, component) }
