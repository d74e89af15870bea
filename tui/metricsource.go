package tui

import (
	"time"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// metricsSource is what the header says of the charts' data: where it
// comes from (Prometheus, or the components' /metrics scraped directly)
// and when a round last came back without an error, so a stale chart is
// not read as a quiet cluster.
type metricsSource struct {
	lastOK time.Time
	failed bool // the latest round had an error
	seen   bool
	source string // the latest round's, when its source names itself
}

func (s *metricsSource) note(v poll.MetricsView) {
	s.seen, s.failed, s.source = true, v.Err != "", v.Source
	if v.Err == "" {
		s.lastOK = v.At
	}
}

// text is the header's part: "metrics: Prometheus, ok 3s ago"; short
// when the header is narrow.
func (s *metricsSource) text(info Info, now time.Time, wide bool) string {
	src := info.Metrics
	if s.source != "" {
		src = s.source
	}
	if src == "" {
		src = "Prometheus"
	}
	var when string
	switch {
	case !s.seen:
		when = "waiting"
	case s.lastOK.IsZero():
		when = "failing"
	case s.failed:
		when = "failing, ok " + duration(now.Sub(s.lastOK)) + " ago"
	default:
		when = "ok " + duration(max(0, now.Sub(s.lastOK))) + " ago"
	}
	if !wide {
		if src == "Prometheus" {
			src = "prom"
		} else {
			src = "scrape"
		}
		return src + " " + when
	}
	return "metrics: " + src + ", " + when
}
