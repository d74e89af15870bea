package workload

import (
	"math"
	"sort"
	"time"
)

// Percentiles summarises a sample of durations, in seconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Summarise computes percentiles with the nearest-rank method, the one
// ClusterLoader2 uses for PodStartupLatency.
func Summarise(samples []time.Duration) Percentiles {
	if len(samples) == 0 {
		return Percentiles{}
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(i, 0)].Seconds()
	}
	return Percentiles{Count: len(s), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: s[len(s)-1].Seconds()}
}
