package workload

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
)

func TestParseHPASteps(t *testing.T) {
	tests := []struct {
		in      string
		want    []HPAStep
		wantErr string
	}{
		{in: "100m:60s,900m:120s,100m:2m", want: []HPAStep{{"100m", time.Minute}, {"900m", 2 * time.Minute}, {"100m", 2 * time.Minute}}},
		{in: " 1 : 90 ", want: []HPAStep{{"1", 90 * time.Second}}},
		{in: "1.5:1m30s", want: []HPAStep{{"1.5", 90 * time.Second}}},
		{in: "", wantErr: "--steps is empty"},
		{in: "100m", wantErr: `step 1 "100m" is not CPU:DURATION`},
		{in: "100m:60s,", wantErr: `step 2 "" is not CPU:DURATION`},
		{in: ":60s", wantErr: `step 1 ":60s" is not CPU:DURATION`},
		{in: "lots:60s", wantErr: `CPU "lots" is not a quantity`},
		{in: "0:60s", wantErr: `CPU "0" is not above zero`},
		{in: "-1:60s", wantErr: `CPU "-1" is not above zero`},
		{in: "100m:soon", wantErr: `duration "soon" is not a duration`},
		{in: "100m:0", wantErr: "duration 0s is out of range"},
		{in: "100m:500ms", wantErr: "duration 500ms is out of range"},
		{in: strings.Repeat("1:1s,", 100) + "1:1s", wantErr: "--steps has 101 steps: allowed are 1-100"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHPASteps(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseHPASteps(%q) = %v, %v; want error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("step %d = %v, want %v", i+1, got[i], tc.want[i])
				}
			}
			back, err := ParseHPASteps(FormatHPASteps(got))
			if err != nil || len(back) != len(got) {
				t.Errorf("FormatHPASteps does not read back: %q: %v", FormatHPASteps(got), err)
			}
		})
	}
}

func hpaTestOptions() HPAOptions {
	return HPAOptions{
		RunID: "hpa-1", Namespace: "gf-hpa", GPUsPerPod: 1, CPURequest: "1", MemoryRequest: "4Gi",
		TargetCPU: 50, MinReplicas: 1, MaxReplicas: 10, ScaleDownWindow: time.Minute,
		Steps: []HPAStep{{"100m", time.Minute}, {"900m", 2 * time.Minute}},
	}
}

