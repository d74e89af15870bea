package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

func newUsageCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Emulated CPU and memory usage of the fleet's pods, as metrics-server and kubectl top see it",
		Long: `Every pod on the fleet's fake nodes uses, in each of its containers, the
CPU and memory its annotations ` + fleet.AnnotationUsageCPU + ` and
` + fleet.AnnotationUsageMemory + ` say (quantities; kwok's own
kwok.x-k8s.io/usage-cpu and -memory are read next), and ` + fleet.DefaultUsageCPU + ` CPU
and ` + fleet.DefaultUsageMemory + ` memory when they say nothing. kwok serves
those figures as each node's kubelet resource metrics (kwok's
ClusterResourceUsage ` + fleet.UsageName + ` and Metric
` + fleet.MetricsResourceName + `), which metrics-server scrapes every 15 s
on fleets brought up with ` + "`ghostfleet up --metrics-server`" + `:
` + "`kubectl top pods`" + ` and HorizontalPodAutoscalers then see them.`,
		Example: `  ghostfleet up --nodes 50 --metrics-server
  ghostfleet load 100 1
  ghostfleet usage set --selector ghostfleet.io/workload --cpu 800m --memory 2Gi
  kubectl --kubeconfig ~/.kwok/clusters/ghostfleet/kubeconfig.yaml top pods -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newUsageSetCommand(g))
	return cmd
}

type usageSetOptions struct {
	*globals
	runs.UsageOptions
	output string
}

func newUsageSetCommand(g *globals) *cobra.Command {
	o := &usageSetOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "set (--selector SEL | --namespace NS) [--cpu Q] [--memory Q]",
		Short: "Change the emulated CPU and/or memory usage of matching pods, live",
		Long: `Annotate the pods that --selector and/or --namespace pick, pending or
running on the fleet's fake nodes, with a new CPU and/or memory usage
(each container of a pod uses that much). kwok serves the new figures at
once; metrics-server, kubectl top and HPAs see them after its next scrape
(within 15 s; a CPU figure is a rate over two scrapes, so allow 30 s).

Values are Kubernetes quantities: --cpu 800m or 2 (cores), --memory 512Mi
or 2Gi. Nothing is changed when a value is not a quantity, the selector
does not parse, or no pod matches. The change is recorded as a run
(results/usage-<time>/run.json, kind "usage"). Pods created later (a
Deployment's new replicas) start with the default usage.`,
		Example: `  ghostfleet usage set --selector ghostfleet.io/workload --cpu 800m --memory 2Gi   # every GhostFleet workload pod
  ghostfleet usage set --namespace gf-load --cpu 2
  ghostfleet usage set --selector app=inference,tier=gpu --memory 40Gi -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Selector, "selector", "l", "", "pods matching this label selector (in every namespace unless --namespace)")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "pods of this namespace")
	fs.StringVar(&o.CPU, "cpu", "", "CPU each container uses, a quantity: 800m, 2")
	fs.StringVar(&o.Memory, "memory", "", "memory each container uses, a quantity: 512Mi, 2Gi")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *usageSetOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.SetUsage(ctx, o.env(p, ""), o.UsageOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { fmt.Fprintln(w, res.Summary()) }); ferr != nil {
		return ferr
	}
	return err
}
