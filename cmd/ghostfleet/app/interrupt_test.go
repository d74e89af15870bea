package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Ctrl-C ends any command with 130 and one line saying what was stopped,
// and a command interrupted before its run began leaves no run folder
// (#16 item 3). The commands run against a fleet that is not up, so what
// they were doing when cancelled is failing to open it.
func TestInterruptedCommandsExit130(t *testing.T) {
	results := t.TempDir()
	for _, args := range [][]string{
		{"load", "10", "1"}, {"churn", "10", "60"}, {"train"}, {"binpack"}, {"nodes", "10"},
		{"fault", "gpu-xid"}, {"snapshot"}, {"save"}, {"restore", "x"}, {"report"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out, errOut bytes.Buffer
			code := Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append(args, "--results-dir", results))
			if code != 130 {
				t.Errorf("exit %d, want 130 (stderr %q)", code, errOut.String())
			}
			if !strings.HasPrefix(errOut.String(), "interrupted: ") || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("stderr %q, want one line starting interrupted:", errOut.String())
			}
			if entries, _ := os.ReadDir(results); len(entries) > 0 {
				t.Errorf("left %d entries in the results folder", len(entries))
			}
		})
	}
}
