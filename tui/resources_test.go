package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

func TestResourcesLine(t *testing.T) {
	th := NewTheme(false)
	with := watch.FleetView{CPURequested: 6000, MemoryRequested: 24 << 30, Usage: &fleet.PodUsage{Pods: 6, CPUMilli: 5400, MemoryBytes: 3 << 29}}
	without := watch.FleetView{CPURequested: 6000, MemoryRequested: 24 << 30}
	tests := []struct {
		name string
		v    watch.FleetView
		w    int
		want string
	}{
		{"used and requested", with, 60, "CPU 5.4 used / 6.0 req · Mem 1.5 / 24.0 GiB"},
		{"narrow", with, 36, "CPU 5.4/6.0 · Mem 1.5/24.0 Gi"},
		{"no metrics-server", without, 80, "CPU req 6.0 · Mem req 24.0 GiB · used n/a (no metrics-server)"},
		{"no metrics-server, narrow", without, 46, "CPU req 6.0 · Mem req 24.0 GiB · used n/a"},
		{"no metrics-server, narrowest", without, 36, "CPU 6.0 · Mem 24.0 Gi req · n/a used"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resourcesLine(th, tc.v, tc.w)
			if got != tc.want || ansi.StringWidth(got) > tc.w {
				t.Errorf("resourcesLine(%d) = %q, want %q", tc.w, got, tc.want)
			}
		})
	}
}
