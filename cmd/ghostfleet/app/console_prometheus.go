package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// A first run's console does not wait for Prometheus to build (~7 min
// on 2 cores): the fleet comes up without it (up --prometheus-later),
// the charts read the components' /metrics directly, and Prometheus is
// built in the background, added to the fleet and handed the charts.

// handover is the charts' source: the direct scrape until Prometheus is
// up, then Prometheus. It names itself for the header, with the build's
// progress.
type handover struct {
	mu       sync.Mutex
	src      poll.RangeSource
	name     string
	building time.Time     // when the build started; zero when none runs
	estimate time.Duration // the build's typical time
	stop     func()        // stops the first source once another takes over
}

func (h *handover) current() poll.RangeSource {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.src
}

func (h *handover) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]metrics.Series, error) {
	return h.current().Range(ctx, query, start, end, step)
}

// Availability asks the current source (metrics.AvailabilitySource).
func (h *handover) Availability(ctx context.Context) metrics.Availability {
	return metrics.AvailabilityOf(ctx, h.current())
}

// SourceName is what the header says (poll.Named).
func (h *handover) SourceName() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.building.IsZero() {
		return h.name
	}
	return fmt.Sprintf("%s, Prometheus building %s of ~%s", h.name,
		time.Since(h.building).Truncate(time.Second), h.estimate.Round(time.Minute))
}

func (h *handover) set(src poll.RangeSource, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if src != nil {
		h.src = src
		if h.stop != nil {
			h.stop()
			h.stop = nil
		}
	}
	h.name, h.building = name, time.Time{}
}

// report follows the build's progress events.
func (h *handover) report(e progress.Event) {
	if e.Kind == progress.Start && strings.HasPrefix(e.Step, "build") {
		h.mu.Lock()
		h.building, h.estimate = time.Now(), e.Estimate
		h.mu.Unlock()
	}
}

// addPrometheusLater builds fleet name's pending Prometheus (of its
// pinned versions), adds it and hands the charts to it once it scrapes
// every target. It returns at once; wait waits for it after ctx is
// cancelled (a quit stops the build; nothing half-built is cached, and
// the fleet stays pending).
func addPrometheusLater(ctx context.Context, name string, versions binaries.Versions, h *handover) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fail := func(err error) {
			if ctx.Err() != nil {
				return
			}
			// Added all the same (its targets were slow, or an `up`
			// elsewhere added it first): the charts go to it.
			if st, serr := fleet.LoadState(name); serr == nil && !st.PrometheusPending {
				if prom, perr := metrics.NewPrometheus(st.PrometheusURL()); perr == nil {
					h.set(prom, "Prometheus")
					return
				}
			}
			h.set(nil, "direct scrape (Prometheus not added: "+firstLine(err.Error())+"; `ghostfleet up` retries)")
		}
		r, err := runs.Binaries{PrometheusFrom: os.Getenv(prometheusFromEnv)}.Resolver(h.report)
		if err != nil {
			fail(err)
			return
		}
		r.Versions = versions
		for _, b := range binaries.All { // the rest runs already
			if b.Name != binaries.Prometheus {
				r.Without = append(r.Without, b.Name)
			}
		}
		set, err := r.Resolve(ctx)
		if err != nil {
			fail(err)
			return
		}
		h.set(nil, "direct scrape, Prometheus starting")
		st, err := fleet.AddPrometheus(ctx, name, set[binaries.Prometheus], progress.Discard)
		if err != nil {
			fail(err)
			return
		}
		prom, err := metrics.NewPrometheus(st.PrometheusURL())
		if err != nil {
			fail(err)
			return
		}
		h.set(prom, "Prometheus")
	}()
	return func() { <-done }
}
