//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const consoleCluster = "ghostfleet-e2e-console"

// tmux drives a program in a detached terminal of a fixed size, as a
// person at a keyboard would.
type tmux struct {
	t       *testing.T
	session string
}

func (x tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", args...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (x tmux) keys(keys ...string) { x.run(append([]string{"send-keys", "-t", x.session}, keys...)...) }

func (x tmux) screen() string { return x.run("capture-pane", "-p", "-t", x.session) }

// pollScreen polls the screen every 500 ms until missing returns "" for
// it, or fails after timeout with the screen and what missing said.
func (x tmux) pollScreen(timeout time.Duration, missing func(screen string) string) string {
	x.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := x.screen()
		m := missing(s)
		if m == "" {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("after %s the console %s:\n%s", timeout, m, s)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForAny polls the screen until one of want appears, or fails
// showing it.
func (x tmux) waitForAny(timeout time.Duration, want ...string) string {
	x.t.Helper()
	return x.pollScreen(timeout, func(s string) string {
		for _, w := range want {
			if strings.Contains(s, w) {
				return ""
			}
		}
		return fmt.Sprintf("shows none of %q", want)
	})
}

// waitFor polls the screen until every want appears, or fails showing it.
func (x tmux) waitFor(timeout time.Duration, want ...string) string {
	x.t.Helper()
	return x.pollScreen(timeout, func(s string) string {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return fmt.Sprintf("does not show %q", w)
			}
		}
		return ""
	})
}

// TestConsole drives the real console in tmux on a real fleet: start a
// load from the keyboard, watch the map fill and the allocation change,
// take a snapshot, quit.
func TestConsole(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed to drive the console: `make tools` installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "ghostfleet")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../cmd/ghostfleet").CombinedOutput(); err != nil {
		t.Fatalf("building ghostfleet: %v\n%s", err, out)
	}
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", consoleCluster) })
	if r := ghostfleet(t, ctx, "up", "--name", consoleCluster, "--nodes", "100", "--prometheus-port", fmt.Sprint(freePort(t))); r.code != 0 {
		t.Fatalf("up failed: %s", r.errOut)
	}

	t.Run("once prints a frame", func(t *testing.T) {
		r := ghostfleet(t, ctx, "console", "--once", "--name", consoleCluster, "--width", "100", "--height", "30")
		if r.code != 0 || !strings.Contains(r.out, "100 nodes") || !strings.Contains(r.out, "GPUs 0 / 800") {
			t.Fatalf("console --once: exit %d\n%s", r.code, r.out)
		}
		if lines := strings.Count(strings.TrimRight(r.out, "\n"), "\n") + 1; lines != 30 {
			t.Errorf("frame of %d lines, want 30", lines)
		}
	})

	waitForIdleSLOs(t, ctx, bin)

	// The console writes run records under $GHOSTFLEET_RESULTS: give it its own.
	work := t.TempDir()
	x := tmux{t: t, session: fmt.Sprintf("gf-e2e-console-%d", os.Getpid())}
	x.run("new-session", "-d", "-s", x.session, "-x", "120", "-y", "36", "-c", work,
		fmt.Sprintf("GHOSTFLEET_CLUSTER=%s GHOSTFLEET_RESULTS=%s GHOSTFLEET_SLO_SCALE=%s %s; echo console-exit=$?; sleep 300",
			consoleCluster, filepath.Join(work, "results"), SLOScaleForConsoleTest, bin))
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", x.session).Run() })

	x.waitFor(time.Minute, "100 nodes", "GPUs 0 / 800", "API p99")
	// An incident from the console alone: which nodes are faulted, and why.
	consoleStepDrill(t, ctx, x)
	// The SLO strip turns during a load and the breach is kept with it.
	sloLoads := consoleStepSLOBreach(t, ctx, x, filepath.Join(work, "results"))
	before := strings.Count(x.screen(), "·")

	x.keys("l")
	x.waitFor(10*time.Second, "Load: N pods of G GPUs", "8000")
	x.keys("C-u", "400", "Enter") // pods: 400; GPUs per pod stays 1
	s := x.waitFor(5*time.Minute, "✓ load 400×1", "GPUs 400 / 800", "400 running")
	if after := strings.Count(s, "·"); after >= before {
		t.Errorf("the map did not fill: %d idle cells before the load, %d after\n%s", before, after, s)
	}
	if !strings.ContainsAny(s, "▁▂▃▄▅▆▇█") {
		t.Errorf("no allocated node on the map:\n%s", s)
	}
	// u sets the emulated usage of the load's pods (#19).
	consoleStepUsage(t, ctx, x, filepath.Join(work, "results"))
	// Let Prometheus scrape the load's counters twice before the snapshot.
	time.Sleep(35 * time.Second)

	x.keys("s")
	x.waitFor(10*time.Second, "Snapshot")
	x.keys("Enter")
	x.waitFor(time.Minute, "✓ snapshot 15m", "SLOs:")

	x.keys("q")
	x.waitFor(30*time.Second, "console-exit=0")

	for _, pattern := range []string{"snapshot-*/run.json", "snapshot-*/slo.json", "snapshot-*/metrics.json"} {
		matches, _ := filepath.Glob(filepath.Join(work, "results", pattern))
		if len(matches) != 1 {
			t.Errorf("results/%s: %d files, want 1", pattern, len(matches))
		}
	}
	var rec struct {
		Outcome string `json:"outcome"`
		Params  struct {
			Pods int `json:"pods"`
		} `json:"params"`
	}
	// The SLO step's loads of 600 came first; the map's load of 400 is
	// the last.
	loads, _ := filepath.Glob(filepath.Join(work, "results", "load-*", "run.json"))
	if len(loads) != sloLoads+1 {
		t.Errorf("%d load records, want %d (%d of 600 pods, then 400): %v", len(loads), sloLoads+1, sloLoads, loads)
	} else {
		readFile(t, loads[sloLoads], &rec)
		if rec.Outcome != "completed" || rec.Params.Pods != 400 {
			t.Errorf("the console's load record: outcome %q pods %d", rec.Outcome, rec.Params.Pods)
		}
	}
	ghostfleet(t, ctx, "unload", "--name", consoleCluster)

	// A talk without typing a command: the 60-second teaser, played in
	// auto mode and recorded as a cast.
	consoleStepDemo(t, ctx, x, bin, work, consoleCluster)
}
