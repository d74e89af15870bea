package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJudgeAB(t *testing.T) {
	lower := func(a, b, slack float64) ABMetric {
		return ABMetric{ID: "m", A: a, B: b, HasA: true, HasB: true, Better: Lower, Judged: true, Slack: slack}
	}
	higher := func(a, b float64) ABMetric {
		return ABMetric{ID: "jobs", A: a, B: b, HasA: true, HasB: true, Better: Higher, Judged: true}
	}
	tests := []struct {
		name      string
		ms        []ABMetric
		threshold float64
		verdict   string
		statuses  []string
	}{
		{"equal", []ABMetric{lower(10, 10, 0)}, 0.1, ABSame, []string{ABSame}},
		{"within the threshold", []ABMetric{lower(10, 10.9, 0)}, 0.1, ABSame, []string{ABSame}},
		{"past the threshold", []ABMetric{lower(10, 11.5, 0)}, 0.1, ABWorse, []string{ABWorse}},
		{"past the threshold, within the slack", []ABMetric{lower(1, 1.8, 1)}, 0.1, ABSame, []string{ABSame}},
		{"better", []ABMetric{lower(10, 5, 0)}, 0.1, ABBetter, []string{ABBetter}},
		{"fewer jobs started is worse", []ABMetric{higher(10, 8)}, 0.1, ABWorse, []string{ABWorse}},
		{"more jobs started is better", []ABMetric{higher(6, 10)}, 0.1, ABBetter, []string{ABBetter}},
		{"from zero, any rise is past a 0 slack", []ABMetric{lower(0, 1, 0)}, 0.5, ABWorse, []string{ABWorse}},
		{"one worse outweighs one better", []ABMetric{higher(6, 10), lower(10, 20, 0)}, 0.1, ABWorse, []string{ABBetter, ABWorse}},
		{"an unjudged metric never decides", []ABMetric{{A: 1, B: 100, HasA: true, HasB: true, Better: Lower}}, 0.1, ABSame, []string{ABWorse}},
		{"no data is not judged", []ABMetric{{A: 1, HasA: true, Better: Lower, Judged: true}}, 0.1, ABSame, []string{ABNoData}},
		{"threshold 0", []ABMetric{lower(10, 10.01, 0)}, 0, ABWorse, []string{ABWorse}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, verdict := JudgeAB(tt.ms, tt.threshold)
			if verdict != tt.verdict {
				t.Errorf("verdict %s, want %s", verdict, tt.verdict)
			}
			for i, m := range ms {
				if m.Status != tt.statuses[i] {
					t.Errorf("metric %d: %s, want %s", i, m.Status, tt.statuses[i])
				}
			}
		})
	}
}

func TestWriteABWritesOnePage(t *testing.T) {
	dir := t.TempDir()
	ms, verdict := JudgeAB([]ABMetric{{ID: "jobs", Title: "jobs fully started", A: 2, B: 6, HasA: true, HasB: true, Better: Higher, Judged: true}}, 0.1)
	r := ABReport{State: "before-ab", Workload: "jobs.yaml", Threshold: 0.1, Verdict: verdict, Metrics: ms,
		A: ABSide{Profile: "default", Replay: "/r/replay-1", Occupancy: [][3]float64{{0, 10, 4}, {1, 50, 4}}},
		B: ABSide{Profile: "gang", Replay: "/r/replay-2", Occupancy: [][3]float64{{0, 10, 4}, {1, 60, 0}}},
		Jobs: []ABJob{{Name: "job-0001", At: 2.5, Pods: 3, GPUsPerPod: 8,
			A: ABJobSide{Started: "partial", Running: 1}, B: ABJobSide{Started: "none"}}}}
	if err := WriteAB(dir, r); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A/B: default (A) vs gang (B)", "Verdict: B is better than A", "jobs fully started", "replay-2", "<polyline class=\"b\"",
		"job-0001", "partial: 1 of 3 pods running", "none (waiting)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
