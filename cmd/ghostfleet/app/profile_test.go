package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// `profile show NAME` prints the built-in file as embedded, which up takes
// back under another name.
func TestProfileShow(t *testing.T) {
	code, out, errOut := run(t, "profile", "show", "tuned")
	want, _ := fleet.BuiltinFile("profiles/tuned.yaml")
	if code != 0 || out != "# fleet/profiles/tuned.yaml\n"+string(want) {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(out, "name: tuned", "name: mine", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := fleet.LoadComponentProfile(path); err != nil || p.Scheduler.QPS != fleet.ProfileTuned.Scheduler.QPS {
		t.Errorf("the printed profile, renamed, loads as %+v, %v", p, err)
	}

	code, out, _ = run(t, "profile", "show", "stages")
	if code != 0 || strings.Count(out, "\nkind: Stage\n") < 16 {
		t.Errorf("stages: exit %d, %d stages", code, strings.Count(out, "\nkind: Stage\n"))
	}
	if code, _, errOut := run(t, "profile", "show", "turbo"); code == 0 || !strings.Contains(errOut, `unknown profile "turbo"`) {
		t.Errorf("unknown name: exit %d, %q", code, errOut)
	}
}

// up checks the user's files before it builds or creates anything, and
// says in one line which file is wrong and where.
func TestUpRejectsBadFilesFirst(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	badProfile := write("p.yaml", "apiVersion: ghostfleet.dev/v1alpha1\nkind: ComponentProfile\nmetadata: {name: mine}\ncontrollerManager: {qpss: 1}\n")
	badStage := write("s.yaml", "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: x}\nspec: {resourceRef: {kind: Pod}, next: {}}\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--profile-file", badProfile}, "--profile-file " + badProfile + `: unknown field "controllerManager.qpss"`},
		{[]string{"--profile-file", filepath.Join(dir, "none.yaml")}, "none.yaml: no such file"},
		{[]string{"--profile", "tuned", "--profile-file", badProfile}, "give one"},
		{[]string{"--stage-file", badStage}, "--stage-file " + badStage + ": document 1: stage x: spec.selector is not set"},
	}
	for _, tt := range tests {
		code, _, errOut := run(t, append([]string{"up"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("up %v: exit %d, stderr %q, want one line with %q", tt.args, code, errOut, tt.want)
		}
	}
}
