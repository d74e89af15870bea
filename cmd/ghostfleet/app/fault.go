package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// faultOptions are the flags every fault command shares.
type faultOptions struct {
	*globals
	output string
}

func newFaultCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fault",
		Short: "Inject GPU cluster failures into the fleet: Xid errors, links down, nodes down, failing pods",
		Long: `Inject the failures that stall GPU training jobs, the way a GPU health
stack would report them, so that fault-tolerance logic (pre-flight checks,
rescheduling, health operators) can be tested at scale:

` + faultKindList() + `

GhostFleet marks the chosen nodes or pods (label fault.ghostfleet.io/<kind>
and annotations with the fault's parameters); kwok stages installed in the
fleet then write the node conditions or container states, with pod faults'
delay and jitter taken by kwok itself. GPU faults also taint the node
nvidia.com/gpu-health=unhealthy:NoSchedule, as a health operator would.
` + "`ghostfleet fault clear`" + ` recovers.

Every fault is recorded as a run (results/fault-<time>/run.json, kind
"fault", with its scope: node names or pod count), so snapshots and
reports of that time show it.`,
		Example: `  ghostfleet fault gpu-xid --nodes 5 --xid 48
  ghostfleet fault nvlink --nodes 2 --seed 7
  ghostfleet fault node-down --nodes 1
  ghostfleet fault pod-exit --exit-code 3 --reason NCCLTestFailed --delay 30s --jitter 30s --namespace gf-load
  ghostfleet fault clear --all`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				_, err := fault.LookupKind(args[0])
				return err
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, k := range fault.Kinds {
		if k.Scope == "nodes" {
			cmd.AddCommand(newNodeFaultCommand(g, k))
		}
	}
	cmd.AddCommand(newPodExitCommand(g), newFaultClearCommand(g), newFaultListCommand(g))
	return cmd
}

func faultKindList() string {
	var b strings.Builder
	for _, k := range fault.Kinds {
		fmt.Fprintf(&b, "  %-10s %s\n", k.Kind, k.Description)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (o *faultOptions) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
}

// clients returns the fault clients and the environment that completes
// the record.
func (o *faultOptions) clients() (runEnv, fault.Clients, error) {
	if err := checkOutput(o.output); err != nil {
		return runEnv{}, fault.Clients{}, err
	}
	env, err := o.runEnv("")
	if err != nil {
		return env, fault.Clients{}, err
	}
	c, err := fault.NewClients(env.target)
	return env, c, err
}

// finish writes the record (also of a failed fault, which may have done
// part of its work) and prints the result.
func (o *faultOptions) finish(ctx context.Context, env runEnv, rec record.Record, ferr error, printText func(io.Writer, fault.Result)) error {
	if rec.Kind == "" {
		return ferr // refused before anything was done
	}
	rec.Cluster, rec.Profile = env.clusterName(), env.profile
	dir, err := env.writeRecord(o.resultsDir, rec)
	rec.ID = filepath.Base(dir)
	if err != nil {
		if ferr != nil {
			return ferr
		}
		return fmt.Errorf("writing the run record: %w", err)
	}
	res, _ := rec.Result.(fault.Result)
	if ferr == nil {
		if o.output == "json" {
			if err := writeJSON(o.streams.Out, rec); err != nil {
				return err
			}
		} else {
			printText(o.streams.Out, res)
		}
	}
	fmt.Fprintf(o.streams.ErrOut, "run record: %s\n", dir)
	if ctx.Err() != nil {
		return exitError{code: 130, msg: "interrupted: " + rec.Outcome}
	}
	return ferr
}
