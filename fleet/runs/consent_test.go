package runs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// heard records a run's events.
type heard struct{ events []progress.Event }

func (h *heard) Report(e progress.Event) { h.events = append(h.events, e) }
func (h *heard) Live(RateControl)        {}

func (h *heard) text() string {
	var b strings.Builder
	for _, e := range h.events {
		b.WriteString(e.Message + "\n")
	}
	return b.String()
}

func node(name string, fake bool) runtime.Object {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	if fake {
		n.Annotations[fleet.AnnotationFake] = "fake"
		n.Labels = map[string]string{fleet.LabelType: "kwok"}
	}
	return n
}

const attachedKubeconfig = `apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: prod
  context: {cluster: prod-cluster, user: u}
- name: lab
  context: {cluster: lab-cluster, user: u}
clusters:
- name: prod-cluster
  cluster: {server: "https://prod.example:6443"}
- name: lab-cluster
  cluster: {server: "https://lab.example:6443"}
users:
- name: u
  user: {token: x}
`

// TestAttachedWrite: an attached cluster with real nodes is refused for
// load and faults unless the user consents; every write to an attached
// cluster names its server and context first; GhostFleet's own fleets
// pass untouched.
func TestAttachedWrite(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(attachedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	allFake := []runtime.Object{node("kwok-1", true), node("kwok-2", true)}
	mixed := []runtime.Object{node("kwok-1", true), node("gpu-a100-7", false), node("cpu-3", false)}
	tests := []struct {
		name      string
		target    fleet.Target
		nodes     []runtime.Object
		realRisk  bool
		consent   bool
		wantErr   string // "" for none
		wantHeard []string
		notHeard  []string
	}{
		{name: "own fleet", target: fleet.Own("gf-x"), nodes: mixed, realRisk: true, notHeard: []string{"about to change"}},
		{name: "attached, all fake", target: fleet.Attach(kc, ""), nodes: allFake, realRisk: true,
			wantHeard: []string{`about to change attached cluster https://prod.example:6443 (context "prod" of ` + kc + `): load`}},
		{name: "attached, other context", target: fleet.Attach(kc, "lab"), nodes: allFake, realRisk: true,
			wantHeard: []string{`https://lab.example:6443 (context "lab"`}},
		{name: "attached, real nodes refused", target: fleet.Attach(kc, ""), nodes: mixed, realRisk: true,
			wantErr:  `refusing to load on https://prod.example:6443 (context "prod" of ` + kc + `): 2 of its 3 nodes are not kwok fake nodes (cpu-3, gpu-a100-7); pass --i-know-this-is-real`,
			notHeard: []string{"about to change"}},
		{name: "attached, real nodes with consent", target: fleet.Attach(kc, ""), nodes: mixed, realRisk: true, consent: true,
			wantHeard: []string{"--i-know-this-is-real given: load on https://prod.example:6443", "about to change attached cluster https://prod.example:6443"}},
		{name: "attached, real nodes, no risk (unload)", target: fleet.Attach(kc, ""), nodes: mixed,
			wantHeard: []string{"about to change attached cluster https://prod.example:6443"}},
		{name: "attached, unreadable kubeconfig still named", target: fleet.Attach(filepath.Join(t.TempDir(), "gone"), ""), nodes: allFake, realRisk: true,
			wantHeard: []string{"about to change attached cluster (server unknown)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &heard{}
			env := Env{Target: tt.target, Reporter: h, RealCluster: tt.consent}
			err := attachedWrite(context.Background(), env, fake.NewClientset(tt.nodes...), "load", tt.realRisk)
			if got := errorText(err); tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
			for _, w := range tt.wantHeard {
				if !strings.Contains(h.text(), w) {
					t.Errorf("heard %q, want %q", h.text(), w)
				}
			}
			for _, w := range tt.notHeard {
				if strings.Contains(h.text(), w) {
					t.Errorf("heard %q, want no %q", h.text(), w)
				}
			}
		})
	}
}
