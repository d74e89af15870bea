package poll

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// MetricsView is the recent history of the sparklines' catalog queries.
// Every series is placed on the same time grid, Window up to At in steps
// of Step (NaN where a series has no value), so the charts can draw a time
// axis and mark runs at their times.
type MetricsView struct {
	At     time.Time
	Window time.Duration
	Step   time.Duration
	Err    string
	// API is the API call latency SLI of each SLO class, by catalog
	// query ID (SLOClasses).
	API        map[string]APILatency
	Throughput []float64 // pods/s scheduled
	Rejected   []float64 // APF rejections/s, all priority levels
	EtcdBytes  []float64
	// EtcdQuota is the running etcd's backend quota in bytes, 0 while
	// unknown: read, not assumed (etcd's default is 2 GiB, kwokctl
	// starts it with 8 GiB).
	EtcdQuota float64
	// EtcdAlarms are the alarms etcd has raised (NOSPACE: it refuses
	// writes), when the poller was given a way to ask (Poller.Alarms);
	// nil otherwise.
	EtcdAlarms []string
	// GPUUtil is the fleet's mean DCGM GPU utilisation in percent, on
	// fleets whose nodes serve DCGM series (up --dcgm).
	GPUUtil []float64
	// Unavailable says, by catalog query ID, why a query has no series:
	// its component's /metrics cannot be read on this cluster (a managed
	// control plane hides the scheduler's, say). Its chart says so
	// instead of "no data yet" or a flat zero.
	Unavailable map[string]string
	// Source names where the round came from when its source says so
	// (Named): the console's header shows it.
	Source string
}

// NotAvailable is why query id is not available on this cluster, if it
// is not.
func (v MetricsView) NotAvailable(id string) (string, bool) {
	why, ok := v.Unavailable[id]
	return why, ok
}

// SLOClass is one class of the upstream API call latency SLO. The
// console charts the selected class's SLI query against the threshold the
// catalog gives it, so its line is the SLO's line.
type SLOClass struct {
	Name  string // how the console titles it: "API p99 " + Name
	Query metrics.Query
}

// SLOClasses are the classes every round fetches, in the order the
// console cycles through them.
var SLOClasses = []SLOClass{
	{"mutating", mustLookup("sli-mutating-p99")},
	{"GET", mustLookup("sli-read-single-p99")},
	{"LIST namespace", mustLookup("sli-list-namespace-p99")},
	{"LIST cluster", mustLookup("sli-list-cluster-p99")},
}

// The other series come from the catalog too, so the console, snapshots
// and reports agree on what each number means.
var (
	queryThroughput = mustLookup("scheduler-throughput")
	queryRejected   = mustLookup("apf-rejected")
	queryEtcdSize   = mustLookup("etcd-db-size")
	queryEtcdQuota  = mustLookup("etcd-quota")
	queryGPUUtil    = mustLookup("gpu-util")
)

// The IDs of the charts' queries, for asking NotAvailable.
var (
	QueryThroughput = queryThroughput.ID
	QueryRejected   = queryRejected.ID
	QueryEtcdSize   = queryEtcdSize.ID
	QueryGPUUtil    = queryGPUUtil.ID
)

// mustLookup is metrics.Lookup for IDs fixed in the code: a missing one is
// a bug the first test run finds.
func mustLookup(id string) metrics.Query {
	q, err := metrics.Lookup(id)
	if err != nil {
		panic(err)
	}
	return q
}

// APILatency is one SLO class's SLI, in seconds: the SLO holds only if
// every series (resource, verb, scope) stays under the threshold, so the
// view keeps the worst of them.
type APILatency struct {
	Worst []float64 // the highest series at each step
	// Series names the highest series at the latest step ("POST pods",
	// "pods/status"), Of how many series there were then.
	Series string
	Of     int
}

// grid is a view's time steps. Its zero value keeps a series' own
// timestamps, in order, without gaps.
type grid struct {
	start, step float64 // unix seconds
	n           int
}

func newGrid(end time.Time, window, step time.Duration) grid {
	return grid{
		start: float64(end.Add(-window).UnixMilli()) / 1000,
		step:  step.Seconds(),
		n:     int(window/step) + 1,
	}
}

// place puts the values at timestamps onto the grid: NaN where there is
// none, nil when there are none at all.
func (g grid) place(at map[float64]float64) []float64 {
	if len(at) == 0 {
		return nil
	}
	ts := slices.Sorted(maps.Keys(at))
	if g.n == 0 {
		out := make([]float64, len(ts))
		for i, t := range ts {
			out[i] = at[t]
		}
		return out
	}
	out := make([]float64, g.n)
	for i := range out {
		out[i] = math.NaN()
	}
	for _, t := range ts {
		if i := int(math.Round((t - g.start) / g.step)); i >= 0 && i < g.n {
			out[i] = at[t]
		}
	}
	return out
}

// Last is the latest value of a grid series, and whether it has one.
func Last(vs []float64) (float64, bool) {
	for i := len(vs) - 1; i >= 0; i-- {
		if !math.IsNaN(vs[i]) {
			return vs[i], true
		}
	}
	return 0, false
}

// worstOf reduces a class's series to the highest one at each step.
func worstOf(ss []metrics.Series, g grid) APILatency {
	at := map[float64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			if v, ok := at[p[0]]; !ok || p[1] > v {
				at[p[0]] = p[1]
			}
		}
	}
	out := APILatency{Worst: g.place(at)}
	if len(at) == 0 {
		return out
	}
	last, top := slices.Max(slices.Collect(maps.Keys(at))), -1.0
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

// sumSeries adds series point by point on their timestamps. A counter
// with no series yet (no rejection ever) is a flat zero, not missing data,
// for the reader to decide; here it is nil.
func sumSeries(ss []metrics.Series, g grid) []float64 {
	at := map[float64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			at[p[0]] += p[1]
		}
	}
	return g.place(at)
}
