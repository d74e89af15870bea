package app

import (
	"context"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/tui"
)

func consoleActions(t *testing.T) map[tui.ActionKey]tui.Action {
	t.Helper()
	g := &globals{name: testCluster, resultsDir: t.TempDir()}
	return (&consoleOptions{globals: g}).actions()
}

func defaults(a tui.Action) []string {
	v := make([]string, len(a.Fields))
	for i, f := range a.Fields {
		v[i] = f.Default
	}
	return v
}

// A form's defaults are valid options: each action gets past them to the
// run itself, which then finds no fleet (the test's is never up).
func TestConsoleDefaultsReachTheRun(t *testing.T) {
	for key, a := range consoleActions(t) {
		if a.Unavailable != "" {
			continue
		}
		t.Run(string(key), func(t *testing.T) {
			want := testCluster
			if key == tui.ActReport {
				want = "no snapshot under" // a report reads folders, not the fleet
			}
			_, err := a.Run(context.Background(), defaults(a), tui.Control{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s with its defaults %q: %v, want the run's own error about fleet %s", a.Name, defaults(a), err, testCluster)
			}
		})
	}
}

// The console's forms and the command line say the same thing about the
// same bad value: both go through the run API's parsers and Validate.
func TestConsoleAndFlagsGiveTheSameErrors(t *testing.T) {
	acts := consoleActions(t)
	tests := []struct {
		key    tui.ActionKey
		field  int
		value  string
		args   []string
		expect string
	}{
		{tui.ActLoad, 0, "lots", []string{"load", "lots", "1"}, `pod count "lots" is not a whole number`},
		{tui.ActLoad, 2, "daemonset", []string{"load", "10", "1", "--mode", "daemonset"}, `mode "daemonset" is not supported`},
		{tui.ActLoad, 4, "gpus=2", []string{"load", "10", "1", "--claim", "gpus=2"}, `--claim "gpus=2" is not a claim mode`},
		{tui.ActChurn, 0, "fast", []string{"churn", "fast", "60s"}, `rate "fast" is not a number`},
		{tui.ActChurn, 1, "soon", []string{"churn", "50", "soon"}, `duration "soon" is not a duration`},
		{tui.ActChurnLimited, 2, "0", []string{"churn-limited", "100", "60s", "--concurrency", "0"}, "concurrency 0 is out of range"},
		{tui.ActNodes, 0, "lots", []string{"nodes", "lots"}, `"lots"`},
		{tui.ActTrain, 0, "0", []string{"train", "--jobs", "0"}, "job count 0 is out of range"},
		{tui.ActSnapshot, 0, "yesterday", nil, `since "yesterday" is not a duration`},
		{tui.ActFaults, 0, "gpu-melt", []string{"fault", "gpu-melt"}, "gpu-melt"},
	}
	for _, tc := range tests {
		t.Run(string(tc.key)+" "+tc.value, func(t *testing.T) {
			a := acts[tc.key]
			v := defaults(a)
			v[tc.field] = tc.value
			_, err := a.Run(context.Background(), v, tui.Control{})
			if err == nil || !strings.Contains(err.Error(), tc.expect) {
				t.Fatalf("console: %v, want %q", err, tc.expect)
			}
			if tc.args == nil {
				return
			}
			code, _, stderr := run(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.expect) {
				t.Errorf("command line: exit %d, %q, want %q", code, stderr, tc.expect)
			}
		})
	}
}

func TestFaultFormNeedsAnExitCodeForPodExit(t *testing.T) {
	a := consoleActions(t)[tui.ActFaults]
	v := defaults(a)
	v[0] = "pod-exit"
	if _, err := a.Run(context.Background(), v, tui.Control{}); err == nil || !strings.Contains(err.Error(), "exit code is required") {
		t.Errorf("pod-exit without an exit code: %v", err)
	}
	v[3] = "3"
	if _, err := a.Run(context.Background(), v, tui.Control{}); err == nil || !strings.Contains(err.Error(), testCluster) {
		t.Errorf("pod-exit with exit code 3: %v, want the run's own error", err)
	}
}
