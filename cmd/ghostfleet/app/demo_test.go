package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/tui"
)

// A bad script is refused in one line naming the file, step and field,
// before the console (or a fleet) is opened.
func TestDemoBadScript(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: ghostfleet.dev/v1alpha1\nkind: Demo\nmetadata: {name: bad}\nsteps:\n- caption: x\n  load: {pods: -3}\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"demo", bad}, "error: " + bad + ": step 1: load: pod count -3 is out of range: allowed are 1-100000\n"},
		{[]string{"demo", "no-such-demo"}, `error: demo script "no-such-demo": no such file, nor `},
		{[]string{"demo", filepath.Join(dir, "missing.yaml")}, "error: " + filepath.Join(dir, "missing.yaml") + ": no such file or directory\n"},
		{[]string{"demo", "teaser-60s", "--once"}, "error: --once prints one frame; a demo plays in the live console\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, tc.args...)
			if code != 1 || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut, tc.want)
			}
		})
	}
}

// A script is found by name in the checkout's scenarios/demo, and the
// shipped ones are offered.
func TestDemoScriptsByName(t *testing.T) {
	path, err := findScript("teaser-60s")
	if err != nil || !strings.HasSuffix(path, filepath.Join("scenarios", "demo", "teaser-60s.yaml")) {
		t.Fatalf("findScript: %q %v", path, err)
	}
	names, err := scriptNames()
	if err != nil || !strings.Contains(strings.Join(names, ","), "talk-5min,teaser-60s") {
		t.Errorf("scripts %v %v", names, err)
	}
}

// The snapshot key's outcome asks for the frame as text; a run that
// wrote no folder does not.
func TestKeepFrame(t *testing.T) {
	run := func(dir string) func(context.Context, []string, tui.Control) (tui.Outcome, error) {
		return func(context.Context, []string, tui.Control) (tui.Outcome, error) { return tui.Outcome{Dir: dir}, nil }
	}
	if o, _ := keepFrame(run("results/snapshot-1"))(context.Background(), nil, tui.Control{}); o.Frame != "frame.txt" {
		t.Errorf("snapshot outcome %+v", o)
	}
	if o, _ := keepFrame(run(""))(context.Background(), nil, tui.Control{}); o.Frame != "" {
		t.Errorf("no folder, yet a frame: %+v", o)
	}
}
