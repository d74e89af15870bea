package runs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func TestABOptionsCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(good, []byte("version: 1\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\njobs:\n- {at: 0, pods: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*ABOptions)
		want string
	}{
		{"no state", func(o *ABOptions) { o.State = "" }, "--state is missing"},
		{"no workload", func(o *ABOptions) { o.Workload = "" }, "--workload is missing"},
		{"a workload that is not there", func(o *ABOptions) { o.Workload = filepath.Join(dir, "none.yaml") }, "none.yaml"},
		{"a workload with errors", func(o *ABOptions) { o.Workload = bad }, "bad.yaml:3: jobs[0].gpusPerPod: missing"},
		{"unknown profile", func(o *ABOptions) { o.B = "tunde" }, `--b: unknown profile "tunde"`},
		{"profile file not there", func(o *ABOptions) { o.A = "./mine.yaml" }, "--a: "},
		{"negative threshold", func(o *ABOptions) { o.Threshold = -1 }, "--threshold -1 is out of range"},
		{"unknown metric", func(o *ABOptions) { o.Judge = []string{"speed"} }, `--judge "speed" is not a metric`},
		{"timeout", func(o *ABOptions) { o.Timeout = 0 }, "--timeout 0s is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewABOptions()
			o.State, o.Workload = "before-ab", good
			tt.edit(&o)
			if _, _, err := o.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	o := NewABOptions()
	o.State, o.Workload = "before-ab", good
	if _, ps, err := o.Check(); err != nil || ps[0].Name != "default" || ps[1].Name != "tuned" {
		t.Fatalf("good options: %v, profiles %s %s", err, ps[0].Name, ps[1].Name)
	}
}

func TestABRefusesAnUnknownStateBeforeAnyFleet(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(w, []byte("version: 1\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := NewABOptions()
	o.State, o.Workload = "nowhere", w
	_, err := AB(context.Background(), Env{Target: fleet.Own("gf-ab-unit"), ResultsDir: dir}, o)
	if err == nil || !strings.Contains(err.Error(), `no saved state "nowhere"`) {
		t.Fatalf("error %v", err)
	}
}

func TestABMetricsJudgeWhatTheyAreTold(t *testing.T) {
	a := workload.ReplayResult{JobsStarted: 2, JobsPartial: 3, PartialGPUSeconds: 500, FragmentedGPUs: 12, StartLatency: workload.Percentiles{P99: 4}}
	b := workload.ReplayResult{JobsStarted: 5, PartialGPUSeconds: 10, FragmentedGPUs: 0, StartLatency: workload.Percentiles{P99: 6}}
	ms := ABMetrics(a, b, nil)
	var judged []string
	for _, m := range ms {
		if m.Judged {
			judged = append(judged, m.ID)
		}
	}
	if !slices.Equal(judged, DefaultJudged) {
		t.Fatalf("judged %v, want %v", judged, DefaultJudged)
	}
	got, verdict := report.JudgeAB(ms, 0.1)
	// Every job started (5 vs 2) and nothing stranded, but the slowest
	// job took 6 s against 4 s: past 10% + 1 s, so B is worse.
	if verdict != report.ABWorse {
		t.Fatalf("verdict %s", verdict)
	}
	for _, m := range got {
		if m.ID == "cpu-per-pod" && m.Status != report.ABNoData {
			t.Errorf("CPU without figures: %s", m.Status)
		}
	}
	if _, v := report.JudgeAB(ABMetrics(a, b, []string{"jobs-started", "partial-gpu-seconds"}), 0.1); v != report.ABBetter {
		t.Fatalf("judging only jobs and partial GPU-seconds: %s, want better", v)
	}
}

func TestRenderABFromItsRecord(t *testing.T) {
	dir := t.TempDir()
	a := workload.ReplayResult{JobsStarted: 2, JobsPartial: 1, PartialGPUSeconds: 500, StartLatency: workload.Percentiles{P99: 4},
		JobResults: []workload.ReplayJob{{Name: "job-<0>", Pods: 2, GPUsPerPod: 8}}}
	b := workload.ReplayResult{JobsStarted: 3, StartLatency: workload.Percentiles{P99: 6},
		JobResults: []workload.ReplayJob{{Name: "job-<0>", Pods: 2, GPUsPerPod: 8}}}
	o := NewABOptions()
	o.A, o.B = "default", "gang"
	res := ABResult{A: ABSide{Profile: "default", Result: a}, B: ABSide{Profile: "gang", Result: b, Snapshot: "/elsewhere/snapshot-x"}}
	res.Metrics, res.Verdict = report.JudgeAB(ABMetrics(a, b, nil), 0.1)
	if err := record.WriteJSON(dir, "run.json", record.Record{Kind: KindAB, Params: o, Result: res}); err != nil {
		t.Fatal(err)
	}
	file, err := RenderAB(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worse on start-p99", "job-&lt;0&gt;", "feature gates GangScheduling=true"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("re-rendered report lacks %q", want)
		}
	}
	// Report on the folder re-renders it; a folder of another kind is refused.
	if _, err := Report(context.Background(), Env{ResultsDir: dir}, ReportOptions{Snapshot: dir}); err != nil {
		t.Errorf("report on an ab folder: %v", err)
	}
	other := t.TempDir()
	if err := record.WriteJSON(other, "run.json", record.Record{Kind: "train"}); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderAB(other); err == nil || !strings.Contains(err.Error(), "holds a train run, not an A/B run") {
		t.Errorf("RenderAB of a train folder: %v", err)
	}
}
