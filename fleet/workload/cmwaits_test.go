package workload

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// cmText is a controller-manager /metrics with the three histograms the
// meter reads, at the given totals.
func cmText(deleteCount, deleteSum, gcCount, gcSum float64) []byte {
	return []byte(fmt.Sprintf(`# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="DELETE",le="+Inf"} %[1]g
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="DELETE"} %[2]g
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="DELETE"} %[1]g
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="GET",le="+Inf"} 10
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="GET"} 1
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="GET"} 10
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="garbage_collector_attempt_to_delete",le="+Inf"} %[3]g
workqueue_work_duration_seconds_sum{name="garbage_collector_attempt_to_delete"} %[4]g
workqueue_work_duration_seconds_count{name="garbage_collector_attempt_to_delete"} %[3]g
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="job",le="+Inf"} 4
workqueue_queue_duration_seconds_sum{name="job"} 0.5
workqueue_queue_duration_seconds_count{name="job"} 4
`, deleteCount, deleteSum, gcCount, gcSum))
}

// The meter records, per phase, what each histogram added since the last
// reading, and leaves out what did not move (GET, the job queue).
func TestControllerManagerMeterPhases(t *testing.T) {
	readings := [][]byte{cmText(0, 0, 0, 0), cmText(100, 4, 50, 2), cmText(420, 20, 370, 18)}
	n := 0
	e := &metrics.Endpoint{Job: "kube-controller-manager", Fetch: func(context.Context) ([]byte, error) {
		n++
		return readings[n-1], nil
	}}
	var warned []string
	report := func(ev progress.Event) { warned = append(warned, ev.Message) }
	m := startControllerManagerMeter(context.Background(), e, report)
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	want := map[string]ControllerManagerWaits{
		"train": {RateLimiter: map[string]metrics.Tally{"DELETE": {Count: 100, Sum: 4}}, Queued: map[string]metrics.Tally{}, Work: map[string]metrics.Tally{"garbage_collector_attempt_to_delete": {Count: 50, Sum: 2}}},
		"hold":  {RateLimiter: map[string]metrics.Tally{"DELETE": {Count: 320, Sum: 16}}, Queued: map[string]metrics.Tally{}, Work: map[string]metrics.Tally{"garbage_collector_attempt_to_delete": {Count: 320, Sum: 16}}},
	}
	if !reflect.DeepEqual(m.phases, want) || len(warned) != 0 {
		t.Errorf("phases %+v, warnings %q; want %+v and none", m.phases, warned, want)
	}
}

// A reading that fails is said once and ends the metering: no phase gets
// figures from readings on either side of a gap.
func TestControllerManagerMeterStopsOnAFailedRead(t *testing.T) {
	n := 0
	e := &metrics.Endpoint{Job: "kube-controller-manager", Fetch: func(context.Context) ([]byte, error) {
		n++
		if n == 2 {
			return nil, errors.New("connection refused")
		}
		return cmText(float64(n), 1, 1, 1), nil
	}}
	var warned []string
	m := startControllerManagerMeter(context.Background(), e, func(ev progress.Event) { warned = append(warned, ev.Message) })
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	if m.phases != nil || n != 2 || len(warned) != 1 || !strings.Contains(warned[0], "kube-controller-manager /metrics: connection refused") {
		t.Errorf("phases %+v after %d reads, warnings %q; want none after 2, one naming the failure", m.phases, n, warned)
	}
	off := startControllerManagerMeter(context.Background(), nil, nil)
	off.phase(context.Background(), "train")
	if off.phases != nil {
		t.Errorf("no endpoint: phases %+v, want none", off.phases)
	}
}

// A reading whose totals went down (the controller-manager restarted) is
// not a difference: the phases before it keep their figures, it and the
// rest get none.
func TestControllerManagerMeterStopsOnAReset(t *testing.T) {
	readings := [][]byte{cmText(0, 0, 0, 0), cmText(100, 4, 50, 2), cmText(20, 1, 5, 1)}
	n := 0
	e := &metrics.Endpoint{Job: "kube-controller-manager", Fetch: func(context.Context) ([]byte, error) {
		n++
		return readings[n-1], nil
	}}
	var warned []string
	m := startControllerManagerMeter(context.Background(), e, func(ev progress.Event) { warned = append(warned, ev.Message) })
	m.phase(context.Background(), "train")
	m.phase(context.Background(), "hold")
	_, hold := m.phases["hold"]
	if m.phases["train"].RateLimiter["DELETE"] != (metrics.Tally{Count: 100, Sum: 4}) || hold || len(warned) != 1 || !strings.Contains(warned[0], "went down between two readings") {
		t.Errorf("phases %+v, warnings %q; want train's figures, no hold, one warning of the reset", m.phases, warned)
	}
}
