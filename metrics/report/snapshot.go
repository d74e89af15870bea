package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// RangeSource answers range queries: Prometheus's HTTP API, or a
// recording of the components' /metrics (metrics.Recording).
type RangeSource interface {
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]metrics.Series, error)
}

// Fleet describes the fleet a snapshot was taken of.
type Fleet struct {
	Cluster    string `json:"cluster"`
	Profile    string `json:"profile,omitempty"`
	Versions   any    `json:"versions,omitempty"`
	Nodes      int    `json:"nodes"`
	GPUs       int64  `json:"gpus"`
	Prometheus string `json:"prometheus"`
}

// SnapshotOptions configures Snapshot.
type SnapshotOptions struct {
	Root       string
	Fleet      Fleet
	Start, End time.Time
	Step       time.Duration
	Source     RangeSource
	// SourceName names Source in run.json and slo.json; "prometheus"
	// when empty.
	SourceName string
	// Note, when set, says in run.json how to read the window (the direct
	// source's window is its sampling time, not the one asked for).
	Note string
}

// SourcePrometheus is the default source's name.
const SourcePrometheus = "prometheus"

// Window is the time a snapshot covers.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// SnapshotRun is run.json: the fleet, the window and every run in it.
type SnapshotRun struct {
	Fleet Fleet `json:"fleet"`
	// Source is where the series came from: prometheus or direct scrape.
	Source string          `json:"source,omitempty"`
	Note   string          `json:"note,omitempty"`
	Window Window          `json:"window"`
	Taken  time.Time       `json:"taken"`
	Runs   []record.Record `json:"runs"`
	// Unavailable are the components whose /metrics could not be read
	// on this cluster, and why (metrics.Availability).
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// QuerySeries is one catalog query's range result in metrics.json.
type QuerySeries struct {
	metrics.Query
	Series []metrics.Series `json:"series"`
	Error  string           `json:"error,omitempty"`
	// Unavailable, when set, says why the query has no series: its
	// component's /metrics cannot be read on this cluster ("scheduler
	// /metrics unreachable: connection refused"). Empty series without it
	// are "no data in this window".
	Unavailable string `json:"unavailable,omitempty"`
}

// Availability is how a query's series stand: SeriesAvailable (it has
// some), SeriesNoData, SeriesNotAvailable or SeriesFailed.
func (q QuerySeries) Availability() string {
	switch {
	case q.Error != "":
		return SeriesFailed
	case len(q.Series) > 0:
		return SeriesAvailable
	case q.Unavailable != "":
		return SeriesNotAvailable
	}
	return SeriesNoData
}

// A query's availability in a snapshot.
const (
	SeriesAvailable    = "available"
	SeriesNoData       = "no data"
	SeriesNotAvailable = "not available"
	SeriesFailed       = "query failed"
)

// Verdict is one SLO's outcome in slo.json.
type Verdict struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Threshold   float64 `json:"threshold"`
	// Value is the worst value seen (the highest point of any series).
	Value  float64 `json:"value"`
	Where  string  `json:"where,omitempty"` // which series, or which run
	Status string  `json:"status"`          // pass, fail, no data, not available
	Source string  `json:"source"`          // prometheus, run records
	// Component is whose /metrics the verdict reads, or "watch" for what
	// the runs measure from their informers.
	Component string `json:"component,omitempty"`
	// Origin is whose threshold this is: upstream (Definition links the
	// sig-scalability SLO document) or ghostfleet (our own target).
	Origin     string `json:"origin"`
	Definition string `json:"definition,omitempty"`
	// Note says what the verdict leaves out or where ClusterLoader2's
	// own check would differ.
	Note string `json:"note,omitempty"`
}

// Verdict statuses.
const (
	StatusPass   = "pass"
	StatusFail   = "fail"
	StatusNoData = "no data"
	// StatusNotAvailable: the SLI's component cannot be read on this
	// cluster (its /metrics is hidden); the note says why.
	StatusNotAvailable = "not available"
)

// PodStartupThreshold is the upstream pod startup SLO: p99 ≤ 5s.
const PodStartupThreshold = 5.0

