package workload

import (
	"testing"
	"time"
)

func TestReplayAccountingPerJobAndOverTheFleet(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	w := Arrivals{Jobs: []Arrival{
		{Name: "full", At: 0, Pods: 2, GPUsPerPod: 8},
		{Name: "partial", At: time.Second, Pods: 2, GPUsPerPod: 8},
		{Name: "none", At: 2 * time.Second, Pods: 1, GPUsPerPod: 8},
		{Name: "failed", At: 3 * time.Second, Pods: 1, GPUsPerPod: 8},
	}}
	created := map[string]time.Time{"r-full": at(0), "r-partial": at(1), "r-none": at(2)}
	pods := []PodTimes{
		{Group: "r-full", Node: "n0", Scheduled: at(0.5), Running: at(1)},
		{Group: "r-full", Node: "n1", Scheduled: at(1), Running: at(3)},
		{Group: "r-partial", Node: "n2", Scheduled: at(2), Running: at(2.5)},
		{Group: "r-partial"},
		{Group: "r-none"},
	}
	// n3 had 4 of its 8 GPUs used before the replay: fragmented all along.
	nodes := map[string]nodeGPUs{"n0": {total: 8}, "n1": {total: 8}, "n2": {total: 8}, "n3": {total: 8, used: 4}}
	res := replayAccounting(ReplayResult{}, w, "r", pods, created, nodes, at(0), at(5))

	if res.JobsStarted != 1 || res.JobsPartial != 1 || res.JobsWaiting != 1 {
		t.Fatalf("started %d partial %d waiting %d, want 1 1 1", res.JobsStarted, res.JobsPartial, res.JobsWaiting)
	}
	want := []ReplayJob{
		{Name: "full", Pods: 2, GPUsPerPod: 8, Started: JobFull, Running: 2, StartSeconds: 3, GangWaitSeconds: 2.5},
		{Name: "partial", At: 1, Pods: 2, GPUsPerPod: 8, Started: JobPartial, Running: 1, GangWaitSeconds: 3},
		{Name: "none", At: 2, Pods: 1, GPUsPerPod: 8, Started: JobNone},
		{Name: "failed", At: 3, Pods: 1, GPUsPerPod: 8, Started: JobNotCreated},
	}
	for i, j := range res.JobResults {
		if j != want[i] {
			t.Errorf("job %d: %+v, want %+v", i, j, want[i])
		}
	}
	// full: n0 from 0.5 to 3, n1 from 1 to 3 (4.5 s × 8); partial: n2 from 2 to the end (3 s × 8).
	if res.PartialGPUSeconds != 60 || res.StrandedGPUs != 8 || res.PeakPartialGPUs != 24 {
		t.Errorf("partial %.1f GPU·s, stranded %d, peak %d; want 60, 8, 24", res.PartialGPUSeconds, res.StrandedGPUs, res.PeakPartialGPUs)
	}
	if res.StartLatency.Max != 3 || res.GangWait.Max != 2.5 {
		t.Errorf("start %+v gang wait %+v", res.StartLatency, res.GangWait)
	}
	if res.FleetGPUs != 32 || len(res.Occupancy) != 6 {
		t.Fatalf("fleet %d GPUs, %d samples; want 32, 6 (0…5 s)", res.FleetGPUs, len(res.Occupancy))
	}
	for i, p := range []OccupancyPoint{{0, 4, 4}, {1, 20, 4}, {2, 28, 4}, {3, 28, 4}, {4, 28, 4}, {5, 28, 4}} {
		if res.Occupancy[i] != p {
			t.Errorf("second %d: %+v, want %+v", i, res.Occupancy[i], p)
		}
	}
	if res.FragmentedGPUs != 4 || res.EndOccupancy != 28.0/32 {
		t.Errorf("fragmented %d, end occupancy %.3f", res.FragmentedGPUs, res.EndOccupancy)
	}
}
