package metrics

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// This file re-implements the two PromQL functions the catalog uses,
// following Prometheus's promql/functions.go (extrapolatedRate) and
// promql/quantile.go (BucketQuantile), so that the direct scrape source
// answers what Prometheus would from the same samples.

// extrapolatedRate is rate() over the samples of one counter that fall in
// rangeStart…rangeEnd: the increase, corrected for counter resets, is
// extrapolated towards the range's edges (by at most half a scrape
// interval when the series starts or ends well inside the range, and never
// below zero at the start) and divided by the range's length. Fewer than
// two samples have no rate.
func extrapolatedRate(samples []point, rangeStart, rangeEnd time.Time) (float64, bool) {
	if len(samples) < 2 {
		return 0, false
	}
	first, last := samples[0], samples[len(samples)-1]
	increase := last.v - first.v
	prev := first.v
	for _, p := range samples[1:] {
		if p.v < prev {
			increase += prev // a counter reset: it restarted from zero
		}
		prev = p.v
	}
	rangeSeconds := rangeEnd.Sub(rangeStart).Seconds()
	sampled := last.t.Sub(first.t).Seconds()
	if rangeSeconds <= 0 || sampled <= 0 {
		return 0, false
	}
	toStart := first.t.Sub(rangeStart).Seconds()
	toEnd := rangeEnd.Sub(last.t).Seconds()
	avg := sampled / float64(len(samples)-1)
	threshold := avg * 1.1
	if toStart >= threshold {
		toStart = avg / 2
	}
	if increase > 0 && first.v >= 0 {
		// The counter cannot have been below zero before the first sample.
		if toZero := sampled * (first.v / increase); toZero < toStart {
			toStart = toZero
		}
	}
	if toEnd >= threshold {
		toEnd = avg / 2
	}
	factor := (sampled + toStart + toEnd) / sampled / rangeSeconds
	return increase * factor, true
}

type bucket struct {
	upper float64
	count float64
}

// histogramQuantile is histogram_quantile(q, buckets) for every group of
// buckets (labels other than le): the bucket the rank falls in is found
// and the quantile interpolated linearly inside it (from 0 for the first
// bucket). A rank in the +Inf bucket answers the highest finite bound; a
// group with no observations, no +Inf bucket or fewer than two buckets has
// no value (NaN).
func histogramQuantile(q float64, in vector) vector {
	groups := map[string]*struct {
		labels  map[string]string
		buckets []bucket
	}{}
	for _, s := range in {
		le, ok := s.labels[model.BucketLabel]
		if !ok {
			continue
		}
		upper, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue // Prometheus ignores a bucket it cannot read too
		}
		l := map[string]string{}
		for k, v := range s.labels {
			if k != model.BucketLabel {
				l[k] = v
			}
		}
		key := labelKey(l)
		g := groups[key]
		if g == nil {
			g = &struct {
				labels  map[string]string
				buckets []bucket
			}{labels: l}
			groups[key] = g
		}
		g.buckets = append(g.buckets, bucket{upper, s.v})
	}
	out := vector{}
	for key, g := range groups {
		out[key] = sample{g.labels, bucketQuantile(q, g.buckets)}
	}
	return out
}

func bucketQuantile(q float64, buckets []bucket) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(+1)
	}
	if len(buckets) == 0 {
		return math.NaN()
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].upper < buckets[j].upper })
	if !math.IsInf(buckets[len(buckets)-1].upper, +1) {
		return math.NaN()
	}
	// Buckets with the same bound (from series that differed only in how
	// le was written) are one bucket.
	merged := buckets[:1]
	for _, b := range buckets[1:] {
		if b.upper == merged[len(merged)-1].upper {
			merged[len(merged)-1].count += b.count
		} else {
			merged = append(merged, b)
		}
	}
	buckets = merged
	// Rates of cumulative counts summed apart differ in the last bits:
	// neighbours within a relative 1e-12 count as equal, as in Prometheus,
	// so that the rank does not land in a bucket that is empty in truth.
	prev := buckets[0].count
	for i := 1; i < len(buckets); i++ {
		if d := math.Abs(buckets[i].count - prev); d != 0 && d/buckets[i].count <= 1e-12 {
			buckets[i].count = prev
		} else {
			prev = buckets[i].count
		}
	}
	// A bucket below its predecessor (inconsistent input) is lifted to it.
	for i := 1; i < len(buckets); i++ {
		if buckets[i].count < buckets[i-1].count {
			buckets[i].count = buckets[i-1].count
		}
	}
	if len(buckets) < 2 {
		return math.NaN()
	}
	observations := buckets[len(buckets)-1].count
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	b := sort.Search(len(buckets)-1, func(i int) bool { return buckets[i].count >= rank })
	if b == len(buckets)-1 {
		return buckets[len(buckets)-2].upper
	}
	if b == 0 && buckets[0].upper <= 0 {
		return buckets[0].upper
	}
	start, end, count := 0.0, buckets[b].upper, buckets[b].count
	if b > 0 {
		start = buckets[b-1].upper
		count -= buckets[b-1].count
		rank -= buckets[b-1].count
	}
	return start + (end-start)*(rank/count)
}
