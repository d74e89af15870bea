package tui

import (
	"github.com/ghostfleet/ghostfleet/metrics/poll"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// sloLevel is an SLO's live state, worst last.
type sloLevel int

const (
	sloNoData sloLevel = iota
	sloPass
	sloAtRisk
	sloBreached
)

// AtRiskAt is the fraction of its threshold from which an SLO shows as at
// risk: a warning before the breach, not an SLO of its own.
const AtRiskAt = 0.8

// sloHysteresis keeps a series at a line from flapping: a state is left
// only once the value is 10 % under the line that entered it (a breach
// ends at 90 % of the threshold, at risk at 72 %).
const sloHysteresis = 0.9

// nextLevel is the state after cur when the SLI is v against threshold.
// Breached is over the threshold (the SLO is p99 ≤ threshold).
func nextLevel(cur sloLevel, v, threshold float64) sloLevel {
	risk := AtRiskAt * threshold
	switch {
	case v > threshold:
		return sloBreached
	case cur == sloBreached && v > sloHysteresis*threshold:
		return sloBreached
	case v >= risk:
		return sloAtRisk
	case cur >= sloAtRisk && v >= sloHysteresis*risk:
		return sloAtRisk
	}
	return sloPass
}

// sloSLI is one SLO as the strip follows it: an API call latency class
// from the catalog, judged on the latest point of its SLI (the p99 over
// the last 5 minutes, the SLO's own window).
type sloSLI struct {
	id, name, short string
	threshold       float64 // scaled (Config.SLOScale)
	level           sloLevel
	value           float64
	scope           string // the worst series: "POST pods"
}

// sloClasses are the API call latency SLOs the strip follows, with the
// catalog's thresholds times scale.
func sloClasses(scale float64) []sloSLI {
	short := []string{"mut", "GET", "LIST ns", "LIST cl"}
	var out []sloSLI
	for i, c := range poll.SLOClasses {
		out = append(out, sloSLI{id: c.Query.ID, name: c.Name + " p99", short: short[i], threshold: c.Query.SLO.Threshold * scale})
	}
	return out
}

// observe judges the latest round of metrics: the alerts are the
// transitions into breach and out of it.
func (s *sloSLI) observe(m poll.MetricsView) (alert *report.Alert) {
	lat := m.API[s.id]
	v, ok := poll.Last(lat.Worst)
	if !ok {
		// No call of this class in the SLI's window: nothing to judge. A
		// breach ends with its calls.
		was := s.level
		s.level, s.value = sloNoData, 0
		if was == sloBreached {
			return &report.Alert{At: m.At, SLO: s.id, Name: s.name, Kind: report.AlertRecovered, Threshold: s.threshold, Scope: s.scope}
		}
		return nil
	}
	was := s.level
	s.level, s.value, s.scope = nextLevel(was, v, s.threshold), v, lat.Series
	switch {
	case s.level == sloBreached && was != sloBreached:
		return &report.Alert{At: m.At, SLO: s.id, Name: s.name, Kind: report.AlertBreached, Value: v, Threshold: s.threshold, Scope: s.scope}
	case was == sloBreached && s.level != sloBreached:
		return &report.Alert{At: m.At, SLO: s.id, Name: s.name, Kind: report.AlertRecovered, Value: v, Threshold: s.threshold, Scope: s.scope}
	}
	return nil
}

// podStartup is the pod startup SLO as the report judges it: on steady
// runs only (a burst's figure is shown, not judged), from the latest run
// that measured it.
type podStartup struct {
	run    string
	p99    float64
	judged bool
	level  sloLevel
}

func (p *podStartup) set(run string, p99 float64, judged bool, threshold float64) (alert *report.Alert) {
	was := p.level
	p.run, p.p99, p.judged = run, p99, judged
	if !judged {
		return nil // keeps the last steady run's state
	}
	p.level = nextLevel(sloPass, p99, threshold) // a run's own figure: no hysteresis across runs
	if p.level == sloBreached && was != sloBreached {
		return &report.Alert{SLO: "pod-startup-p99", Name: "pod startup p99", Kind: report.AlertBreached, Value: p99, Threshold: threshold, Scope: "steady run " + run}
	}
	if was == sloBreached && p.level != sloBreached {
		return &report.Alert{SLO: "pod-startup-p99", Name: "pod startup p99", Kind: report.AlertRecovered, Value: p99, Threshold: threshold, Scope: "steady run " + run}
	}
	return nil
}
