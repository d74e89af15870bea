package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

func TestNextLevelHasHysteresis(t *testing.T) {
	names := map[sloLevel]string{sloNoData: "no data", sloPass: "pass", sloAtRisk: "at risk", sloBreached: "breached"}
	tests := []struct {
		name   string
		values []float64 // the SLI, round after round, against a 1s threshold
		want   []sloLevel
	}{
		{"pass, at risk, breached, recovered", []float64{0.2, 0.85, 1.6, 0.5},
			[]sloLevel{sloPass, sloAtRisk, sloBreached, sloPass}},
		{"at the line: one breach, no flapping", []float64{0.99, 1.01, 0.99, 1.02, 0.95, 1.01},
			[]sloLevel{sloAtRisk, sloBreached, sloBreached, sloBreached, sloBreached, sloBreached}},
		{"a breach ends under 90 %", []float64{1.2, 0.91, 0.9, 0.95},
			[]sloLevel{sloBreached, sloBreached, sloAtRisk, sloAtRisk}},
		{"at risk ends under 72 %", []float64{0.8, 0.78, 0.73, 0.71, 0.79},
			[]sloLevel{sloAtRisk, sloAtRisk, sloAtRisk, sloPass, sloPass}},
		{"the threshold itself passes", []float64{1.0}, []sloLevel{sloAtRisk}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sloNoData
			var got, want []string
			for i, v := range tt.values {
				l = nextLevel(l, v, 1)
				got, want = append(got, names[l]), append(want, names[tt.want[i]])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("levels %v, want %v", got, want)
			}
		})
	}
}

// metricsAt is a round whose mutating SLI's latest point is v (or none).
func metricsAt(at time.Time, v ...float64) poll.MetricsView {
	m := poll.MetricsView{At: at, Window: 15 * time.Minute, Step: 15 * time.Second, API: map[string]poll.APILatency{}}
	if len(v) > 0 {
		m.API["sli-mutating-p99"] = poll.APILatency{Worst: v, Series: "POST pods", Of: 3}
	}
	return m
}

// The strip logs a breach and its recovery once each, names the run in
// progress, and keeps them for its record; what happens with no run in
// progress waits for the next snapshot.
func TestStripAlertsGoToTheirRuns(t *testing.T) {
	s := newSLOStrip(&shared{th: NewTheme(false)}, 1)
	load := &run{id: 1, name: "load 8000×1"}
	t0 := time.Date(2026, 11, 29, 9, 42, 10, 0, time.Local)
	var alerts []report.Alert
	for i, v := range []float64{0.2, 0.9, 1.6, 1.05, 0.5} {
		alerts = append(alerts, s.observe(metricsAt(t0.Add(time.Duration(i)*5*time.Second), 0.1, v), []*run{load})...)
	}
	if len(alerts) != 2 || alerts[0].Kind != report.AlertBreached || alerts[1].Kind != report.AlertRecovered {
		t.Fatalf("alerts %+v, want a breach then a recovery", alerts)
	}
	if got := alerts[0].Text(); got != "09:42:20 mutating p99 POST pods 1.6s > 1s during load 8000×1" {
		t.Errorf("breach logged as %q", got)
	}
	if lines := strings.Join(s.alertLines(80, 4), "\n"); !strings.Contains(lines, "✓ 09:42:30") || !strings.Contains(lines, "✗ 09:42:20") {
		t.Errorf("activity lines:\n%s", lines)
	}
	if len(s.alerts.byRun[1]) != 2 || len(s.alerts.loose) != 0 {
		t.Errorf("kept %d for the load, %d loose", len(s.alerts.byRun[1]), len(s.alerts.loose))
	}
	// The run ends; the next breach has no run: it waits for a snapshot.
	load.finished, load.outcome = true, Outcome{Dir: t.TempDir() + "/load-20261129-094200"}
	if cmd := s.alerts.finished(load); cmd == nil {
		t.Error("a finished run with alerts writes none")
	}
	s.observe(metricsAt(t0.Add(time.Minute), 2), []*run{load})
	if len(s.alerts.loose) != 1 || s.alerts.recent[len(s.alerts.recent)-1].Run != "" {
		t.Errorf("a breach with no run in progress: loose %+v", s.alerts.loose)
	}
	snap := &run{id: 2, name: "snapshot 15m", finished: true, outcome: Outcome{Dir: t.TempDir()}}
	snap.outcome.Dir += "/snapshot-20261129-094400"
	if cmd := s.alerts.finished(snap); cmd == nil || len(s.alerts.loose) != 0 {
		t.Errorf("the snapshot did not take the loose alerts: %+v", s.alerts.loose)
	}
	// No calls of the class any more: the breach ends with them.
	if as := s.observe(metricsAt(t0.Add(2*time.Minute)), nil); len(as) != 1 || as[0].Kind != report.AlertRecovered {
		t.Errorf("calls stopped during a breach: %+v", as)
	}
	// A failed round judges nothing.
	failed := metricsAt(t0.Add(3*time.Minute), 5)
	failed.Err = "connection refused"
	if as := s.observe(failed, nil); len(as) != 0 {
		t.Errorf("a failed round raised %+v", as)
	}
}

