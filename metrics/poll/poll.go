package poll

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// RangeSource answers range queries: GhostFleet's Prometheus, or the
// components' /metrics scraped directly (metrics.StartLive).
type RangeSource interface {
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]metrics.Series, error)
}

// Named is a RangeSource that says what it is, when that changes while
// the console runs (the components' /metrics until Prometheus is up).
type Named interface {
	SourceName() string
}

// MinStep and MaxPoints bound a window's resolution: no finer than
// Prometheus scrapes (15s), and never more points per series than a wide
// terminal has columns for, however long the window.
const (
	MinStep   = 15 * time.Second
	MaxPoints = 120
)

// StepFor is the resolution a window is fetched at: 15s up to 30
// minutes, then coarser so that a series has at most MaxPoints+1 points
// (an hour: 30s).
func StepFor(window time.Duration) time.Duration {
	return max(MinStep, (window / MaxPoints).Round(time.Second))
}

// Fetch queries window of history at resolution step. The first error is
// kept in the view: the charts say why they are empty.
func Fetch(ctx context.Context, src RangeSource, window, step time.Duration) MetricsView {
	end := time.Now()
	start := end.Add(-window)
	g := newGrid(end, window, step)
	v := MetricsView{At: end, Window: window, Step: step, API: map[string]APILatency{}}
	var empty []metrics.Query // answered, with no series
	get := func(q metrics.Query) []metrics.Series {
		s, err := src.Range(ctx, q.PromQL, start, end, step)
		if err != nil && v.Err == "" {
			v.Err = err.Error()
		}
		if err == nil && len(s) == 0 {
			empty = append(empty, q)
		}
		return s
	}
	for _, c := range SLOClasses {
		v.API[c.Query.ID] = worstOf(get(c.Query), g)
	}
	v.Throughput = sumSeries(get(queryThroughput), g)
	v.Rejected = sumSeries(get(queryRejected), g)
	v.EtcdBytes = sumSeries(get(queryEtcdSize), g)
	v.EtcdQuota, _ = Last(sumSeries(get(queryEtcdQuota), g))
	v.GPUUtil = sumSeries(get(queryGPUUtil), g)
	if len(empty) > 0 { // asked only then: Prometheus answers from its targets
		v.Unavailable = unavailable(metrics.AvailabilityOf(ctx, src), empty)
	}
	return v
}

// Poller fetches the charts' window every interval. The window can change
// while it runs (the console's z key): the next round fetches the new one
// at once.
type Poller struct {
	// Alarms, when set before Run, asks etcd for its raised alarms each
	// round (EtcdAlarms): they are not among etcd's metrics. An error
	// leaves the round without them.
	Alarms func(context.Context) ([]string, error)

	src      RangeSource
	interval time.Duration
	window   atomic.Int64 // time.Duration
	wake     chan struct{}
}

// NewPoller polls src every interval for window of history.
func NewPoller(src RangeSource, interval, window time.Duration) *Poller {
	p := &Poller{src: src, interval: interval, wake: make(chan struct{}, 1)}
	p.window.Store(int64(window))
	return p
}

// SetWindow changes the window the next rounds fetch, at StepFor(window),
// and starts a round now. Safe from any goroutine.
func (p *Poller) SetWindow(window time.Duration) {
	if time.Duration(p.window.Swap(int64(window))) == window {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run sends a fresh MetricsView every interval until ctx ends, then
// closes the channel. One round at a time, at a bounded rate: the
// observer must not be the load. A view the reader has not taken yet is
// replaced, never queued.
func (p *Poller) Run(ctx context.Context) <-chan MetricsView {
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
			case <-p.wake:
			}
			window := time.Duration(p.window.Load())
			v := Fetch(ctx, p.src, window, StepFor(window))
			if p.Alarms != nil {
				v.EtcdAlarms, _ = p.Alarms(ctx)
			}
			if n, ok := p.src.(Named); ok {
				v.Source = n.SourceName()
			}
			if ctx.Err() != nil {
				return
			}
			select {
			case <-out:
			default:
			}
			out <- v
			t.Reset(p.interval)
		}
	}()
	return out
}

// Metrics polls window of history every interval: a Poller whose window
// never changes.
func Metrics(ctx context.Context, src RangeSource, interval, window time.Duration) <-chan MetricsView {
	return NewPoller(src, interval, window).Run(ctx)
}

// unavailable are the empty queries whose component cannot be read, by
// query ID: not "no data yet", not zero. A query with series keeps them.
func unavailable(avail metrics.Availability, empty []metrics.Query) map[string]string {
	var out map[string]string
	for _, q := range empty {
		if why, ok := avail.Reason(q); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[q.ID] = why
		}
	}
	return out
}
