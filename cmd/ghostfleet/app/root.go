// Package app is the ghostfleet command line: one file per command, each
// with a small options struct, all driven through Run so tests can call
// them with their own streams and arguments.
package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

var negativeArg = regexp.MustCompile(`unknown shorthand flag: '\d' in (-\d\S*)`)

// globals are the flags every command shares.
type globals struct {
	name       string
	kubeconfig string
	context    string
	resultsDir string
	realOK     bool // --i-know-this-is-real: load or fault an attached cluster with real nodes
	nameSet    bool // --name or GHOSTFLEET_CLUSTER was given
	streams    Streams
}

// target is the cluster a command works on: GhostFleet's own unless
// --kubeconfig attaches another explicitly.
func (g *globals) target() fleet.Target {
	if g.kubeconfig != "" {
		return fleet.Attach(g.kubeconfig, g.context)
	}
	return fleet.Own(g.name)
}

// ownOnly refuses --kubeconfig for commands that manage GhostFleet's own
// cluster's processes.
func (g *globals) ownOnly(cmd string) error {
	if g.kubeconfig != "" || g.context != "" {
		return fmt.Errorf("%s manages GhostFleet's own cluster; --kubeconfig/--context attach to another cluster and do not apply (use --name to pick a GhostFleet cluster)", cmd)
	}
	return nil
}

// NewRootCommand builds the ghostfleet command tree.
func NewRootCommand(streams Streams) *cobra.Command {
	g := &globals{streams: streams}
	root := &cobra.Command{
		Use:   "ghostfleet",
		Short: "A 1,000-node GPU Kubernetes fleet with nobody aboard",
		Long: `GhostFleet runs a real kube-apiserver, etcd, kube-scheduler and
kube-controller-manager on this machine, with thousands of fake GPU nodes
faked by KWOK, loads it, and measures the control plane against the
upstream scalability SLOs.

Every command targets GhostFleet's own cluster (--name, default
"ghostfleet"), never the cluster your KUBECONFIG points at; pass
--kubeconfig (and --context) to attach to another cluster explicitly.

Runs are written to the results folder, called results/ in every command's
help: the results/ folder of the GhostFleet checkout you are in, else
~/.local/share/ghostfleet/results; --results-dir or GHOSTFLEET_RESULTS
choose another.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// `ghostfleet` alone opens the console.
	console := &consoleOptions{globals: g, refresh: consoleRefresh}
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error { return console.run(cmd.Context()) }
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetIn(streams.In)
	pf := root.PersistentFlags()
	pf.StringVar(&g.name, "name", envOr("GHOSTFLEET_CLUSTER", fleet.DefaultClusterName), "name of GhostFleet's cluster (env GHOSTFLEET_CLUSTER)")
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "attach to the cluster of this kubeconfig instead of GhostFleet's own ($KUBECONFIG is never used)")
	pf.StringVar(&g.context, "context", "", "kubeconfig context to use with --kubeconfig")
	pf.BoolVar(&g.realOK, "i-know-this-is-real", false, "with --kubeconfig: consent to attach to the cluster, and to load or fault one whose real nodes GhostFleet cannot keep its work off")
	pf.StringVar(&g.resultsDir, "results-dir", record.DefaultRoot(), "where runs are written and read (env "+record.RootEnv+"; outside a GhostFleet checkout: ~/.local/share/ghostfleet/results)")

	// "load -3 1" reaches pflag as a shorthand flag -3; name the value
	// instead of complaining about a flag nobody meant.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if m := negativeArg.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("%s is out of range: %s takes no negative counts, rates or durations", m[1], c.CommandPath())
		}
		return flagValueError(err)
	})
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		g.nameSet = cmd.Flags().Changed("name") || os.Getenv("GHOSTFLEET_CLUSTER") != ""
	}
	root.AddCommand(
		newConsoleCommand(g),
		newDemoCommand(g),
		newUpCommand(g),
		newAttachCommand(g),
		newDetachCommand(g),
		newKwokShardCommand(g),
		newCheckCommand(g),
		newNodesCommand(g),
		newStatusCommand(g),
		newLoadCommand(g),
		newChurnCommand(g, false),
		newChurnCommand(g, true),
		newKneeCommand(g),
		newFindingsCommand(g),
		newTrainCommand(g),
		newBinpackCommand(g),
		newUnloadCommand(g),
		newAutoscaleCommand(g),
		newCL2Command(g),
		newFaultCommand(g),
		newUsageCommand(g),
		newHPACommand(g),
		newSaveCommand(g),
		newRestoreCommand(g),
		newSnapshotCommand(g),
		newReportCommand(g),
		newSiteCommand(g),
		newCleanCommand(g),
		newBenchCommand(g),
		newPprofCommand(g),
		newProbeCommand(g),
		newRestartCommand(g),
		newEtcdCommand(g),
		newVersionCommand(g),
		newProfileCommand(g),
		newABCommand(g),
		newWorkloadCommand(g),
	)
	return root
}

// Main runs the command line with args and returns the exit code. Ctrl-C
// cancels the running command's context; the command cleans up and says
// what it left behind.
func Main(streams Streams, args []string) int {
	// client-go logs through klog; what matters reaches the user as errors,
	// and a cancelled request's "context canceled" lines are only noise.
	klog.SetLogger(logr.Discard())
	// `ghostfleet up | head -1` must not kill a half-made cluster: with
	// SIGPIPE ignored a closed pipe fails writes, and the work finishes.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return Run(ctx, streams, args)
}

// Run executes args and returns the exit code.
func Run(ctx context.Context, streams Streams, args []string) int {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := runs.ExplainEtcd(root.ExecuteContext(ctx))
	if err == nil {
		return 0
	}
	var exit exitError
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(streams.ErrOut, "error:", exit.msg)
		}
		return exit.code
	}
	if ctx.Err() != nil {
		// Ctrl-C or SIGTERM: whatever the command was doing, it stopped
		// because it was asked to (what it left is in err), so 130 as a
		// shell reports an interrupted program.
		fmt.Fprintln(streams.ErrOut, "interrupted:", err)
		return 130
	}
	fmt.Fprintln(streams.ErrOut, "error:", err)
	return 1
}

// exitError ends a command with a specific code.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
