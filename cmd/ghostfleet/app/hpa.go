package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

type hpaOptions struct {
	*globals
	runs.HPAOptions
	steps  string
	output string
}

func newHPACommand(g *globals) *cobra.Command {
	o := &hpaOptions{globals: g, HPAOptions: runs.NewHPAOptions(), steps: runs.DefaultHPASteps}
	cmd := &cobra.Command{
		Use:   "hpa",
		Short: "Autoscale a GPU inference Deployment on emulated CPU and measure how replicas follow",
		Long: `Create a GPU inference Deployment (--min-replicas pods of --gpus
nvidia.com/gpu on the fake nodes, each requesting --cpu-request CPU) and an
autoscaling/v2 HorizontalPodAutoscaler on its CPU utilisation (--target-cpu
% of the request), then play --steps: each step sets the CPU every pod of
the Deployment uses (the ` + fleet.AnnotationUsageCPU + ` annotation that
` + "`ghostfleet usage set`" + ` writes; pods the HPA adds get the step's figure
as they appear) for a while. Needs a fleet up with --metrics-server.

Recorded (results/hpa-<time>/run.json, kind "hpa"): the replicas over
time (Deployment spec and status, pods Running, the HPA's desired replicas
and utilisation), per step the time from the change of load to the HPA's
first action and to its desired replicas Running (time to scale up and
down), the HPA's events and conditions, and the control plane's CPU over
the run and per step. A snapshot then marks each step on the charts. The
Deployment and HPA stay until ` + "`ghostfleet unload`" + `.

What sets the pace: metrics-server scrapes every 15 s and a CPU figure is a
rate over two scrapes; the controller-manager's HPA sync period is 15 s
(--horizontal-pod-autoscaler-sync-period); scale-up is limited to the
larger of 4 pods or 100 % per 15 s; and scale-down waits for the HPA's
stabilization window — Kubernetes' default 5 minutes. --scale-down-window
(and --scale-up-window) set spec.behavior on the HPA object, so no restart
is needed: the default here is 60s.

Each pod's use does not fall when replicas are added (nothing balances
the emulated load), so a step above the target takes the Deployment to
--max-replicas as fast as the scale-up policy allows, and a step below it
back to --min-replicas after the window.

Allowed values (the autoscaling/v2 API's): --target-cpu 1 or more (above
100 is allowed: pods may use more than they request); --min-replicas 1 or
more; --max-replicas from --min-replicas (here at most 1000); windows whole
seconds from 0 to 1h.`,
		Example: `  ghostfleet up --nodes 50 --metrics-server
  ghostfleet hpa   # ` + runs.DefaultHPASteps + `, 1-10 replicas, target 50%
  ghostfleet hpa --steps 100m:30s,900m:90s,100m:90s --max-replicas 6 --scale-down-window 20s
  ghostfleet hpa --target-cpu 80 --cpu-request 2 --gpus 8 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.steps, "steps", o.steps, "emulated CPU of every pod, in steps: CPU:DURATION,…")
	fs.Int32Var(&o.TargetCPU, "target-cpu", o.TargetCPU, "HPA target: average CPU utilisation, % of the pods' CPU request (1 or more)")
	fs.Int32Var(&o.MinReplicas, "min-replicas", o.MinReplicas, "HPA minReplicas (and the Deployment's start)")
	fs.Int32Var(&o.MaxReplicas, "max-replicas", o.MaxReplicas, "HPA maxReplicas")
	fs.IntVar(&o.GPUsPerPod, "gpus", o.GPUsPerPod, "nvidia.com/gpu per pod")
	fs.StringVar(&o.CPURequest, "cpu-request", o.CPURequest, "CPU each pod requests (the utilisation's base), a quantity")
	fs.StringVar(&o.MemoryRequest, "memory-request", o.MemoryRequest, "memory each pod requests, a quantity")
	fs.DurationVar(&o.ScaleDownWindow, "scale-down-window", o.ScaleDownWindow, "HPA spec.behavior.scaleDown.stabilizationWindowSeconds (Kubernetes' default: 5m)")
	fs.DurationVar(&o.ScaleUpWindow, "scale-up-window", o.ScaleUpWindow, "HPA spec.behavior.scaleUp.stabilizationWindowSeconds (Kubernetes' default: 0s)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "workload namespace")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	return cmd
}

func (o *hpaOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	steps, err := workload.ParseHPASteps(o.steps)
	if err != nil {
		return err
	}
	o.Steps = steps
	if err := o.Validate(); err != nil {
		return err
	}
	p := o.streams.printer(false)
	defer p.Close()
	res, err := runs.HPA(ctx, o.env(p, ""), o.HPAOptions)
	p.Close()
	if res.Dir == "" {
		return err
	}
	if ferr := o.finish(res, o.output, func(w io.Writer) { printHPA(w, res) }); ferr != nil {
		return ferr
	}
	return err
}

func printHPA(w io.Writer, r runs.HPAResult) {
	fmt.Fprintf(w, "hpa: Deployment and HPA %s/%s — %s after %.0fs\n", r.Namespace, r.Deployment, r.Outcome, r.DurationSeconds)
	for i, s := range r.Steps {
		fmt.Fprintf(w, "  step %d: %s CPU per pod for %s: %d → %d replicas (%s)", i+1, s.CPU, s.For, s.From, s.To, s.Direction)
		if s.FirstChange != nil {
			fmt.Fprintf(w, ", HPA acted after %.0fs", *s.FirstChange)
		}
		if s.Reached != nil {
			fmt.Fprintf(w, ", %d Running after %.0fs", s.To, *s.Reached)
		} else if s.Direction != "none" {
			fmt.Fprintf(w, ", %d not Running within the step", s.To)
		}
		fmt.Fprintf(w, ", peak %d\n", s.Peak)
	}
	fmt.Fprintf(w, "  time to scale up %s, down %s (change of load → the HPA's replicas Running)\n", hpaSeconds(r.ScaleUpSeconds), hpaSeconds(r.ScaleDownSeconds))
	fmt.Fprintf(w, "  replicas: %s\n", timelineText(r.Timeline, 12))
	if r.CPU != nil {
		fmt.Fprintf(w, "  control plane: %.2f cores on average", r.ControlPlaneCores)
		var parts []string
		for _, c := range workload.ControlPlane {
			if s, ok := r.CPU[c]; ok {
				parts = append(parts, fmt.Sprintf("%s %.1fs", c, s))
			}
		}
		fmt.Fprintf(w, " (CPU seconds: %s)\n", strings.Join(parts, ", "))
	}
	rescales := 0
	for _, e := range r.Events {
		if e.Reason == "SuccessfulRescale" {
			rescales++
		}
	}
	fmt.Fprintf(w, "  HPA events: %d (%d rescales)", len(r.Events), rescales)
	for _, c := range r.Conditions {
		if c.Status != "True" || c.Type == "ScalingLimited" {
			fmt.Fprintf(w, "; %s=%s %s", c.Type, c.Status, c.Reason)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  the Deployment and HPA stay: `ghostfleet unload` removes them\n")
}

func hpaSeconds(s *float64) string {
	if s == nil {
		return "– (not reached)"
	}
	return fmt.Sprintf("%.0fs", *s)
}

// timelineText is the Running replicas over time as "t:n" at each
// change, at most max of them (then the last).
func timelineText(samples []workload.HPASample, max int) string {
	var parts []string
	last := -1
	for _, s := range samples {
		if s.Running == last {
			continue
		}
		last = s.Running
		parts = append(parts, fmt.Sprintf("%.0fs:%d", s.At, s.Running))
	}
	if len(parts) > max {
		parts = append(parts[:max-1], "…", parts[len(parts)-1])
	}
	return strings.Join(parts, " ")
}
