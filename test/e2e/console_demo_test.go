//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/demo"
)

// consoleStepDemo plays scenarios/demo/teaser-60s.yaml to its end in auto
// mode, in a console of its own in tmux (`ghostfleet demo … --auto
// --record`), and checks what a viewer sees: every caption, in order, in
// the recorded cast; the done caption on screen; and each step's run
// folder, completed, with the snapshot's frame.txt.
//
// TestConsole calls it once its own console has quit and its load is
// unloaded: the 100-node fleet cluster (consoleCluster) must be up with no
// workload and no fault (the teaser loads 400 of its 800 GPUs). bin is
// the built ghostfleet; work a folder for the demo's results and cast. It
// clears the faults and removes the workloads it made.
func consoleStepDemo(t *testing.T, ctx context.Context, x tmux, bin, work, cluster string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "demo", "teaser-60s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := demo.Load(script)
	if err != nil {
		t.Fatal(err)
	}
	results, cast := filepath.Join(work, "results-demo"), filepath.Join(work, "teaser.cast")
	d := tmux{t: t, session: x.session + "-demo"}
	d.run("new-session", "-d", "-s", d.session, "-x", "160", "-y", "48", "-c", work,
		fmt.Sprintf("GHOSTFLEET_CLUSTER=%s GHOSTFLEET_RESULTS=%s %s demo %s --auto --record %s; echo demo-exit=$?; sleep 300",
			cluster, results, bin, script, cast))
	t.Cleanup(func() {
		_ = exec.Command("tmux", "kill-session", "-t", d.session).Run()
		ghostfleet(t, context.Background(), "fault", "clear", "--all", "--name", cluster, "--results-dir", results)
		ghostfleet(t, context.Background(), "unload", "--name", cluster)
	})

	d.waitFor(time.Minute, "▶ teaser-60s 1/5", s.Steps[0].Caption)
	n := len(s.Steps)
	d.waitFor(6*time.Minute, fmt.Sprintf("✓ teaser-60s %d/%d", n, n), "done · D: play another")
	d.keys("q")
	d.waitFor(time.Minute, "demo-exit=0")

	// The cast: a v2 header, times that never go back, every caption in
	// the order the steps came.
	f, err := os.Open(cast)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	var header struct{ Version, Width, Height int }
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &header) != nil || header.Version != 2 || header.Width != 160 || header.Height != 48 {
		t.Fatalf("cast header %q", sc.Text())
	}
	var out strings.Builder
	last := 0.0
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("cast event %q: %v", sc.Text(), err)
		}
		if secs, _ := ev[0].(float64); secs < last {
			t.Errorf("cast event at %gs after one at %gs", secs, last)
		} else {
			last = secs
		}
		if kind, _ := ev[1].(string); kind == "o" {
			text, _ := ev[2].(string)
			out.WriteString(text)
		}
	}
	drawn, at := out.String(), 0
	for i, st := range s.Steps {
		j := strings.Index(drawn[at:], st.Caption)
		if j < 0 {
			t.Errorf("step %d's caption %q is not in the cast after step %d's", i+1, st.Caption, i)
			continue
		}
		at += j
	}

	// Each step's run, recorded as if started from its key (a snapshot's
	// run.json describes the snapshot: it has no outcome).
	if m, _ := filepath.Glob(filepath.Join(results, "snapshot-*", "slo.json")); len(m) != 1 {
		t.Errorf("snapshot-*/slo.json: %v, want 1", m)
	}
	for _, kind := range []string{"load", "fault", "churn"} {
		m, _ := filepath.Glob(filepath.Join(results, kind+"-*", "run.json"))
		if len(m) != 1 {
			t.Errorf("%s-*/run.json: %d, want 1", kind, len(m))
			continue
		}
		var rec struct {
			Outcome string `json:"outcome"`
		}
		readFile(t, m[0], &rec)
		if rec.Outcome != "completed" {
			t.Errorf("%s: outcome %q", m[0], rec.Outcome)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(results, "snapshot-*", "frame.txt")); len(m) != 1 {
		t.Errorf("the snapshot's frame.txt: %v", m)
	} else if data, _ := os.ReadFile(m[0]); !strings.Contains(string(data), "GhostFleet") || strings.Contains(string(data), "\x1b[") {
		t.Errorf("frame.txt is not the frame as text:\n%s", data)
	}
}