func TestStripFitsEveryWidth(t *testing.T) {
	s := newSLOStrip(&shared{th: NewTheme(false)}, 1)
	s.observe(metricsAt(time.Now(), 0.85), nil)
	s.startup.set("load 400×1", 2.1, true, report.PodStartupThreshold)
	for _, w := range []int{80, 120, 160} {
		s.SetSize(w, 1)
		v := s.View()
		if got := len([]rune(v)); got != w {
			t.Errorf("%d wide: the strip is %d cells: %q", w, got, v)
		}
		if !strings.Contains(v, "▲") || !strings.Contains(v, "2.1s") {
			t.Errorf("%d wide: the strip does not say at risk, or the startup figure: %q", w, v)
		}
	}
	if s.SetSize(160, 1); !strings.Contains(s.View(), "mutating 850ms/1s AT RISK") {
		t.Errorf("160 wide: %q", s.View())
	}
	// The scale (tests only) scales the thresholds the strip judges by.
	scaled := newSLOStrip(&shared{th: NewTheme(false)}, 0.01)
	if as := scaled.observe(metricsAt(time.Now(), 0.02), nil); len(as) != 1 || as[0].Threshold != 0.01 {
		t.Errorf("scaled 0.01: %+v", as)
	}
}

func TestPodStartupJudgedOnSteadyRunsOnly(t *testing.T) {
	var p podStartup
	if a := p.set("load 8000×1", 9, false, 5); a != nil || p.level != sloNoData {
		t.Errorf("a burst was judged: %+v level %d", a, p.level)
	}
	if a := p.set("load 400×1", 6, true, 5); a == nil || a.Kind != report.AlertBreached || p.level != sloBreached {
		t.Errorf("a steady 6s: %+v level %d", a, p.level)
	}
	if a := p.set("load 400×1", 4.6, true, 5); a == nil || a.Kind != report.AlertRecovered {
		t.Errorf("the next steady run's own figure decides: %+v level %d", a, p.level)
	}
}

// A breach during a load after a fault: the strip, the alert in the
// activity pane and the marks on the charts' axis, small and large.
func TestGoldenFrameSLOBreach(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := New(testConfig(false))
			m.setSize(sz.w, sz.h)
			m.Update(fleetMsg(sampleFleet(100)))
			m.activity.runs = []*run{
				{id: 1, name: "fault gpu-xid", started: epoch.Add(-9 * time.Minute), ended: epoch.Add(-530 * time.Second), finished: true, progress: -1,
					outcome: Outcome{Summary: "Xid 79 on 5 nodes", Dir: "results/fault-20261129-1151"}},
				{id: 2, name: "load 8000×1", started: epoch.Add(-4 * time.Minute), progress: 0.6, message: "creating: 4,800 of 8,000 pods"},
			}
			met := sampleMetrics()
			lat := met.API["sli-mutating-p99"]
			lat.Worst = append(append([]float64{}, lat.Worst...), 0.9, 1.6)
			met.API["sli-mutating-p99"] = lat
			prev := met
			prev.At = epoch.Add(-5 * time.Second)
			prev.API = map[string]poll.APILatency{"sli-mutating-p99": {Worst: lat.Worst[:len(lat.Worst)-1], Series: "POST pods", Of: 2},
				"sli-read-single-p99": met.API["sli-read-single-p99"]}
			m.Update(metricsMsg(prev))
			m.Update(metricsMsg(met))
			golden(t, fmt.Sprintf("plain-%dx%d-slo-breach", sz.w, sz.h), m.View())
		})
	}
}

// An alert wrapped into the activity pane fits its width on every line:
// the box cuts a wider line with "…", and a long series name (PATCH
// nodes/status) lost "oad" of "during load 600×1" that way.
func TestAlertLinesFitThePane(t *testing.T) {
	s := newSLOStrip(&shared{th: NewTheme(false)}, 1)
	load := &run{id: 1, name: "load 600×1"}
	t0 := time.Date(2026, 12, 1, 22, 8, 49, 0, time.Local)
	m := metricsAt(t0, 0.1, 1.6)
	m.API["sli-mutating-p99"] = poll.APILatency{Worst: []float64{0.1, 1.6}, Series: "PATCH nodes/status", Of: 8}
	s.observe(m, []*run{load})
	for _, w := range []int{20, 34, 36, 50} {
		lines := s.alertLines(w, 4)
		if len(lines) == 0 {
			t.Fatalf("width %d: no alert lines", w)
		}
		for _, l := range lines {
			if got := ansi.StringWidth(l); got > w {
				t.Errorf("width %d: line %q is %d wide", w, l, got)
			}
		}
	}
}
