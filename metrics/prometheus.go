package metrics

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Prometheus is a client of one Prometheus server's HTTP API.
type Prometheus struct {
	URL string
	api promv1.API
}

// NewPrometheus returns a client for the server at url.
func NewPrometheus(url string) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return &Prometheus{URL: url, api: promv1.NewAPI(c)}, nil
}

// Target is one scrape target and its last scrape's outcome.
type Target struct {
	Job       string `json:"job"`
	URL       string `json:"url"`
	Health    string `json:"health"`
	LastError string `json:"lastError,omitempty"`
}

// Up reports whether the last scrape succeeded.
func (t Target) Up() bool { return t.Health == string(promv1.HealthGood) }

// Targets lists the active scrape targets, sorted by job.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := p.api.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", p.URL, err)
	}
	out := make([]Target, 0, len(res.Active))
	for _, t := range res.Active {
		out = append(out, Target{
			Job:       string(t.Labels["job"]),
			URL:       t.ScrapeURL,
			Health:    string(t.Health),
			LastError: t.LastError,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}

// Scalar evaluates query at time at and returns its single value; an
// empty result is an error.
func (p *Prometheus) Scalar(ctx context.Context, query string, at time.Time) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, err := p.api.Query(ctx, query, at)
	if err != nil {
		return 0, fmt.Errorf("prometheus query %q: %w", query, err)
	}
	switch r := v.(type) {
	case model.Vector:
		if len(r) == 0 {
			return 0, fmt.Errorf("prometheus query %q: no data", query)
		}
		return float64(r[0].Value), nil
	case *model.Scalar:
		return float64(r.Value), nil
	default:
		return 0, fmt.Errorf("prometheus query %q: unexpected result type %s", query, v.Type())
	}
}

// ByLabel evaluates query at time at and returns each series' value keyed
// by the value of label.
func (p *Prometheus) ByLabel(ctx context.Context, query, label string, at time.Time) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, err := p.api.Query(ctx, query, at)
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", query, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus query %q: unexpected result type %s", query, v.Type())
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric[model.LabelName(label)])] = float64(s.Value)
	}
	return out, nil
}

// Series is one labelled time series of a range query.
type Series struct {
	Labels map[string]string `json:"labels"`
	// Points are [unix seconds, value] pairs; NaN and infinite values
	// (a quantile over no requests) are left out.
	Points [][2]float64 `json:"points"`
}

// Range evaluates query every step from start to end.
func (p *Prometheus) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, _, err := p.api.QueryRange(ctx, query, promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("prometheus range query %q: %w", query, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus range query %q: unexpected result type %s", query, v.Type())
	}
	out := make([]Series, 0, len(m))
	for _, s := range m {
		series := Series{Labels: map[string]string{}}
		for k, v := range s.Metric {
			series.Labels[string(k)] = string(v)
		}
		for _, pt := range s.Values {
			f := float64(pt.Value)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			series.Points = append(series.Points, [2]float64{float64(pt.Timestamp.Unix()), f})
		}
		if len(series.Points) > 0 {
			out = append(out, series)
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels) })
	return out, nil
}

// Availability reads Prometheus's targets: a component it scrapes none of,
// or whose every target is down because its /metrics refuses or is not
// there (lastError says so), is not available. Without the targets (an
// error) nothing is known to be hidden.
func (p *Prometheus) Availability(ctx context.Context) Availability {
	targets, err := p.Targets(ctx)
	if err != nil {
		return nil
	}
	type state struct {
		up     bool
		hidden string
	}
	seen := map[string]*state{}
	for _, t := range targets {
		c := ComponentOfJob(t.Job)
		if c == "" {
			continue
		}
		s := seen[c]
		if s == nil {
			s = &state{}
			seen[c] = s
		}
		if t.Up() {
			s.up = true
		} else if why, ok := hiddenWhyText(c, t.LastError); ok {
			s.hidden = why
		}
	}
	out := Availability{}
	for _, c := range append([]string{ComponentAPIServer}, HiddenComponents...) {
		s := seen[c]
		switch {
		case s == nil:
			out[c] = fmt.Sprintf("%s /metrics: Prometheus at %s scrapes no %s target", c, p.URL, c)
		case !s.up && s.hidden != "":
			out[c] = s.hidden
		}
	}
	return out
}
