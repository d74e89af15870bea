package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
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
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range fault.Kinds {
		fmt.Fprintf(tw, "  %s\t%s\n", k.Kind, k.Description)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

func (o *faultOptions) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
}

// clients checks the output format and returns the fault clients of a
// fleet that is up (or of an attached cluster), for `fault list`.
func (o *faultOptions) clients() (fault.Clients, error) {
	if err := checkOutput(o.output); err != nil {
		return fault.Clients{}, err
	}
	t := o.target()
	if !t.Attached() {
		if _, err := fleet.UpState(t.Name); err != nil {
			return fault.Clients{}, err
		}
	}
	return fault.NewClients(t)
}

// finishFault ends every fault command alike: a fault refused before it
// changed anything is only its error; one that ran prints its result
// (also when it failed part way: what it did) and where it is recorded.
func (o *faultOptions) finishFault(res runs.Result, err error, printText func(io.Writer)) error {
	if res.Header().Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, printText); ferr != nil {
		return ferr
	}
	return err
}
