package tui

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// resourcesLine is the pods' CPU and memory, used (metrics.k8s.io, as
// kubectl top and HPAs see it) against requested, in w cells; "n/a"
// used when the cluster runs no metrics-server. Used counts every pod,
// requested only the bound ones that ask: GPU pods that request no CPU
// still use some, so used can be the larger.
func resourcesLine(th Theme, v watch.FleetView, w int) string {
	cpuReq, memReq := cores(v.CPURequested), gib(v.MemoryRequested)
	var candidates []string
	if u := v.Usage; u != nil {
		cpuUsed, memUsed := cores(u.CPUMilli), gib(u.MemoryBytes)
		candidates = []string{
			fmt.Sprintf("%s %s used / %s req · %s %s / %s GiB", th.Bold.Render("CPU"), cpuUsed, cpuReq, th.Bold.Render("Mem"), memUsed, memReq),
			fmt.Sprintf("%s %s/%s · %s %s/%s Gi", th.Bold.Render("CPU"), cpuUsed, cpuReq, th.Bold.Render("Mem"), memUsed, memReq),
		}
	} else {
		na := th.Dim.Render(" · used n/a (no metrics-server)")
		candidates = []string{
			fmt.Sprintf("%s req %s · %s req %s GiB%s", th.Bold.Render("CPU"), cpuReq, th.Bold.Render("Mem"), memReq, na),
			fmt.Sprintf("%s req %s · %s req %s GiB%s", th.Bold.Render("CPU"), cpuReq, th.Bold.Render("Mem"), memReq, th.Dim.Render(" · used n/a")),
			fmt.Sprintf("%s %s · %s %s Gi req · n/a used", th.Bold.Render("CPU"), cpuReq, th.Bold.Render("Mem"), memReq),
		}
	}
	for _, c := range candidates {
		if ansi.StringWidth(c) <= w {
			return c
		}
	}
	return ansi.Truncate(candidates[len(candidates)-1], w, "…")
}

// cores writes millicores as cores, to one decimal below 100.
func cores(milli int64) string {
	c := float64(milli) / 1000
	if c < 100 {
		return fmt.Sprintf("%.1f", c)
	}
	return thousands(int64(c + 0.5))
}

// gib writes bytes as GiB, to one decimal below 100.
func gib(bytes int64) string {
	g := float64(bytes) / (1 << 30)
	if g < 100 {
		return fmt.Sprintf("%.1f", g)
	}
	return thousands(int64(g + 0.5))
}
