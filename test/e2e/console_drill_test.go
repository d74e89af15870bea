//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// consoleStepDrill finds a faulted node from the console alone: it
// injects gpu-xid (Xid 79) on 5 nodes, filters the map with /faulted,
// moves the cursor to the second faulted node, opens it and sees its
// GpuXidProblem condition with the Xid, goes back (esc, esc clears the
// filter) and clears the fault. It needs the console of TestConsole on
// consoleCluster (100 nodes, at least 120×36), no overlay or prompt
// open; it clears the faults before it returns, whatever the map shows.
func consoleStepDrill(t *testing.T, ctx context.Context, x tmux) {
	t.Helper()
	if r := ghostfleet(t, ctx, "fault", "gpu-xid", "--nodes", "5", "--name", consoleCluster); r.code != 0 {
		t.Fatalf("fault gpu-xid --nodes 5: exit %d\n%s", r.code, r.errOut)
	}
	t.Cleanup(func() { ghostfleet(t, context.Background(), "fault", "clear", "--all", "--name", consoleCluster) })
	x.waitFor(time.Minute, "5 faulted")

	x.keys("/")
	x.keys("-l", "faulted")
	x.keys("Enter")
	under := regexp.MustCompile(`▸ (gf-node-\d{5}) · Ready faulted`)
	s := x.waitFor(10*time.Second, "filter faulted: 5 of 100 nodes", "▸ gf-node-")
	first := under.FindStringSubmatch(s)
	if first == nil {
		t.Fatalf("the status line does not name a faulted node under the cursor:\n%s", s)
	}
	x.keys("Right") // the filter put the cursor on the first faulted node: the second
	var cursor []string
	for deadline := time.Now().Add(5 * time.Second); cursor == nil; time.Sleep(200 * time.Millisecond) {
		if m := under.FindStringSubmatch(x.screen()); m != nil && m[1] != first[1] {
			cursor = m // the screen may lag the key: wait for the cursor to move
		} else if time.Now().After(deadline) {
			t.Fatalf("the cursor did not move from %s to another faulted node:\n%s", first[1], x.screen())
		}
	}
	x.keys("Enter")
	s = x.waitFor(15*time.Second, "Node "+cursor[1], "GpuXidProblem True Xid79", "Xid 79: GPU has fallen off the bus")
	if strings.Contains(s, "more lines") {
		// The details run past the pane (a young fleet's nodes may still
		// carry the not-ready taint): the rest is a page down.
		x.keys("NPage")
		time.Sleep(time.Second)
		s += x.screen()
	}
	for _, want := range []string{"nvidia.com/gpu-health=unhealthy:NoSchedule", "fault.ghostfleet.io/gpu-xid=true", "(1 out of service)"} {
		if !strings.Contains(s, want) {
			t.Errorf("the node's details do not show %q:\n%s", want, s)
		}
	}
	x.keys("Escape")
	x.waitFor(5*time.Second, "filter faulted: 5 of 100 nodes")
	x.keys("Escape")
	x.waitFor(5*time.Second, "Fleet · 100 nodes")

	// Cleared now, not at the test's end: the steps after this one see
	// every GPU allocatable again.
	if r := ghostfleet(t, ctx, "fault", "clear", "--all", "--name", consoleCluster); r.code != 0 {
		t.Fatalf("fault clear --all: exit %d\n%s", r.code, r.errOut)
	}
	deadline := time.Now().Add(time.Minute)
	for regexp.MustCompile(`· \d+ faulted`).MatchString(x.screen()) {
		if time.Now().After(deadline) {
			t.Fatalf("the faults did not clear on the map:\n%s", x.screen())
		}
		time.Sleep(time.Second)
	}
}
