package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func TestPrintLoadJudgesOnlySteadyRuns(t *testing.T) {
	startup := workload.Startup{
		PodStartup: workload.Percentiles{Count: 100, P50: 3, P90: 8, P99: 9}, CreateTime: workload.CreateTimeSend,
	}
	tests := []struct {
		name        string
		res         workload.LoadResult
		want, never []string
	}{
		{"no pod ran", workload.LoadResult{Pods: 10, GPUsPerPod: 1, Pattern: workload.PatternSteady, TargetRate: 5},
			[]string{"no pod ran, nothing to measure"}, []string{"SLO", "p99 0.00"}},
		{"burst", workload.LoadResult{Pods: 100, Running: 100, Pattern: workload.PatternBurst, StartupLatency: startup},
			[]string{"a burst, not judged against the pod startup SLO"}, []string{"misses", "meets"}},
		{"steady", workload.LoadResult{Pods: 100, Running: 100, Pattern: workload.PatternSteady, TargetRate: 20, StartupLatency: startup},
			[]string{"steady, 20 pods/s", "pod_startup p99 9.00s misses the upstream pod startup SLO"}, nil},
		{"rejections", workload.LoadResult{Pods: 5, Requests: requests.Stats{Sent: map[string]int{"POST": 5}, Succeeded: 2, Rejected: 3,
			Errors: map[string]int{requests.ErrTooManyRequests: 3}}},
			[]string{"requests: 5 sent, 2 ok, 3 rejected by APF (429); no 429 or 5xx retried"}, nil},
		{"paced above capacity", workload.LoadResult{Pods: 100, Running: 100, Pattern: workload.PatternAboveCapacity, TargetRate: 500, StartupLatency: startup},
			[]string{"paced above capacity, 500 pods/s", "not steady state and not judged"}, []string{"misses", "meets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printLoad(&b, tt.res)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in\n%s", w, b.String())
				}
			}
			for _, n := range tt.never {
				if strings.Contains(b.String(), n) {
					t.Errorf("must not print %q:\n%s", n, b.String())
				}
			}
		})
	}
}

func TestClientLimitsComeFromTheProfile(t *testing.T) {
	if l := workload.LimitsOf(fleet.ProfileTuned); l.SchedulerQPS <= 50 || l.Profile != "tuned" {
		t.Errorf("tuned limits %+v", l)
	}
	if l := workload.LimitsOf(fleet.ProfileDefault); l.SchedulerQPS != 50 || l.ControllerManagerQPS != 20 {
		t.Errorf("default limits %+v, want the upstream 50 and 20", l)
	}
}
