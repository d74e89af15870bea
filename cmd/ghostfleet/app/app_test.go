package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// testCluster is a fleet name that never exists, so that these tests never
// touch a fleet the developer has up (kwok's work folder is fixed when the
// process starts, so HOME cannot be redirected per test).
const testCluster = "ghostfleet-unit-test-absent"

func TestMain(m *testing.M) {
	os.Setenv("GHOSTFLEET_CLUSTER", testCluster)
	os.Exit(m.Run())
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

// Every command and subcommand answers --help.
func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string{}, path...), sub.Name())
			t.Run(strings.Join(p, " "), func(t *testing.T) {
				code, out, errOut := run(t, append(p, "--help")...)
				if code != 0 || !strings.Contains(out, "Usage:") {
					t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
				}
				if sub.Short == "" {
					t.Error("no short description")
				}
			})
			walk(sub, p)
		}
	}
	walk(NewRootCommand(Streams{}), nil)
}

func TestRootHelpListsTheSeedCommands(t *testing.T) {
	_, out, _ := run(t, "--help")
	for _, c := range []string{"up", "check", "nodes", "status", "clean", "bench", "completion"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("--help does not list %q", c)
		}
	}
	if code, out, _ := run(t, "setup", "--help"); code != 0 || !strings.Contains(out, "ghostfleet up") {
		t.Errorf("setup alias: exit %d", code)
	}
	if code, _, _ := run(t, "check_tools", "--help"); code != 0 {
		t.Errorf("check_tools alias: exit %d", code)
	}
}

// Bad input fails with one line naming the value and what is allowed,
// before anything is built or created.
func TestBadInput(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"nodes", "-5"}, "node count -5 is out of range: allowed are 0-10000"},
		{[]string{"nodes", "many"}, `node count "many" is not a whole number`},
		{[]string{"nodes", "999999"}, "node count 999999 is out of range"},
		{[]string{"nodes", "10", "--gpu-profile", "tpu-v5"}, `unknown GPU profile "tpu-v5": allowed are`},
		{[]string{"nodes"}, "accepts 1 arg(s)"},
		{[]string{"up", "--nodes", "-1"}, "node count -1 is out of range"},
		{[]string{"up", "--profile", "turbo"}, `unknown profile "turbo": allowed are default, tuned, fast`},
		{[]string{"up", "--gpu-profile", "h200"}, `unknown GPU profile "h200"`},
		{[]string{"up", "--prometheus-port", "70000"}, "port 70000 is out of range: allowed are 1-65535"},
		{[]string{"up", "--kubeconfig", "/tmp/x"}, "up manages GhostFleet's own cluster"},
		{[]string{"up", "--binary", "kubelet=/bin/true"}, `unknown binary "kubelet"`},
		{[]string{"clean", "--context", "prod"}, "clean manages GhostFleet's own cluster"},
		{[]string{"status", "-o", "yaml"}, `--output "yaml" is not supported: allowed are text, json`},
		{[]string{"status"}, "is not up"},
		{[]string{"nodes", "10"}, "is not up"},
		{[]string{"bench", "nodes", "--rounds", "0"}, "--rounds 0 is out of range"},
		{[]string{"load", "-3", "1"}, "-3 is out of range"},
		{[]string{"load", "10", "zero"}, `GPUs per pod "zero" is not a whole number`},
		{[]string{"load", "10", "1", "-o", "yaml"}, `--output "yaml" is not supported`},
		{[]string{"churn", "10", "-5s"}, "-5s is out of range"},
		{[]string{"churn", "0", "60"}, "rate 0 is out of range"},
		{[]string{"churn", "10", "soon"}, `duration "soon" is not a duration`},
		{[]string{"churn", "10", "0"}, "duration 0s is out of range"},
		{[]string{"churn-limited", "10", "60", "--concurrency", "0"}, "concurrency 0 is out of range"},
		{[]string{"load", "10", "1"}, "is not up"},
		{[]string{"snapshot", "--source", "thanos"}, `--source "thanos" is not a source: use auto, prometheus or direct`},
		{[]string{"snapshot", "--source", "direct", "--sample", "5s"}, "--sample 5s is out of range: it must be at least --step (15s)"},
		{[]string{"snapshot", "--source", "direct", "--run", "load-1"}, "--run load-1 needs Prometheus's history"},
		{[]string{"snapshot", "--source", "direct"}, "is not up"},
		{[]string{"fault", "meteor"}, `unknown fault "meteor": allowed are gpu-xid, nvlink, rdma, node-down, pod-exit`},
		{[]string{"fault", "gpu-xid", "--nodes", "0"}, "--nodes 0 is out of range"},
		{[]string{"fault", "gpu-xid", "--xid", "5"}, "--xid 5 is not a known Xid"},
		{[]string{"fault", "pod-exit", "--exit-code", "256", "-n", "a"}, "--exit-code 256 is out of range: allowed are 0-255"},
		{[]string{"fault", "pod-exit", "--exit-code", "3", "--delay", "-2s", "-n", "a"}, "--delay -2s is out of range"},
		{[]string{"fault", "pod-exit", "--exit-code", "3"}, "pod-exit needs --namespace or --selector"},
		{[]string{"fault", "pod-exit", "-n", "a"}, "--exit-code is required"},
		{[]string{"fault", "clear"}, "name the faults to clear"},
		{[]string{"fault", "clear", "meteor"}, `unknown fault "meteor"`},
		{[]string{"fault", "gpu-xid", "--nodes", "5"}, "is not up"},
		{[]string{"save", "Before_Faults"}, `state name "Before_Faults" is not allowed`},
		{[]string{"save", "--kubeconfig", "/tmp/x"}, "save manages GhostFleet's own cluster"},
		{[]string{"restore", "never-saved", "--results-dir", "/nonexistent"}, `no saved state "never-saved"`},
		{[]string{"restore"}, "accepts 1 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure")
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.want)
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n") + 1; lines > 2 {
				t.Errorf("error is %d lines long:\n%s", lines, errOut)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "cache")); len(entries) != 0 {
		t.Errorf("bad input left %d entries in the cache", len(entries))
	}
}

// A stranger's kubeconfig in $KUBECONFIG is never used.
func TestKubeconfigEnvironmentIsIgnored(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	kc := filepath.Join(home, "prod.yaml")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	code, _, errOut := run(t, "status")
	if code == 0 || strings.Contains(errOut, kc) || !strings.Contains(errOut, `fleet "`+testCluster+`" is not up`) {
		t.Errorf("exit %d, stderr %q: want a refusal that names GhostFleet's fleet, not $KUBECONFIG", code, errOut)
	}
}

func TestParseMemAvailable(t *testing.T) {
	got, err := parseMemAvailable(strings.NewReader("MemTotal:       24576000 kB\nMemAvailable:   20000000 kB\n"))
	if err != nil || got != 20000000*1024 {
		t.Errorf("got %d, %v", got, err)
	}
	if _, err := parseMemAvailable(strings.NewReader("MemTotal: 1 kB\n")); err == nil {
		t.Error("no MemAvailable line accepted")
	}
}
