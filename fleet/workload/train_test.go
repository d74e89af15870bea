package workload

import (
	"strings"
	"testing"
	"time"
)

func TestTrainAccounting(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	created := map[string]time.Time{"a": at(0), "b": at(0), "c": at(0)}
	pods := []PodTimes{
		// Job a: both pods bound at 1s, running at 2s and 4s: started at 4s.
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(2)},
		{Group: "a", Created: at(0), Scheduled: at(1), Running: at(4)},
		// Job b: one pod runs from 2s, the other never binds: partial.
		{Group: "b", Created: at(0), Scheduled: at(2), Running: at(2)},
		{Group: "b", Created: at(0)},
		// Job c: nothing bound.
		{Group: "c", Created: at(0)},
		{Group: "c", Created: at(0)},
	}
	res := trainAccounting(TrainResult{Jobs: 3, PodsPerJob: 2, GPUsPerPod: 8}, pods, created, at(10))
	if res.JobsStarted != 1 || res.JobsPartial != 1 || res.JobsWaiting != 1 {
		t.Errorf("jobs started/partial/waiting %d/%d/%d, want 1/1/1", res.JobsStarted, res.JobsPartial, res.JobsWaiting)
	}
	if res.StartLatency.Count != 1 || res.StartLatency.P50 != 4 {
		t.Errorf("start latency %+v, want one job at 4s", res.StartLatency)
	}
	// a: 2 pods × 3s × 8 GPUs = 48; b: 1 pod × 8s × 8 = 64.
	if res.PartialGPUSeconds != 112 {
		t.Errorf("partial GPU-seconds %v, want 112", res.PartialGPUSeconds)
	}
	if res.PeakPartialGPUs != 24 || res.StrandedGPUs != 8 {
		t.Errorf("peak %d, stranded %d; want 24 (a's 16 + b's 8 from 2s to 4s), 8", res.PeakPartialGPUs, res.StrandedGPUs)
	}
}

func TestTrainOptionsValidate(t *testing.T) {
	c := Capacity{FakeNodes: 10, FreeGPUs: 80, MaxNodeGPUs: 8}
	bad := []struct {
		o    TrainOptions
		want string
	}{
		{TrainOptions{Jobs: 0, PodsPerJob: 2, GPUsPerPod: 8, Timeout: time.Minute}, "job count 0"},
		{TrainOptions{Jobs: 1, PodsPerJob: 0, GPUsPerPod: 8, Timeout: time.Minute}, "pods per job 0"},
		{TrainOptions{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 9, Timeout: time.Minute}, "GPUs per pod 9 is out of range: allowed are 1-8"},
		{TrainOptions{Jobs: 1, PodsPerJob: 2, GPUsPerPod: 8}, "timeout 0s"},
	}
	for _, tt := range bad {
		if _, err := tt.o.Validate(c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
	o := TrainOptions{Jobs: 6, PodsPerJob: 2, GPUsPerPod: 8, Timeout: time.Minute}
	if w, err := o.Validate(c); err != nil || len(w) != 1 || !strings.Contains(w[0], "need 96 GPUs; 80 are free") {
		t.Errorf("over capacity: %v, %v", w, err)
	}
}

func TestBinpackSizesAndMix(t *testing.T) {
	mix, err := ParseMix("1:40, 2:30,4:20,8:10")
	if err != nil {
		t.Fatal(err)
	}
	o := BinpackOptions{Mix: mix, Seed: 7}
	sizes := o.Sizes(7600)
	var sum int
	count := map[int]int{}
	for _, s := range sizes {
		sum += s
		count[s]++
	}
	if sum != 7600 {
		t.Errorf("sizes add up to %d, want exactly 7600", sum)
	}
	if count[1] < count[8] || count[2] < count[8] {
		t.Errorf("size counts %v do not follow the 40/30/20/10 mix", count)
	}
	again := o.Sizes(7600)
	if len(again) != len(sizes) || again[0] != sizes[0] || again[len(again)-1] != sizes[len(sizes)-1] {
		t.Error("the same seed drew different sizes")
	}
	for _, bad := range []string{"", "1", "x:3", "0:5", "2:-1", "1:0,2:0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
}

func TestBinpackAccounting(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A 10-GPU fleet: pods of 4, 4, 1 bound in turn; a 2-GPU pod never fits.
	pods := []PodTimes{
		{Group: "4", Created: at(0), Scheduled: at(10)},
		{Group: "4", Created: at(100), Scheduled: at(120)},
		{Group: "1", Created: at(200), Scheduled: at(250)},
		{Group: "2", Created: at(300)},
	}
	res := binpackAccounting(BinpackResult{}, pods, 10, 0)
	if res.ScheduledGPUs != 9 || res.Occupancy != 0.9 || res.UnschedulableBySize[2] != 1 {
		t.Errorf("result %+v", res)
	}
	// Bound at 0% (first), 40% (second) and 80% (third) occupancy.
	want := map[string]float64{"0-10%": 0.010, "40-50%": 0.020, "80-90%": 0.050}
	if len(res.Deciles) != 3 {
		t.Fatalf("deciles %+v", res.Deciles)
	}
	for _, d := range res.Deciles {
		if w, ok := want[d.Occupancy]; !ok || d.Latency.P50 != w {
			t.Errorf("decile %s latency %v, want %v", d.Occupancy, d.Latency.P50, w)
		}
	}
}
