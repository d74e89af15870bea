package runs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func TestBinpackResultJSON(t *testing.T) {
	res := BinpackResult{
		Run: Run{ID: "binpack-1", Kind: "binpack", Dir: "results/binpack-1", Outcome: AllScheduled},
		BinpackResult: workload.BinpackResult{
			Fill: 0.95, TotalGPUs: 800, TargetGPUs: 760, Pods: 300, Occupancy: 0.9, StrandedForWholeNode: 24,
			UnschedulableBySize: map[int]int{8: 3, 4: 1},
		},
	}
	data := topLevel(t, res, map[string]any{
		"id": "binpack-1", "kind": "binpack", "dir": "results/binpack-1", "outcome": "all scheduled",
		"pods": 300.0, "totalGpus": 800.0, "strandedForWholeNode": 24.0,
	})
	var back BinpackResult
	if err := json.Unmarshal(data, &back); err != nil || back.Run != res.Run || back.Pods != 300 || back.UnschedulableBySize[8] != 3 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got, want := res.Summary(), "all scheduled: 300 pods, occupancy 90.0% of 95%, 4 unschedulable, 24 GPUs stranded"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestBinpackOptionsValidate(t *testing.T) {
	dgx := workload.Capacity{FakeNodes: 100, TotalGPUs: 800, FreeGPUs: 800, MaxNodeGPUs: 8}
	o := NewBinpackOptions()
	if err := o.Validate(dgx); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if len(o.Mix) != 4 || o.Mix[1] != 40 || o.Mix[8] != 10 {
		t.Errorf("default mix %v", o.Mix)
	}
	tests := []struct {
		name string
		edit func(*BinpackOptions)
		want string
	}{
		{"fill 0", func(o *BinpackOptions) { o.Fill = 0 }, "fill 0 is out of range: allowed are more than 0 and at most 1 (e.g. 0.95)"},
		{"fill past full", func(o *BinpackOptions) { o.Fill = 1.5 }, "fill 1.5 is out of range: allowed are more than 0 and at most 1 (e.g. 0.95)"},
		{"rate 0", func(o *BinpackOptions) { o.Rate = 0 }, "rate 0 is out of range: allowed are more than 0 and at most 5000 pods/s"},
		{"timeout 0", func(o *BinpackOptions) { o.Timeout = 0 * time.Second }, "timeout 0s is out of range: it must be more than 0"},
		{"size past the node", func(o *BinpackOptions) { o.Mix = map[int]int{16: 1} }, "mix size 16 GPUs is more than any node has (largest: 8)"},
		{"no mix", func(o *BinpackOptions) { o.Mix = nil }, "the mix is empty: it needs at least one pod size (e.g. 1:40,2:30,4:20,8:10)"},
		{"a narrowed claim", func(o *BinpackOptions) { o.Claim = "nvlink" }, `--claim "nvlink" is not a claim binpack takes: allowed are none, count (a fill counts every GPU of the fleet)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewBinpackOptions()
			tc.edit(&o)
			if got := errorText(o.Validate(dgx)); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
	// On a fleet of DRA nodes a fill asks for devices unless told
	// otherwise, and nvidia.com/gpu, which no node offers, is refused...
	dra := workload.Capacity{FakeNodes: 100, Devices: 800, FreeDevices: 800, MaxNodeDevices: 8}
	o = NewBinpackOptions()
	if err := o.Validate(dra); err != nil || o.Claim != workload.ClaimCount {
		t.Errorf("DRA fleet, no claim: claim %q, error %v; want count and none", o.Claim, err)
	}
	o = NewBinpackOptions()
	o.Claim = workload.ClaimNone
	if err := o.Validate(dra); !strings.Contains(errorText(err), "offer their GPUs through DRA") {
		t.Errorf("DRA fleet, --claim none: error %q", errorText(err))
	}
	// Unless a DeviceClass serves nvidia.com/gpu from the devices.
	dra.ServesExtended = true
	o = NewBinpackOptions()
	o.Claim = workload.ClaimNone
	if err := o.Validate(dra); err != nil {
		t.Errorf("DRA fleet serving nvidia.com/gpu, --claim none: %v", err)
	}
	o = NewBinpackOptions()
	o.Claim = workload.ClaimCount
	if err := o.Validate(dgx); !strings.Contains(errorText(err), "the fleet publishes no GPU devices") {
		t.Errorf("extended fleet, --claim count: error %q", errorText(err))
	}
	for mix, want := range map[string]string{
		"1:40,x": `mix entry "x" is not SIZE:WEIGHT with SIZE ≥ 1 GPU and WEIGHT ≥ 0 (e.g. 1:40,2:30,4:20,8:10)`,
		"1:0":    `mix "1:0" has no weight`,
	} {
		if _, err := workload.ParseMix(mix); errorText(err) != want {
			t.Errorf("mix %q: error %q, want %q", mix, errorText(err), want)
		}
	}
}
