package metrics

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Live scrapes endpoints every step into a recording of the last window
// and answers range queries from it, like Sample but for as long as its
// context lives: the console's source when no Prometheus answers.
type Live struct {
	mu     sync.Mutex
	rec    *Recording
	window time.Duration
}

// StartLive scrapes endpoints now and then every step until ctx ends,
// forgetting samples older than window.
func StartLive(ctx context.Context, endpoints []Endpoint, step, window time.Duration) *Live {
	l := &Live{rec: NewRecording(), window: window}
	go func() {
		t := time.NewTicker(step)
		defer t.Stop()
		for {
			at := time.Now()
			bodies, errs := fetchAll(ctx, endpoints)
			l.mu.Lock()
			for i, body := range bodies {
				if errs[i] == nil {
					// A response that does not parse is a failed scrape of
					// that endpoint: its series have a gap.
					errs[i] = l.rec.AddText(at, endpoints[i].Job, bytes.NewReader(body))
				}
				l.rec.reach.scraped(endpoints[i].Job, errs[i])
			}
			l.rec.Forget(at.Add(-window))
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return l
}

// Range answers a catalog query from what was scraped so far.
func (l *Live) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Range(ctx, query, start, end, step)
}

// Availability says which components could not be scraped since the
// source started, and why.
func (l *Live) Availability(ctx context.Context) Availability {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Availability(ctx)
}
