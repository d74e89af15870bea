package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// AlertsFile is the file a run folder keeps the console's SLO alerts in:
// the breaches and recoveries seen while the run was in progress (or, in
// a snapshot's folder, seen while no run was).
const AlertsFile = "alerts.json"

// Alert kinds.
const (
	AlertBreached  = "breached"
	AlertRecovered = "recovered"
	// A component's process went down, or came back (Value: seconds it
	// was down); SLO is "component", Name the component.
	AlertDown = "down"
	AlertBack = "back"
)

// Alert is one SLO state change the console saw live.
type Alert struct {
	At   time.Time `json:"at"`
	SLO  string    `json:"slo"`  // the catalog query's ID, or pod-startup-p99
	Name string    `json:"name"` // how the console calls it: "mutating p99"
	Kind string    `json:"kind"` // breached, recovered
	// Value is the SLI when the state changed, against Threshold, in
	// seconds; Scope the series it came from ("POST pods") when the
	// series says.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Scope     string  `json:"scope,omitempty"`
	// Run names the runs in progress then, as the console named them.
	Run string `json:"run,omitempty"`
}

// Good says the alert is a return to health: a recovery, a component back.
func (a Alert) Good() bool { return a.Kind == AlertRecovered || a.Kind == AlertBack }

// Text is the alert as the console logs it: "09:42:10 mutating p99 POST
// pods 1.6s > 1s during load 8000×1".
func (a Alert) Text() string {
	s := a.At.Format("15:04:05") + " " + a.Name // in the zone it was seen in
	switch a.Kind {
	case AlertDown:
		s += " down"
		if a.Run != "" {
			s += " during " + a.Run
		}
		return s
	case AlertBack:
		return s + fmt.Sprintf(" back after %.0fs", a.Value)
	}
	if a.Scope != "" {
		s += " " + a.Scope
	}
	if a.Kind == AlertRecovered {
		s += fmt.Sprintf(" %s ≤ %s again", Seconds(a.Value), Seconds(a.Threshold))
	} else {
		s += fmt.Sprintf(" %s > %s", Seconds(a.Value), Seconds(a.Threshold))
	}
	if a.Run != "" {
		s += " during " + a.Run
	}
	return s
}

// Seconds writes an SLI as people read it: 1s, 1.6s, 850ms.
func Seconds(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0fs", v)
	case v >= 1:
		return fmt.Sprintf("%.2gs", v)
	default:
		return fmt.Sprintf("%.0fms", v*1000)
	}
}

// WriteAlerts adds alerts to dir's alerts.json.
func WriteAlerts(dir string, alerts []Alert) error {
	old, err := ReadAlerts(dir)
	if err != nil {
		return err
	}
	return record.WriteJSON(dir, AlertsFile, dedupe(append(old, alerts...)))
}

// ReadAlerts reads dir's alerts.json; a folder without one has none.
func ReadAlerts(dir string) ([]Alert, error) {
	data, err := os.ReadFile(filepath.Join(dir, AlertsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var as []Alert
	if err := json.Unmarshal(data, &as); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", filepath.Join(dir, AlertsFile), err)
	}
	return as, nil
}

// AlertsIn gathers the alerts of every folder under root (runs and
// snapshots) that happened within w, oldest first. An alert seen during
// two runs at once is in both folders and listed once.
func AlertsIn(root string, w Window) ([]Alert, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", AlertsFile))
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, f := range files {
		as, err := ReadAlerts(filepath.Dir(f))
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			if !a.At.Before(w.Start) && !a.At.After(w.End) {
				out = append(out, a)
			}
		}
	}
	return dedupe(out), nil
}

func dedupe(as []Alert) []Alert {
	slices.SortStableFunc(as, func(a, b Alert) int { return a.At.Compare(b.At) })
	return slices.CompactFunc(as, func(a, b Alert) bool {
		return a.At.Equal(b.At) && a.SLO == b.SLO && a.Kind == b.Kind && a.Scope == b.Scope
	})
}

// PodStartup is a run record's pod startup figure as the pod startup
// verdict judges it: pod_startup p99 of a steady load (judged), or of a
// burst (measured, not judged: the SLO is defined for steady state).
func PodStartup(r record.Record) (p99 float64, judged, ok bool) {
	f, ok := startupOf(r)
	return f.P99, f.Steady, ok
}
