package workload

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Pacer hands out send times at a rate that can change while it runs. It
// is open loop: the schedule never waits for answers, and a caller that
// falls behind gets the missed slots at once rather than a slower rate.
type Pacer struct {
	clock clock.Clock
	rate  atomic.Uint64 // math.Float64bits of requests per second
	next  time.Time
	began bool // next is the last slot handed out, not the first to come
}

// NewPacer returns a pacer at rate requests per second.
func NewPacer(c clock.Clock, rate float64) *Pacer {
	p := &Pacer{clock: c}
	p.SetRate(rate)
	return p
}

// SetRate changes the rate from the next slot on; safe to call while
// another goroutine waits in Next.
func (p *Pacer) SetRate(rate float64) { p.rate.Store(math.Float64bits(rate)) }

// Rate is the current rate.
func (p *Pacer) Rate() float64 { return math.Float64frombits(p.rate.Load()) }

// StartAt makes t the first slot, so a run whose window starts at t gets
// every slot of it however late its first Next is called. Call it before
// the first Next.
func (p *Pacer) StartAt(t time.Time) { p.next = t }

// Next waits until the next slot and returns its scheduled time. Only one
// goroutine may call it.
func (p *Pacer) Next(ctx context.Context) (time.Time, error) {
	switch {
	case !p.began && p.next.IsZero():
		p.next = p.clock.Now()
	case p.began:
		p.next = p.next.Add(time.Duration(float64(time.Second) / p.Rate()))
	}
	p.began = true
	if d := p.next.Sub(p.clock.Now()); d > 0 {
		t := p.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C():
		}
	}
	return p.next, nil
}
