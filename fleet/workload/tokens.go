package workload

import (
	"slices"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// schedulerClient is the name kube-scheduler's own API client adds to its
// user agent (clientName): the one that binds pods and patches their
// status. Its events go through a second client and its leader election
// through a third, each with a limiter of its own and a user agent
// without that name.
const schedulerClient = "scheduler"

// TokenBucket is an API client's token bucket as client-go builds it
// from a rest.Config's QPS and Burst: Burst tokens, refilled at QPS a
// second, one taken by each request. Zero when unknown (an attached
// cluster, whose scheduler's settings GhostFleet does not know).
type TokenBucket struct {
	QPS, Burst int
}

// TokensDrawn is how deep a client's requests drew its token bucket in a
// phase, counted from when the apiserver received each one (its audit
// log): the bucket is replayed with the client's limits, full at the
// first request read, refilled between requests and one token taken at
// each. A request the limiter held is received once it let it through,
// so a bucket the limiter emptied replays as drawn to its burst and no
// deeper, give or take the requests' ways to the apiserver (a few
// milliseconds, which can put Drawn a token past the burst); a bucket
// drawn less deep than its burst was never emptied, and the figure is
// what the requests needed.
//
// The replay starts full, so it never draws deeper than the real bucket
// and Drawn is a lower bound: exact when the real bucket was full at the
// first request read, as it is after Burst/QPS seconds without a request
// (20 s at 1,000 and 50), not when requests just before the run, outside
// the replay, had drawn it. The lists the client's
// informers send now and then draw a token each too, and the audit
// policies of GhostFleet's profiles leave them out; watches draw none.
type TokensDrawn struct {
	// QPS and Burst are the client's limits the bucket was replayed with.
	QPS   int `json:"qps"`
	Burst int `json:"burst"`
	// Requests is how many of the client's requests were received in
	// the phase.
	Requests int `json:"requests"`
	// Drawn is the most tokens drawn at once, just after a request of
	// the phase: Burst less the fewest left. DrawnAt is when, in seconds
	// after the phase's start.
	Drawn   float64 `json:"drawn"`
	DrawnAt float64 `json:"drawnAt"`
}

// phaseAt is the index of the phase t falls in (from its start, to
// before its end); -1 when none.
func phaseAt(phases []record.Phase, t time.Time) int {
	return slices.IndexFunc(phases, func(ph record.Phase) bool { return !t.Before(ph.Start) && t.Before(ph.End) })
}

// drawTokens replays limit's bucket over the requests received at
// received (in any order), from the first on, and returns what was
// drawn in each phase that had a request.
func drawTokens(received []time.Time, limit TokenBucket, phases []record.Phase) map[string]*TokensDrawn {
	times := slices.Clone(received)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	out := map[string]*TokensDrawn{}
	burst := float64(limit.Burst)
	level := burst
	var last time.Time
	for i, t := range times {
		if i > 0 {
			level = min(burst, level+float64(limit.QPS)*t.Sub(last).Seconds())
		}
		last, level = t, level-1
		p := phaseAt(phases, t)
		if p < 0 {
			continue
		}
		d := out[phases[p].Name]
		if d == nil {
			d = &TokensDrawn{QPS: limit.QPS, Burst: limit.Burst}
			out[phases[p].Name] = d
		}
		d.Requests++
		if drawn := burst - level; drawn > d.Drawn {
			d.Drawn, d.DrawnAt = drawn, t.Sub(phases[p].Start).Seconds()
		}
	}
	return out
}
