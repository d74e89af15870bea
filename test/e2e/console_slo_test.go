//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SLOScaleForConsoleTest is what TestConsole should start the console
// with (GHOSTFLEET_SLO_SCALE, test-only): API SLO thresholds of a tenth
// (100 ms for the 1 s classes, at risk from 80 ms). The apiserver's SLI
// histogram starts at 50 ms, so an idle fleet's p99 reads 49.5 ms and
// passes; 600 pods created at once on this kind of machine take POST pods
// past 100 ms.
const SLOScaleForConsoleTest = "0.1"

// consoleStepSLOBreach sees the SLO strip turn during a load: once the
// mutating SLO is not breached (a fresh fleet's first lease writes can
// hold it over the line for up to 5 minutes), it starts a load of
// 600×1 from the keyboard and waits for the activity pane to log the
// breach, with the run in progress, and for the load's folder to keep it
// in alerts.json. It needs the console of TestConsole on consoleCluster,
// started with GHOSTFLEET_SLO_SCALE=SLOScaleForConsoleTest and
// GHOSTFLEET_RESULTS=results (the folder passed), at least 120 columns,
// no overlay open; it removes the fleet's workloads first and after.
func consoleStepSLOBreach(t *testing.T, ctx context.Context, x tmux, results string) {
	t.Helper()
	ghostfleet(t, ctx, "unload", "--name", consoleCluster)
	strip := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "SLOs") {
				return l
			}
		}
		return ""
	}
	deadline := time.Now().Add(7 * time.Minute)
	for {
		l := strip(x.screen())
		if strings.Contains(l, "✓ mutating") || strings.Contains(l, "▲ mutating") || strings.Contains(l, "– mutating") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mutating SLO never left its breach on an idle fleet:\n%s", x.screen())
		}
		time.Sleep(2 * time.Second)
	}

	x.keys("l")
	x.waitFor(10*time.Second, "Load: N pods of G GPUs")
	x.keys("C-u", "600", "Enter")
	s := x.waitFor(4*time.Minute, "during load 600×1")
	if l := strip(s); !strings.Contains(l, "✗") {
		t.Errorf("the activity pane logged a breach the strip does not show: %q", l)
	}
	var logged string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "✗") && strings.Contains(l, "p99") {
			logged = l
		}
	}
	if !strings.Contains(logged, "mutating p99") || !strings.Contains(logged, "> 100ms") {
		t.Errorf("breach logged as %q, want the mutating SLO over its (scaled) 100ms", logged)
	}
	x.waitFor(5*time.Minute, "✓ load 600×1")

	matches, _ := filepath.Glob(filepath.Join(results, "load-*", "alerts.json"))
	found := false
	for _, m := range matches {
		var alerts []struct {
			SLO, Kind, Run string
			Threshold      float64
		}
		readFile(t, m, &alerts)
		for _, a := range alerts {
			if a.SLO == "sli-mutating-p99" && a.Kind == "breached" && strings.Contains(a.Run, "load 600×1") && a.Threshold == 0.1 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no load folder keeps the breach in alerts.json (%v)", matches)
	}
	ghostfleet(t, ctx, "unload", "--name", consoleCluster)
}
