package tui

import (
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// sloClass is one class of the upstream API call latency SLO. The API
// sparkline charts the selected class's SLI query against the threshold
// the catalog gives it, so the console's line is the SLO's line.
type sloClass struct {
	name  string // in the title: "API p99 " + name
	query metrics.Query
}

// sloClasses are the classes `v` cycles through, in this order.
var sloClasses = []sloClass{
	{"mutating", mustLookup("sli-mutating-p99")},
	{"GET", mustLookup("sli-read-single-p99")},
	{"LIST namespace", mustLookup("sli-list-namespace-p99")},
	{"LIST cluster", mustLookup("sli-list-cluster-p99")},
}

// APILatency is one SLO class's SLI, in seconds: the SLO holds only if
// every series (resource, verb, scope) stays under the threshold, so the
// console charts the worst of them.
type APILatency struct {
	Worst []float64 // the highest series at each step
	// Series names the highest series at the latest step ("POST pods",
	// "pods/status"), Of how many series there were then.
	Series string
	Of     int
}

// worstOf reduces a class's series to the highest one at each step.
func worstOf(ss []metrics.Series) APILatency {
	at := map[float64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			if v, ok := at[p[0]]; !ok || p[1] > v {
				at[p[0]] = p[1]
			}
		}
	}
	ts := slices.Sorted(maps.Keys(at))
	out := APILatency{Worst: make([]float64, len(ts))}
	for i, t := range ts {
		out.Worst[i] = at[t]
	}
	if len(ts) == 0 {
		return out
	}
	last, top := ts[len(ts)-1], -1.0
	for _, s := range ss {
		if n := len(s.Points); n > 0 && s.Points[n-1][0] == last {
			out.Of++
			if s.Points[n-1][1] > top {
				top, out.Series = s.Points[n-1][1], seriesName(s.Labels)
			}
		}
	}
	return out
}

// seriesName is how a title names a series: its verb, when the class has
// several, then resource/subresource, or the path of a non-resource
// request (GET /healthz has a subresource and no resource).
func seriesName(l map[string]string) string {
	name := l["resource"]
	switch sub := l["subresource"]; {
	case name == "" && sub != "":
		name = sub
	case name == "":
		name = "(no resource)"
	case sub != "":
		name += "/" + sub
	}
	if verb := l["verb"]; verb != "" {
		name = verb + " " + name
	}
	return name
}

// apiSpark is the API latency sparkline of class c.
func apiSpark(m MetricsView, c sloClass, note string) spark {
	lat := m.API[c.query.ID]
	s := spark{
		title: "API p99 " + c.name, values: lat.Worst, unit: seconds,
		limit: c.query.SLO.Threshold, limitName: "SLO", note: note,
	}
	window := model.Duration(c.query.Expr.Window).String() // as PromQL writes it: 5m
	if len(lat.Worst) > 0 {
		s.detail = lat.Series
		s.captions = []string{fmt.Sprintf("SLI over %s · worst of %d series", window, lat.Of)}
		s.detailCaptions = []string{
			fmt.Sprintf("worst of %d: %s · SLI over %s", lat.Of, lat.Series, window),
			fmt.Sprintf("worst %s · SLI %s", lat.Series, window),
		}
	}
	if note == "" && !m.At.IsZero() {
		s.note = fmt.Sprintf("no %s calls in the last %s (SLI %s)", c.name, window, c.query.Expr.Metric)
	}
	return s
}