// Snapshot writes a new folder under opts.Root with run.json (the fleet,
// the window, the run records that overlap it), metrics.json (every
// catalog query over the window) and slo.json (a verdict per SLO).
func Snapshot(ctx context.Context, opts SnapshotOptions) (string, []Verdict, error) {
	if !opts.End.After(opts.Start) {
		return "", nil, fmt.Errorf("window %s to %s is empty: the start must be before the end", opts.Start.Format(time.RFC3339), opts.End.Format(time.RFC3339))
	}
	runs, err := record.RunsIn(opts.Root, opts.Start, opts.End)
	if err != nil {
		return "", nil, err
	}
	var series []QuerySeries
	for _, q := range metrics.Catalog {
		qs := QuerySeries{Query: q, Series: []metrics.Series{}}
		if s, err := opts.Source.Range(ctx, q.PromQL, opts.Start, opts.End, opts.Step); err != nil {
			qs.Error = err.Error()
		} else {
			qs.Series = s
		}
		series = append(series, qs)
	}
	// Asked after the queries: the direct source knows its scrapes'
	// outcome by then.
	avail := metrics.AvailabilityOf(ctx, opts.Source)
	markUnavailable(series, avail)
	if ctx.Err() != nil {
		return "", nil, ctx.Err() // nothing written
	}
	source := opts.SourceName
	if source == "" {
		source = SourcePrometheus
	}
	verdicts := append(sloVerdicts(series, source), podStartupVerdict(runs))

	dir, err := record.NewRunDir(opts.Root, "snapshot", opts.End)
	if err != nil {
		return "", nil, err
	}
	run := SnapshotRun{Fleet: opts.Fleet, Source: source, Note: opts.Note, Window: Window{opts.Start.UTC(), opts.End.UTC()}, Taken: time.Now().UTC(), Runs: runs}
	if len(avail) > 0 {
		run.Unavailable = avail
	}
	for name, v := range map[string]any{"run.json": run, "metrics.json": series, "slo.json": verdicts} {
		if err := record.WriteJSON(dir, name, v); err != nil {
			_ = os.RemoveAll(dir) // no half-made snapshot: a folder has all three files or none
			return "", nil, err
		}
	}
	return dir, verdicts, nil
}

// markUnavailable says why a query has no series when its component
// cannot be read. A query that has series keeps them: Prometheus may hold
// history from before a component went away.
func markUnavailable(series []QuerySeries, avail metrics.Availability) {
	for i := range series {
		if why, ok := avail.Reason(series[i].Query); ok && len(series[i].Series) == 0 && series[i].Error == "" {
			series[i].Unavailable = why
		}
	}
}

// sloVerdicts judges every catalog query with an SLO by its worst point.
func sloVerdicts(series []QuerySeries, source string) []Verdict {
	var out []Verdict
	for _, qs := range series {
		if qs.SLO == nil {
			continue
		}
		v := Verdict{ID: qs.ID, Description: qs.SLO.Description, Threshold: qs.SLO.Threshold, Status: StatusNoData, Source: source,
			Component: qs.Component, Origin: qs.SLO.Origin, Definition: qs.SLO.Source}
		if qs.Unavailable != "" {
			v.Status, v.Note = StatusNotAvailable, metrics.NotAvailable(qs.Unavailable)
			out = append(out, v)
			continue
		}
		for _, s := range qs.Series {
			for _, p := range s.Points {
				if v.Status == StatusNoData || p[1] > v.Value {
					v.Value, v.Where, v.Status = p[1], labelText(s.Labels), StatusPass
				}
			}
		}
		if v.Status != StatusNoData && v.Value > v.Threshold {
			v.Status = StatusFail
		}
		if qs.ID == "sli-list-namespace-p99" && v.Status == StatusFail && v.Value <= cl2ListThreshold {
			v.Note = fmt.Sprintf("ClusterLoader2's APIResponsivenessPrometheus would pass this: it allows %gs for every multi-object LIST; upstream's SLO allows %gs at namespace scope", cl2ListThreshold, v.Threshold)
		}
		out = append(out, v)
	}
	return out
}

