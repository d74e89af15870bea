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
)

// attachRecord is the ConfigMap attach leaves on a cluster it prepared.
func attachRecord() runtime.Object {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fleet.AttachRecord, Namespace: fleet.AttachNamespace, Labels: map[string]string{fleet.LabelManaged: "true"}},
		Data:       map[string]string{"attachment.json": `{"server":"https://prod.example:6443","installedCRDs":["stages.kwok.x-k8s.io"]}`},
	}
}

// TestAttachedWritePrepared: on a cluster GhostFleet attached, its real
// nodes do not need --i-know-this-is-real for a load or fault, because
// GhostFleet's pods select type=kwok nodes; a real node wearing that
// label brings the refusal back, and an unprepared cluster is refused
// as before.
func TestAttachedWritePrepared(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(attachedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	lookalike := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-7", Labels: map[string]string{fleet.LabelType: "kwok"}}}
	tests := []struct {
		name    string
		objects []runtime.Object
		wantErr string
		heard   string
	}{
		{name: "prepared, real nodes left alone", objects: []runtime.Object{attachRecord(), node("gf-node-00000", true), node("cpu-3", false)},
			heard: "its 1 real nodes (cpu-3) are left alone: GhostFleet attached it"},
		{name: "prepared, a real node labelled type=kwok", objects: []runtime.Object{attachRecord(), node("gf-node-00000", true), lookalike},
			wantErr: "refusing to load on https://prod.example:6443"},
		{name: "not prepared", objects: []runtime.Object{node("gf-node-00000", true), node("cpu-3", false)},
			wantErr: "1 of its 2 nodes are not kwok fake nodes (cpu-3); pass --i-know-this-is-real"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &heard{}
			env := Env{Target: fleet.Attach(kc, ""), Reporter: h}
			err := attachedWrite(context.Background(), env, fake.NewClientset(tt.objects...), "load", true)
			if got := errorText(err); tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
			if !strings.Contains(h.text(), tt.heard) {
				t.Errorf("heard %q, want %q", h.text(), tt.heard)
			}
		})
	}
}

// TestRequireAttached: nodes on an attached cluster need attach first (a
// record and a local kwok controller); GhostFleet's own fleets pass.
func TestRequireAttached(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(attachedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		target  fleet.Target
		objects []runtime.Object
		wantErr string
	}{
		{name: "own fleet", target: fleet.Own("gf-x")},
		{name: "attached, not prepared", target: fleet.Attach(kc, ""), wantErr: "is not prepared for GhostFleet's nodes: run `ghostfleet attach --kubeconfig " + kc + "` first"},
		{name: "prepared, no local kwok controller", target: fleet.Attach(kc, ""), objects: []runtime.Object{attachRecord()},
			wantErr: "the kwok controller for https://prod.example:6443 is not running on this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := requireAttached(context.Background(), Env{Target: tt.target}, fake.NewClientset(tt.objects...))
			if got := errorText(err); tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

// TestAttachBadInput: attach and detach need an attached target whose
// kubeconfig and context exist, and a reachable server; each is one
// line naming what is wrong, before anything is written.
func TestAttachBadInput(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	unreachable := strings.ReplaceAll(attachedKubeconfig, "https://prod.example:6443", "https://127.0.0.1:1")
	if err := os.WriteFile(kc, []byte(unreachable), 0o600); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	tests := []struct {
		name    string
		target  fleet.Target
		wantErr string
	}{
		{name: "own fleet", target: fleet.Own("gf-x"), wantErr: "attach needs --kubeconfig F"},
		{name: "missing kubeconfig", target: fleet.Attach(filepath.Join(dir, "nope"), ""), wantErr: "kubeconfig " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{name: "no such context", target: fleet.Attach(kc, "staging"), wantErr: `context "staging" is not in ` + kc},
		{name: "unreachable", target: fleet.Attach(kc, ""), wantErr: "cannot reach the API server https://127.0.0.1:1 of " + kc + ": Get"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Attach(context.Background(), Env{Target: tt.target, ResultsDir: results, RealCluster: true}, NewAttachOptions())
			got := errorText(err)
			if !strings.Contains(got, tt.wantErr) || strings.Contains(got, "\n") {
				t.Fatalf("error = %q, want one line with %q", got, tt.wantErr)
			}
			if _, err := os.Stat(results); err == nil {
				if entries, _ := os.ReadDir(results); len(entries) > 0 {
					t.Errorf("a run folder was written: %v", entries)
				}
			}
		})
	}
	if err := (AttachOptions{Namespace: "Bad_NS"}).Validate(); err == nil || !strings.Contains(err.Error(), `--namespace "Bad_NS"`) {
		t.Errorf("Validate(Bad_NS) = %v", err)
	}
}
