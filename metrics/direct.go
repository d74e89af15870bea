package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DirectSourceName is how snapshots name the direct scrape source.
const DirectSourceName = "direct scrape"

// lookback is how far back a gauge's last sample still counts, as in
// PromQL (--query.lookback-delta).
const lookback = 5 * time.Minute

// Recording holds the catalog's metric families as scraped over time, and
// answers the catalog from them the way Prometheus would have from the
// same samples. It is the direct scrape source: it has no history beyond
// what it recorded.
type Recording struct {
	series map[string][]*recSeries // by metric name
	byKey  map[string]*recSeries
	scrape []time.Time // when each scrape was taken, in order
	keep   map[string]bool
	reach  reachability
}

type recSeries struct {
	labels map[string]string // with __name__ and job
	points []point           // in time order
}

type point struct {
	t time.Time
	v float64
}

// NewRecording returns an empty recording that keeps the families the
// catalog reads.
func NewRecording() *Recording {
	keep := map[string]bool{}
	for _, q := range Catalog {
		for _, f := range q.Expr.families() {
			keep[f] = true
		}
	}
	return &Recording{series: map[string][]*recSeries{}, byKey: map[string]*recSeries{}, keep: keep}
}

// Forget drops every sample and scrape older than before, and series left
// empty, so a long-running recording stays the size of its window.
func (r *Recording) Forget(before time.Time) {
	i := 0
	for i < len(r.scrape) && r.scrape[i].Before(before) {
		i++
	}
	r.scrape = r.scrape[i:]
	for name, list := range r.series {
		kept := list[:0]
		for _, s := range list {
			j := 0
			for j < len(s.points) && s.points[j].t.Before(before) {
				j++
			}
			s.points = s.points[j:]
			if len(s.points) == 0 {
				delete(r.byKey, labelKey(s.labels))
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == 0 {
			delete(r.series, name)
		} else {
			r.series[name] = kept
		}
	}
}

// Availability says which components could not be scraped at all while
// recording, and why: a component that answered once is available.
func (r *Recording) Availability(context.Context) Availability { return r.reach.availability() }

// Scrapes returns when each scrape was taken.
func (r *Recording) Scrapes() []time.Time { return append([]time.Time(nil), r.scrape...) }

// AddText parses one /metrics response (Prometheus text format) of the
// component job, scraped at time at, and records the catalog's families.
// Scrapes must be added in time order; the endpoints of one scrape share
// its time.
func (r *Recording) AddText(at time.Time, job string, text io.Reader) error {
	if n := len(r.scrape); n > 0 && at.Before(r.scrape[n-1]) {
		return fmt.Errorf("scrape at %s is older than the last one (%s)", at.Format(time.RFC3339Nano), r.scrape[n-1].Format(time.RFC3339Nano))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(text)
	if err != nil {
		return fmt.Errorf("%s /metrics: %w", job, err)
	}
	for name, mf := range families {
		if !r.keep[name] {
			continue
		}
		for _, m := range mf.GetMetric() {
			base := map[string]string{"job": job}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			if h := m.GetHistogram(); h != nil && mf.GetType() == dto.MetricType_HISTOGRAM {
				r.addHistogram(at, name, base, h)
				continue
			}
			v, ok := value(m)
			if !ok {
				continue
			}
			r.AddPoint(withName(base, name), at, v)
		}
	}
	if n := len(r.scrape); n == 0 || !r.scrape[n-1].Equal(at) {
		r.scrape = append(r.scrape, at)
	}
	return nil
}

// addHistogram records a classic histogram as Prometheus stores it: one
// cumulative _bucket series per upper bound, +Inf included.
func (r *Recording) addHistogram(at time.Time, name string, base map[string]string, h *dto.Histogram) {
	hasInf := false
	for _, b := range h.GetBucket() {
		count := b.GetCumulativeCountFloat()
		if count == 0 {
			count = float64(b.GetCumulativeCount())
		}
		if math.IsInf(b.GetUpperBound(), +1) {
			hasInf = true
		}
		l := withName(base, name+"_bucket")
		l[model.BucketLabel] = formatLe(b.GetUpperBound())
		r.AddPoint(l, at, count)
	}
	if !hasInf {
		count := h.GetSampleCountFloat()
		if count == 0 {
			count = float64(h.GetSampleCount())
		}
		l := withName(base, name+"_bucket")
		l[model.BucketLabel] = "+Inf"
		r.AddPoint(l, at, count)
	}
}

func formatLe(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func withName(l map[string]string, name string) map[string]string {
	out := make(map[string]string, len(l)+2)
	for k, v := range l {
		out[k] = v
	}
	out[model.MetricNameLabel] = name
	return out
}

// AddPoint records one sample of the series labels (which carry the
// metric's name in __name__). It does not mark a scrape: a recording of
// points alone is evaluated on the step grid, like Prometheus.
func (r *Recording) AddPoint(labels map[string]string, at time.Time, v float64) {
	key := labelKey(labels)
	s := r.byKey[key]
	if s == nil {
		s = &recSeries{labels: labels}
		r.byKey[key] = s
		name := labels[model.MetricNameLabel]
		r.series[name] = append(r.series[name], s)
	}
	if n := len(s.points); n > 0 && !at.After(s.points[n-1].t) {
		return // a duplicate or out of order: Prometheus drops it too
	}
	s.points = append(s.points, point{at, v})
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}

// Range answers a catalog query (by its PromQL) at every scrape taken
// from start to end, or, for a recording of points alone, every step from
// start to end. It is the direct scrape source's side of
// report.RangeSource; it knows only the catalog's queries.
func (r *Recording) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	var expr *Expr
	for _, q := range Catalog {
		if q.PromQL == query {
			expr = &q.Expr
			break
		}
	}
	if expr == nil {
		return nil, fmt.Errorf("the direct scrape source answers only the catalog's queries, not %q", query)
	}
	return r.Eval(ctx, *expr, start, end, step)
}

// Eval evaluates e like Range.
func (r *Recording) Eval(ctx context.Context, e Expr, start, end time.Time, step time.Duration) ([]Series, error) {
	if err := e.compile(); err != nil {
		return nil, err
	}
	var times []time.Time
	if len(r.scrape) > 0 {
		for _, t := range r.scrape {
			if !t.Before(start) && !t.After(end) {
				times = append(times, t)
			}
		}
	} else {
		if step <= 0 {
			return nil, fmt.Errorf("step %s must be positive", step)
		}
		for t := start; !t.After(end); t = t.Add(step) {
			times = append(times, t)
		}
	}
	bySeries := map[string]*Series{}
	for _, t := range times {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for key, s := range r.evalAt(e, t) {
			if math.IsNaN(s.v) || math.IsInf(s.v, 0) {
				continue
			}
			out := bySeries[key]
			if out == nil {
				out = &Series{Labels: s.labels}
				bySeries[key] = out
			}
			out.Points = append(out.Points, [2]float64{float64(t.UnixMilli()) / 1000, s.v})
		}
	}
	out := make([]Series, 0, len(bySeries))
	for _, s := range bySeries {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels) })
	return out, nil
}

// sample is one element of an instant vector.
type sample struct {
	labels map[string]string
	v      float64
}

// vector is an instant vector keyed by its labels.
type vector map[string]sample

// evalAt evaluates e at time t.
func (r *Recording) evalAt(e Expr, t time.Time) vector {
	var out vector
	switch e.Kind {
	case GaugeSum, GaugeMax, GaugeAvg:
		in := vector{}
		for _, s := range r.series[e.Metric] {
			if !e.matches(s.labels) {
				continue
			}
			if p, ok := r.gaugeAt(s, t); ok {
				in[labelKey(s.labels)] = sample{s.labels, p}
			}
		}
		switch e.Kind {
		case GaugeMax:
			out = aggregate(in, e.By, maxOf)
		case GaugeAvg:
			out = average(in, e.By)
		default:
			out = aggregate(in, e.By, sum)
		}
	case SumOfRate:
		out = aggregate(r.rates(e, e.Metric, t), e.By, sum)
	case QuantileOfRate:
		buckets := aggregate(r.rates(e, e.Metric+"_bucket", t), append(append([]string{}, e.By...), model.BucketLabel), sum)
		out = histogramQuantile(e.Quantile, buckets)
	}
	if e.Or != nil {
		for k, s := range r.evalAt(*e.Or, t) {
			if _, ok := out[k]; !ok {
				out[k] = s
			}
		}
	}
	return out
}

// gaugeAt is the series' value at t: its last sample no older than
// lookback, as in PromQL. At a scrape of its own the series must have been
// in that scrape: Prometheus marks a series that left its target's
// response (or whose target failed) stale at once, and so does this.
func (r *Recording) gaugeAt(s *recSeries, t time.Time) (float64, bool) {
	i := sort.Search(len(s.points), func(i int) bool { return s.points[i].t.After(t) })
	if i == 0 || !s.points[i-1].t.After(t.Add(-lookback)) {
		return 0, false
	}
	if len(r.scrape) > 0 && !s.points[i-1].t.Equal(t) {
		return 0, false
	}
	return s.points[i-1].v, true
}

// rates is rate(name{matchers}[window]) at t for every matching series.
//
// As in PromQL the range is left-open, (t-window, t], and the increase is
// extrapolated to its edges. Where the recording began less than a window
// before t, the range is clamped to start at the first recorded time
// (included): the direct source has no samples before it, and
// extrapolating over time nobody watched would understate the rate. A
// recording of points alone (samples read back from Prometheus) is not
// clamped: it is evaluated exactly as Prometheus would.
func (r *Recording) rates(e Expr, name string, t time.Time) vector {
	first, ok := r.firstTime()
	if !ok {
		return vector{}
	}
	rangeStart, clamped := t.Add(-e.Window), false
	if len(r.scrape) > 0 && !rangeStart.After(first) {
		rangeStart, clamped = first, true
	}
	out := vector{}
	for _, s := range r.series[name] {
		if !e.matches(s.labels) {
			continue
		}
		var in []point
		for _, p := range s.points {
			if (p.t.After(rangeStart) || clamped && p.t.Equal(rangeStart)) && !p.t.After(t) {
				in = append(in, p)
			}
		}
		if v, ok := extrapolatedRate(in, rangeStart, t); ok {
			l := make(map[string]string, len(s.labels))
			for k, v := range s.labels {
				if k != model.MetricNameLabel {
					l[k] = v
				}
			}
			out[labelKey(l)] = sample{l, v}
		}
	}
	return out
}

func (r *Recording) firstTime() (time.Time, bool) {
	if len(r.scrape) > 0 {
		return r.scrape[0], true
	}
	var first time.Time
	for _, s := range r.byKey {
		if len(s.points) > 0 && (first.IsZero() || s.points[0].t.Before(first)) {
			first = s.points[0].t
		}
	}
	return first, !first.IsZero()
}

func sum(a, b float64) float64 { return a + b }

func maxOf(a, b float64) float64 { return math.Max(a, b) }

// average is PromQL's avg by (by): the sum over the count.
func average(in vector, by []string) vector {
	ones := vector{}
	for k, s := range in {
		ones[k] = sample{s.labels, 1}
	}
	sums, counts := aggregate(in, by, sum), aggregate(ones, by, sum)
	for k, s := range sums {
		s.v /= counts[k].v
		sums[k] = s
	}
	return sums
}

// aggregate is PromQL's sum/max by (by): series that lack a label group
// under its empty value, and empty labels are left out of the result.
func aggregate(in vector, by []string, op func(a, b float64) float64) vector {
	out := vector{}
	for _, s := range in {
		l := map[string]string{}
		for _, k := range by {
			if v := s.labels[k]; v != "" {
				l[k] = v
			}
		}
		key := labelKey(l)
		if prev, ok := out[key]; ok {
			out[key] = sample{l, op(prev.v, s.v)}
		} else {
			out[key] = sample{l, s.v}
		}
	}
	return out
}