// cl2ListThreshold is what ClusterLoader2's API responsiveness check
// allows any LIST, namespace- or cluster-scoped.
const cl2ListThreshold = 30.0

// podStartupVerdict judges pod startup by the runs' own measurement (a
// steady load's pod_startup, or a cl2 run's PodStartupLatency of its
// latency pods), as ClusterLoader2 measures it: kwok has no kubelet to
// export the kubelet's startup SLI. The SLO is defined for steady state,
// so bursts are listed in the note with their scheduling rate and
// backlog, never judged.
func podStartupVerdict(runs []record.Record) Verdict {
	v := Verdict{ID: "pod-startup-p99", Description: "pod startup of stateless pods in steady state: p99 ≤ 5s (create→watched Running, measured by the runs)",
		Threshold: PodStartupThreshold, Status: StatusNoData, Source: "run records", Component: metrics.ComponentWatch,
		Origin: metrics.OriginUpstream, Definition: metrics.SourcePodStartupLatency}
	var bursts []string
	for _, r := range runs {
		f, ok := startupOf(r)
		switch {
		case !ok:
		case !f.Steady:
			bursts = append(bursts, fmt.Sprintf("%s (%s: scheduled %.0f pods/s, up to %.0f waiting to be bound, pod_startup p99 %.2fs)",
				r.ID, cmp.Or(f.Pattern, "burst"), f.ScheduleRate, f.MaxPending, f.P99))
		case v.Status == StatusNoData || f.P99 > v.Value:
			v.Value, v.Where, v.Status = f.P99, r.ID, StatusPass
		}
	}
	if v.Status != StatusNoData && v.Value > v.Threshold {
		v.Status = StatusFail
	}
	if len(bursts) > 0 {
		v.Note = "not judged, not steady state: " + strings.Join(bursts, "; ")
	}
	return v
}

// startup is a run's pod startup figures as the verdict reads them.
type startup struct {
	P99 float64
	// Steady runs are judged; bursts (and runs paced above capacity) are
	// listed with their pattern, schedule rate and queue.
	Steady       bool
	Pattern      string
	ScheduleRate float64
	MaxPending   float64
}

// startupOf reads a record's pod startup: a cl2 run's PodStartupLatency
// (steady: CL2 paces its latency pods) or a load's pod_startup p99.
func startupOf(r record.Record) (startup, bool) {
	data, err := json.Marshal(r.Result)
	if err != nil {
		return startup{}, false
	}
	if r.Kind == record.KindCL2 {
		p99, ok := cl2PodStartupP99(data)
		return startup{P99: p99, Steady: true}, ok
	}
	var res struct {
		Pattern      string  `json:"pattern"`
		ScheduleRate float64 `json:"scheduleRate"`
		Verdict      struct {
			MaxPending float64 `json:"maxPending"`
		} `json:"verdict"`
		StartupLatency *struct {
			PodStartup struct {
				Count int     `json:"count"`
				P99   float64 `json:"p99"`
			} `json:"podStartup"`
		} `json:"startupLatency"`
	}
	if json.Unmarshal(data, &res) != nil || res.StartupLatency == nil || res.StartupLatency.PodStartup.Count == 0 {
		return startup{}, false
	}
	return startup{P99: res.StartupLatency.PodStartup.P99, Steady: res.Pattern == workload.PatternSteady,
		Pattern: res.Pattern, ScheduleRate: res.ScheduleRate, MaxPending: res.Verdict.MaxPending}, true
}

// cl2PodStartupP99 is the SLO figure of a cl2 run: pod_startup p99 of
// the measurement CL2's density tests (and ours) call PodStartupLatency,
// the latency pods; saturation pods are measured against a looser
// threshold and do not count.
func cl2PodStartupP99(result []byte) (float64, bool) {
	var res CL2Result
	if json.Unmarshal(result, &res) != nil {
		return 0, false
	}
	for _, l := range res.PodStartupLatency {
		if l.Measurement == "PodStartupLatency" && l.Metric == "pod_startup" {
			return l.P99 * cl2Unit(l.Unit), true
		}
	}
	return 0, false
}

func labelText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += ","
		}
		s += k + "=" + l[k]
	}
	return "{" + s + "}"
}
