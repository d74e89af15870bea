package workload

import (
	"context"
	"fmt"
	"maps"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// ControllerManagerWaits is where kube-controller-manager's time went
// during one phase of a run, from its own /metrics read as the phase
// began and ended (cumulative histograms, so exact over the phase):
//   - RateLimiter, by verb: its requests' waits on their client's rate
//     limiter before they were sent (rest_client_rate_limiter_duration_seconds;
//     each controller has its own client, held to --kube-api-qps and
//     --kube-api-burst), and how many requests;
//   - Queued, by work queue (a controller has one or more): how long
//     items waited for a worker (workqueue_queue_duration_seconds);
//   - Work, by work queue: how long the workers took on them
//     (workqueue_work_duration_seconds), their requests' client waits
//     included.
//
// Entries with no observation in the phase are left out.
type ControllerManagerWaits struct {
	RateLimiter map[string]metrics.Tally `json:"rateLimiter"`
	Queued      map[string]metrics.Tally `json:"queued"`
	Work        map[string]metrics.Tally `json:"work"`
}

// The controller-manager's histograms ControllerManagerWaits reads, and the
// label each is kept by.
const (
	rateLimiterHistogram = "rest_client_rate_limiter_duration_seconds"
	queueHistogram       = "workqueue_queue_duration_seconds"
	workHistogram        = "workqueue_work_duration_seconds"
)

// cmReading is one scrape's totals: histogram → label value → tally.
type cmReading map[string]map[string]metrics.Tally

func readControllerManager(ctx context.Context, e metrics.Endpoint) (cmReading, error) {
	body, err := metrics.Scrape(ctx, e)
	if err != nil {
		return nil, err
	}
	byVerb, err := metrics.HistogramTotals(body, "verb", rateLimiterHistogram)
	if err != nil {
		return nil, err
	}
	byQueue, err := metrics.HistogramTotals(body, "name", queueHistogram, workHistogram)
	if err != nil {
		return nil, err
	}
	maps.Copy(byVerb, byQueue)
	return byVerb, nil
}

// waitsBetween is what the controller-manager added from one reading to a
// later one.
func waitsBetween(before, after cmReading) ControllerManagerWaits {
	delta := func(name string) map[string]metrics.Tally {
		out := map[string]metrics.Tally{}
		for key, t := range after[name] {
			if d := t.Minus(before[name][key]); d.Count > 0 {
				out[key] = d
			}
		}
		return out
	}
	return ControllerManagerWaits{RateLimiter: delta(rateLimiterHistogram), Queued: delta(queueHistogram), Work: delta(workHistogram)}
}

// cmMeter reads the controller-manager at each phase boundary of a run.
// A reading that fails is reported once and ends the metering: the run
// then records no waits rather than a phase's share of them.
type cmMeter struct {
	endpoint *metrics.Endpoint
	report   progress.Func
	last     cmReading
	phases   map[string]ControllerManagerWaits
}

// startControllerManagerMeter takes the first reading; with no endpoint
// it meters nothing.
func startControllerManagerMeter(ctx context.Context, e *metrics.Endpoint, report progress.Func) *cmMeter {
	m := &cmMeter{endpoint: e, report: report}
	if e != nil {
		m.last = m.read(ctx)
	}
	return m
}

// read scrapes the controller-manager; an interrupted run's last phase
// is still read (the endpoint's client gives up after 10s).
func (m *cmMeter) read(ctx context.Context) cmReading {
	r, err := readControllerManager(context.WithoutCancel(ctx), *m.endpoint)
	if err != nil {
		m.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("the controller-manager's client and work-queue waits are not recorded: %v", err)})
		m.endpoint = nil
		return nil
	}
	return r
}

// phase records what the controller-manager waited during the phase that
// just ended.
func (m *cmMeter) phase(ctx context.Context, name string) {
	if m.endpoint == nil {
		return
	}
	r := m.read(ctx)
	if r == nil {
		return
	}
	if m.phases == nil {
		m.phases = map[string]ControllerManagerWaits{}
	}
	m.phases[name] = waitsBetween(m.last, r)
	m.last = r
}
