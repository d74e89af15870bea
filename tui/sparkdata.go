package tui

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// RangeSource answers range queries: GhostFleet's Prometheus.
type RangeSource interface {
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]metrics.Series, error)
}

// MetricsView is the recent history of the sparklines' catalog queries.
type MetricsView struct {
	At  time.Time
	Err string
	// API is the API call latency SLI of each SLO class, by catalog
	// query ID (sloClasses).
	API        map[string]APILatency
	Throughput []float64 // pods/s scheduled
	Rejected   []float64 // APF rejections/s, all priority levels
	EtcdBytes  []float64
	// EtcdQuota is the running etcd's backend quota in bytes, 0 while
	// unknown: read, not assumed (etcd's default is 2 GiB, kwokctl
	// starts it with 8 GiB).
	EtcdQuota float64
	// GPUUtil is the fleet's mean DCGM GPU utilisation in percent, on
	// fleets whose nodes serve DCGM series (up --dcgm).
	GPUUtil []float64
}

// Sparkline queries come from the catalog, so the console, snapshots and
// reports agree on what each number means.
var (
	queryThroughput = mustLookup("scheduler-throughput")
	queryRejected   = mustLookup("apf-rejected")
	queryEtcdSize   = mustLookup("etcd-db-size")
	queryEtcdQuota  = mustLookup("etcd-quota")
	queryGPUUtil    = mustLookup("gpu-util")
)

func mustLookup(id string) metrics.Query {
	q, err := metrics.Lookup(id)
	if err != nil {
		panic(err)
	}
	return q
}

// FetchMetrics queries window of history at resolution step.
func FetchMetrics(ctx context.Context, src RangeSource, window, step time.Duration) MetricsView {
	end := time.Now()
	start := end.Add(-window)
	v := MetricsView{At: end, API: map[string]APILatency{}}
	get := func(q metrics.Query) []metrics.Series {
		s, err := src.Range(ctx, q.PromQL, start, end, step)
		if err != nil && v.Err == "" {
			v.Err = err.Error()
		}
		return s
	}
	for _, c := range sloClasses {
		v.API[c.query.ID] = worstOf(get(c.query))
	}
	v.Throughput = sumSeries(get(queryThroughput))
	v.Rejected = sumSeries(get(queryRejected))
	v.EtcdBytes = sumSeries(get(queryEtcdSize))
	if q := sumSeries(get(queryEtcdQuota)); len(q) > 0 {
		v.EtcdQuota = q[len(q)-1]
	}
	v.GPUUtil = sumSeries(get(queryGPUUtil))
	return v
}

// PollMetrics sends a fresh MetricsView every interval until ctx ends.
func PollMetrics(ctx context.Context, src RangeSource, interval, window, step time.Duration) <-chan MetricsView {
	out := make(chan MetricsView, 1)
	go func() {
		defer close(out)
		for {
			v := FetchMetrics(ctx, src, window, step)
			if ctx.Err() != nil {
				return
			}
			select {
			case <-out: // the UI has not taken the last one: replace it
			default:
			}
			out <- v
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return out
}

func values(s metrics.Series) []float64 {
	out := make([]float64, len(s.Points))
	for i, p := range s.Points {
		out[i] = p[1]
	}
	return out
}

// sumSeries adds series point by point on their timestamps. A counter
// with no series yet (no rejection ever) is a flat zero, not missing data,
// for the caller to decide; here it is nil.
func sumSeries(ss []metrics.Series) []float64 {
	if len(ss) == 1 {
		return values(ss[0])
	}
	at := map[float64]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			at[p[0]] += p[1]
		}
	}
	ts := slices.Sorted(maps.Keys(at))
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = at[t]
	}
	return out
}
