package tui

import "strings"

// etcdAlarmCell leads the SLO strip while etcd has an alarm raised: with
// NOSPACE every write fails, and the latencies after it would read as a
// quiet cluster. It names the command that recovers.
func (s *sloStrip) etcdAlarmCell() string {
	if len(s.alarms) == 0 {
		return ""
	}
	text := "✗ etcd " + strings.Join(s.alarms, ",") + " alarm"
	for _, a := range s.alarms {
		if a == "NOSPACE" {
			text += " — writes refused; recover: ghostfleet etcd recover"
		}
	}
	return s.th.Bad.Render(text) + s.th.Dim.Render(" · ")
}
