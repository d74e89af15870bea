package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kwok/pkg/config"
)

// writeIn writes text to name in dir, making its folders, and returns
// its path: profiles and their bases side by side.
func writeIn(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// childDoc is a profile with base: only its name and what it changes.
func childDoc(name, base, rest string) string {
	return "apiVersion: ghostfleet.dev/v1alpha1\nkind: ComponentProfile\nmetadata: {name: " + name + "}\nbase: " + base + "\n" + rest
}

// A profile file with a base holds only what it changes: maps merge key
// by key, figures and lists replace, null removes, and a file without a
// KubeSchedulerConfiguration keeps its base's.
func TestProfileBase(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeIn(t, dir, name, text) }
	write("mine.yaml", auditDoc("{rules: [{level: None, verbs: [watch]}, {level: Metadata}]}"))
	child := write("sub/child.yaml", "# mine, with the controller-manager's QPS lowered\n"+
		childDoc("child", "../mine.yaml", "controllerManager: {qps: 20}\nfeatureGates: {GangScheduling: true}\n"))
	p, err := LoadComponentProfile(child)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "child" || p.Source != child ||
		p.ControllerManager != (ControllerManagerSettings{QPS: 20, Burst: 200, WorkloadSyncs: 10, GCSyncs: 30}) ||
		p.APIServer.MaxRequestsInflight != 800 || p.APIServer.AuditPolicy == nil || len(p.APIServer.AuditPolicy.Rules) != 2 ||
		p.Scheduler.QPS != 200 || p.Scheduler.Burst != 400 || !p.FeatureGates["GangScheduling"] ||
		!strings.HasPrefix(p.Description, "my own: ") {
		t.Errorf("merged onto its base: %+v", p)
	}
	if strings.Contains(string(p.file), "base:") {
		t.Errorf("the recorded file still names its base:\n%s", p.file)
	}

	// A base's base, a scheduler document merged key by key, a list
	// replaced whole and a field removed with null.
	grandchild := write("grandchild.yaml", childDoc("grandchild", "sub/child.yaml",
		"apiServer: {auditPolicy: {rules: [{level: Metadata}]}}\nfeatureGates: null\n---\n"+
			"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection: {burst: 1000}\n"))
	g, err := LoadComponentProfile(grandchild)
	if err != nil {
		t.Fatal(err)
	}
	if g.ControllerManager.QPS != 20 || g.Scheduler.QPS != 200 || g.Scheduler.Burst != 1000 ||
		len(g.APIServer.AuditPolicy.Rules) != 1 || g.FeatureGates != nil {
		t.Errorf("grandchild: %+v", g)
	}

	// A base given by its absolute path.
	if a, err := LoadComponentProfile(write("abs.yaml", childDoc("abs", grandchild, ""))); err != nil || a.Scheduler.Burst != 1000 {
		t.Errorf("an absolute base: %+v, %v", a, err)
	}

	// A built-in base.
	b, err := LoadComponentProfile(write("fromtuned.yaml", childDoc("fromtuned", "tuned", "controllerManager: {gcSyncs: 99}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if want := ProfileTuned.ControllerManager; b.ControllerManager.QPS != want.QPS || b.ControllerManager.GCSyncs != 99 ||
		b.Scheduler.Burst != ProfileTuned.Scheduler.Burst || b.Scheduler.PercentageOfNodesToScore != ProfileTuned.Scheduler.PercentageOfNodesToScore || b.APIServer.MaxRequestsInflight != ProfileTuned.APIServer.MaxRequestsInflight {
		t.Errorf("on tuned: %+v", b)
	}

	// A fleet made from it finds the same profile in its folder, without
	// the base file.
	old := config.ClustersDir
	config.ClustersDir = t.TempDir()
	t.Cleanup(func() { config.ClustersDir = old })
	if err := os.MkdirAll(clusterWorkdir("a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := recordProfile("a", g); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	again, err := ClusterProfile("a", "grandchild")
	if err != nil || again.Description != g.Description || again.Scheduler.Burst != 1000 || again.ControllerManager != g.ControllerManager {
		t.Errorf("recorded: %+v, %v", again, err)
	}
}

func TestProfileBaseErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeIn(t, dir, name, text) }
	write("mine.yaml", profileDoc+"---\n"+schedulerDoc)
	write("typo.yaml", strings.Replace(profileDoc, "gcSyncs", "gcSync", 1)+"---\n"+schedulerDoc)
	write("mid.yaml", childDoc("mid", "mine.yaml", ""))
	write("loop-a.yaml", childDoc("loop-a", "loop-b.yaml", ""))
	write("loop-b.yaml", childDoc("loop-b", "loop-a.yaml", ""))
	tests := []struct {
		name, text string
		want       string
	}{
		{"no such file", childDoc("c", "gone.yml", ""), `base "gone.yml": ` + filepath.Join(dir, "gone.yml") + ": no such file"},
		{"no such built-in", childDoc("c", "turbo", ""), `base "turbo": not a built-in profile (allowed are default, tuned, fast, gang) nor a profile file`},
		{"no name", strings.Replace(childDoc("c", "mine.yaml", ""), "metadata: {name: c}\n", "", 1), `base "mine.yaml": a profile with a base names itself`},
		{"its base's name", childDoc("mine", "mine.yaml", ""), `metadata.name "mine" is its base's`},
		{"a name further down", childDoc("mine", "mid.yaml", ""), `metadata.name "mine" is that of a base further down (mid → mine): give this profile a name of its own`},
		{"a loop", childDoc("c", "loop-a.yaml", ""), "the bases go round in a loop: " + filepath.Join(dir, "c.yaml") + " → " + filepath.Join(dir, "loop-a.yaml") + " → " + filepath.Join(dir, "loop-b.yaml") + " → " + filepath.Join(dir, "loop-a.yaml")},
		{"a mistake in the base", childDoc("c", "typo.yaml", ""), `base "typo.yaml": ` + filepath.Join(dir, "typo.yaml") + `: unknown field "controllerManager.gcSync"`},
		{"unknown field", childDoc("c", "mine.yaml", "controllerManager: {qpss: 20}\n"), `unknown field "controllerManager.qpss"`},
		{"a figure removed", childDoc("c", "mine.yaml", "controllerManager: {qps: null}\n"), "controllerManager.qps is 0: it must be set"},
		{"a duplicate key", childDoc("c", "mine.yaml", "note: a\nnote: b\n"), `c.yaml: yaml: unmarshal errors: line 6: key "note" already set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write("c.yaml", tt.text)
			_, err := LoadComponentProfile(path)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting with the file and saying %q", err, tt.want)
			}
		})
	}
	// Only a user's file has a base: a built-in's is read as written.
	if _, err := parseComponentProfile("x.yaml", []byte(childDoc("c", "tuned", ""))); err == nil || !strings.Contains(err.Error(), `base "tuned": only a user's profile file may have a base`) {
		t.Errorf("base in a file read as written: %v", err)
	}
}
