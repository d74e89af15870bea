package poll

import (
	"context"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// RangeSource answers range queries: GhostFleet's Prometheus, or the
// components' /metrics scraped directly (metrics.StartLive).
type RangeSource interface {
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]metrics.Series, error)
}

// Fetch queries window of history at resolution step. The first error is
// kept in the view: the charts say why they are empty.
func Fetch(ctx context.Context, src RangeSource, window, step time.Duration) MetricsView {
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
	for _, c := range SLOClasses {
		v.API[c.Query.ID] = worstOf(get(c.Query))
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

// Metrics sends a fresh MetricsView every interval until ctx ends, then
// closes the channel. One round at a time, at a bounded rate: the
// observer must not be the load. A view the reader has not taken yet is
// replaced, never queued.
func Metrics(ctx context.Context, src RangeSource, interval, window, step time.Duration) <-chan MetricsView {
	out := make(chan MetricsView, 1)
	go func() {
		defer close(out)
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			v := Fetch(ctx, src, window, step)
			if ctx.Err() != nil {
				return
			}
			select {
			case <-out:
			default:
			}
			out <- v
			t.Reset(interval)
		}
	}()
	return out
}
