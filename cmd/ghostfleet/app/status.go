package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
)

type statusOptions struct {
	*globals
	output        string
	prometheusURL string
}

func newStatusCommand(g *globals) *cobra.Command {
	o := &statusOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Control-plane health, nodes, GPUs and pods",
		Long: `Show each control-plane process (alive, /readyz or its last Prometheus
scrape), nodes total and Ready, GPUs allocatable and allocated, and pods by
phase in GhostFleet's workload namespaces, and etcd's alarms and database
size against its quota. Exits 1 when a component is unhealthy or etcd has
raised an alarm (NOSPACE: writes refused; ` + "`ghostfleet etcd recover`" + `), so
scripts can wait on it.`,
		Example: `  ghostfleet status
  ghostfleet status -o json | jq .gpus`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus of an attached cluster (with --kubeconfig)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *statusOptions) run(ctx context.Context) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q is not supported: allowed are text, json", o.output)
	}
	st, err := fleet.GetStatus(ctx, o.target(), o.prometheusURL)
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(o.streams.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	} else {
		printStatus(o.streams.Out, st)
	}
	if !st.Healthy() {
		return exitError{code: 1}
	}
	return nil
}

func printStatus(w io.Writer, st fleet.Status) {
	name := st.Cluster
	if st.Attached {
		name = st.Kubeconfig
	}
	fmt.Fprintf(w, "Fleet status — %s", name)
	if st.Profile != "" {
		fmt.Fprintf(w, " (profile %s)", st.Profile)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "\nControl plane:")
	for _, c := range st.Components {
		mark := "ok  "
		if !c.Healthy {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-24s %s\n", mark, c.Name, c.Detail)
	}
	printEtcd(w, st.Etcd)
	fmt.Fprintln(w, "\nNodes:")
	dra := ""
	if st.GPUs.Devices > 0 {
		dra = fmt.Sprintf(" (%d as DRA devices)", st.GPUs.Devices)
	}
	fmt.Fprintf(w, "  %d/%d Ready (%d fake), %d GPUs allocatable%s, %d allocated\n",
		st.Nodes.Ready, st.Nodes.Total, st.Nodes.Fake, st.GPUs.Allocatable, dra, st.GPUs.Allocated)
	printAutoscaler(w, st.Autoscaler)
	fmt.Fprintln(w, "\nPods:")
	if len(st.Pods.Namespaces) == 0 {
		fmt.Fprintln(w, "  (no GhostFleet workload namespaces yet)")
	} else {
		fmt.Fprintf(w, "  %d pending, %d running, %d succeeded, %d failed in %v\n",
			st.Pods.Pending, st.Pods.Running, st.Pods.Succeeded, st.Pods.Failed, st.Pods.Namespaces)
	}
	fmt.Fprint(w, "\nPrometheus")
	if v := st.Prometheus.Version; v != "" {
		fmt.Fprint(w, " "+v)
	}
	fmt.Fprintln(w, ":")
	switch {
	case st.Prometheus.URL == "":
		fmt.Fprintln(w, "  (none: a fleet up with --prometheus-port 0; attached, pass --prometheus-url)")
	case st.Prometheus.Pending:
		fmt.Fprintf(w, "  %s — not built yet: the fleet came up first; `ghostfleet up` builds and starts it\n", st.Prometheus.URL)
	case !st.Prometheus.Reachable:
		fmt.Fprintf(w, "  %s unreachable: %s\n", st.Prometheus.URL, st.Prometheus.Error)
	default:
		up := 0
		for _, t := range st.Prometheus.Targets {
			if t.Up() {
				up++
			}
		}
		fmt.Fprintf(w, "  %s — %d/%d targets up\n", st.Prometheus.URL, up, len(st.Prometheus.Targets))
	}
	fmt.Fprintf(w, "\nkubeconfig: %s\n", st.Kubeconfig)
}

// printAutoscaler shows the fleet's Karpenter NodePools and the nodes
// each made.
func printAutoscaler(w io.Writer, a *fleet.AutoscalerStatus) {
	if a == nil {
		return
	}
	fmt.Fprintf(w, "\nAutoscaler: %s (consolidate after %s), %d NodeClaims\n", a.Name, a.ConsolidateAfter, a.NodeClaims)
	for _, p := range a.NodePools {
		if p.Missing {
			fmt.Fprintf(w, "  NodePool %-16s MISSING (ghostfleet up puts it back)\n", p.Name)
			continue
		}
		fmt.Fprintf(w, "  NodePool %-16s %d/%d nodes Ready (%s, at most %d)\n", p.Name, p.Ready, p.Nodes, p.Profile, p.MaxNodes)
	}
}
