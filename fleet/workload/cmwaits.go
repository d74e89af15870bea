package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// ControllerManagerWaits is where kube-controller-manager's time went
// during one phase of a run, from its own /metrics read just after the
// phase before it and this one ended (cumulative histograms, so exact
// between the readings; a wait counts in the phase it ends in):
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

// ControllerManagerUnrecorded begins the warning of a run that records
// no ControllerManagerWaits, or stops recording them.
const ControllerManagerUnrecorded = "the controller-manager's client and work-queue waits are not recorded"

// The controller-manager's histograms ControllerManagerWaits reads; the
// first by verb, the work queues' by queue name.
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
	return metrics.HistogramTotals(body, map[string]string{rateLimiterHistogram: "verb", queueHistogram: "name", workHistogram: "name"})
}

// waitsBetween is what the controller-manager added from one reading to a
// later one. A total that went down says the two readings are not of one
// process (it restarted, or another replica answered): an error, not a
// difference.
func waitsBetween(before, after cmReading) (ControllerManagerWaits, error) {
	var reset error
	delta := func(name string) map[string]metrics.Tally {
		out := map[string]metrics.Tally{}
		for key, t := range after[name] {
			d := t.Minus(before[name][key])
			if d.Count < 0 || d.Sum < 0 {
				reset = fmt.Errorf("%s{%s} went down between two readings: the controller-manager restarted or another replica answered", name, key)
			}
			if d.Count > 0 {
				out[key] = d
			}
		}
		return out
	}
	w := ControllerManagerWaits{RateLimiter: delta(rateLimiterHistogram), Queued: delta(queueHistogram), Work: delta(workHistogram)}
	return w, reset
}

// cmMeter reads the controller-manager at each phase boundary of a run.
// A reading that fails, or one not of the same process as the last, is
// reported once and ends the metering: the phases read before it keep
// their figures, the rest get none rather than a share.
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

// readTimeout bounds one reading: an interrupted run's last phase is
// still read, but not waited on for ever.
const readTimeout = 10 * time.Second

// read scrapes the controller-manager.
func (m *cmMeter) read(ctx context.Context) cmReading {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	r, err := readControllerManager(ctx, *m.endpoint)
	if err != nil {
		m.stop(err)
		return nil
	}
	return r
}

// stop ends the metering, saying why.
func (m *cmMeter) stop(err error) {
	m.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("%s from here on: %v", ControllerManagerUnrecorded, err)})
	m.endpoint = nil
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
	w, err := waitsBetween(m.last, r)
	if err != nil {
		m.stop(err)
		return
	}
	if m.phases == nil {
		m.phases = map[string]ControllerManagerWaits{}
	}
	m.phases[name] = w
	m.last = r
}