func TestHPAOptionsCheck(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*HPAOptions)
		wantErr string
	}{
		{"defaults", func(*HPAOptions) {}, ""},
		{"target above 100 is allowed", func(o *HPAOptions) { o.TargetCPU = 250 }, ""},
		{"target 0", func(o *HPAOptions) { o.TargetCPU = 0 }, "--target-cpu 0 is out of range"},
		{"min 0", func(o *HPAOptions) { o.MinReplicas = 0 }, "--min-replicas 0 is out of range"},
		{"max below min", func(o *HPAOptions) { o.MinReplicas, o.MaxReplicas = 3, 2 }, "--max-replicas 2 is out of range: allowed are --min-replicas (3) to 1000"},
		{"max too many", func(o *HPAOptions) { o.MaxReplicas = 5000 }, "--max-replicas 5000 is out of range"},
		{"no GPU", func(o *HPAOptions) { o.GPUsPerPod = 0 }, "--gpus 0 is out of range"},
		{"window over the API's", func(o *HPAOptions) { o.ScaleDownWindow = 2 * time.Hour }, "--scale-down-window 2h0m0s is out of range"},
		{"window not whole seconds", func(o *HPAOptions) { o.ScaleUpWindow = 1500 * time.Millisecond }, "--scale-up-window 1.5s is out of range"},
		{"request not a quantity", func(o *HPAOptions) { o.CPURequest = "one" }, `--cpu-request "one" is not a quantity`},
		{"request zero", func(o *HPAOptions) { o.MemoryRequest = "0" }, `--memory-request "0" is out of range`},
		{"no steps", func(o *HPAOptions) { o.Steps = nil }, "--steps is empty"},
		{"namespace", func(o *HPAOptions) { o.Namespace = "GF_HPA" }, `--namespace "GF_HPA" is not a namespace name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := hpaTestOptions()
			tc.change(&o)
			err := o.Check()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestHPAObjects(t *testing.T) {
	o := hpaTestOptions()
	d := o.Deployment()
	if d.Name != "hpa-1" || *d.Spec.Replicas != 1 || d.Spec.Selector.MatchLabels[LabelRun] != "hpa-1" {
		t.Errorf("deployment %s replicas %d selector %v", d.Name, *d.Spec.Replicas, d.Spec.Selector.MatchLabels)
	}
	tmpl := d.Spec.Template
	if tmpl.Labels[LabelRun] != "hpa-1" || tmpl.Labels[LabelKind] != "hpa" {
		t.Errorf("template labels %v: want the run and kind labels", tmpl.Labels)
	}
	if got := tmpl.Annotations[fleet.AnnotationUsageCPU]; got != "100m" {
		t.Errorf("template starts at usage %q, want the first step's 100m", got)
	}
	c := tmpl.Spec.Containers[0]
	gpu, cpu, mem := c.Resources.Limits[fleet.ResourceGPU], c.Resources.Requests[corev1.ResourceCPU], c.Resources.Requests[corev1.ResourceMemory]
	if gpu.Value() != 1 || cpu.String() != "1" || mem.String() != "4Gi" {
		t.Errorf("container resources %+v: want 1 GPU, CPU request 1, memory 4Gi", c.Resources)
	}
	if tmpl.Spec.NodeSelector[fleet.LabelType] != "kwok" || len(tmpl.Spec.Tolerations) == 0 {
		t.Errorf("pods must land on fake nodes only: selector %v tolerations %v", tmpl.Spec.NodeSelector, tmpl.Spec.Tolerations)
	}

	h := o.HPA()
	ref := h.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("scale target %+v, want the Deployment", ref)
	}
	if *h.Spec.MinReplicas != 1 || h.Spec.MaxReplicas != 10 {
		t.Errorf("replicas %d-%d, want 1-10", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) != 1 {
		t.Fatalf("metrics %v, want one", h.Spec.Metrics)
	}
	m := h.Spec.Metrics[0]
	if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource.Name != corev1.ResourceCPU ||
		m.Resource.Target.Type != autoscalingv2.UtilizationMetricType || *m.Resource.Target.AverageUtilization != 50 {
		t.Errorf("metric %+v, want CPU utilisation 50%%", m)
	}
	if b := h.Spec.Behavior; *b.ScaleDown.StabilizationWindowSeconds != 60 || *b.ScaleUp.StabilizationWindowSeconds != 0 {
		t.Errorf("behavior windows up %d down %d, want 0 and 60", *b.ScaleUp.StabilizationWindowSeconds, *b.ScaleDown.StabilizationWindowSeconds)
	}
	if h.Labels[LabelRun] != "hpa-1" {
		t.Errorf("HPA labels %v", h.Labels)
	}
}

func TestHPAJudge(t *testing.T) {
	u := int32(90)
	h := &hpaRun{samples: []HPASample{
		{At: 10, Spec: 1, Running: 1, Desired: 1},
		{At: 25, Spec: 2, Running: 1, Desired: 2, Utilization: &u},
		{At: 27, Spec: 2, Running: 2, Desired: 2},
		{At: 40, Spec: 4, Running: 2, Desired: 4},
		{At: 42, Spec: 4, Running: 4, Desired: 4},
		{At: 70, Spec: 4, Running: 4, Desired: 4},
	}}
	sr := HPAStepResult{Start: 10, End: 70, From: 1, To: 4}
	h.judge(&sr, time.Time{})
	if sr.Direction != "up" || sr.FirstChange == nil || *sr.FirstChange != 15 || sr.Reached == nil || *sr.Reached != 32 || sr.Peak != 4 {
		t.Errorf("judged %+v (first %v reached %v): want up, first change 15s, reached 32s, peak 4", sr, sr.FirstChange, sr.Reached)
	}
	// A step down whose first change is the last step's scale-up going on.
	h.samples = []HPASample{
		{At: 100, Spec: 4, Running: 4, Desired: 4},
		{At: 105, Spec: 6, Running: 4, Desired: 6},
		{At: 107, Spec: 6, Running: 6, Desired: 6},
		{At: 150, Spec: 1, Running: 6, Desired: 1},
		{At: 152, Spec: 1, Running: 1, Desired: 1},
	}
	down := HPAStepResult{Start: 100, End: 190, From: 4, To: 1}
	h.judge(&down, time.Time{})
	if down.Direction != "down" || *down.FirstChange != 50 || *down.Reached != 52 || down.Peak != 6 {
		t.Errorf("judged %+v (first %v reached %v): want down, first change 50s, reached 52s, peak 6", down, *down.FirstChange, *down.Reached)
	}
	flat := HPAStepResult{Start: 10, End: 20, From: 1, To: 1}
	h.judge(&flat, time.Time{})
	if flat.Direction != "none" || flat.Reached != nil {
		t.Errorf("a step without change: %+v", flat)
	}
}
