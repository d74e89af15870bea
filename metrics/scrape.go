package metrics

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Endpoint is one component's /metrics, as the direct scrape source reads
// it.
type Endpoint struct {
	// Job names the component, as Prometheus's job label does.
	Job string
	// Fetch returns one response in the Prometheus text format.
	Fetch func(ctx context.Context) ([]byte, error)
	// Hidden, when set, says why this component's /metrics is not
	// scraped at all (declared hidden: attach --metrics apiserver-only):
	// its queries are not available, and it is never fetched.
	Hidden string
}

// fetch scrapes e once; a hidden endpoint fails without a request.
func (e Endpoint) fetch(ctx context.Context) ([]byte, error) {
	if e.Hidden != "" || e.Fetch == nil {
		return nil, &HiddenError{Reason: cmpOr(e.Hidden, e.Job+" /metrics: no way to scrape it")}
	}
	return e.Fetch(ctx)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// textFormat asks for the text format: the components also speak
// protobuf and OpenMetrics, which this source does not parse.
const textFormat = "text/plain;version=0.0.4"

// HTTPEndpoint scrapes url over HTTP(S) with the given TLS configuration
// (nil for plain HTTP).
func HTTPEndpoint(job, url string, tlsConfig *tls.Config) Endpoint {
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil},
		Timeout:   10 * time.Second, // Prometheus's scrape_timeout in kwok's config
	}
	return Endpoint{Job: job, Fetch: func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", textFormat)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, &StatusError{URL: url, Code: resp.StatusCode, Status: resp.Status, Body: string(bytes.TrimSpace(body[:min(len(body), 200)]))}
		}
		return body, nil
	}}
}

// SampleOptions configures Sample.
type SampleOptions struct {
	Endpoints []Endpoint
	// Period is how long to sample; Step how often. Period/Step+1 scrapes
	// are taken, the first right away.
	Period, Step time.Duration
	// Scraped, when set, is told after each scrape.
	Scraped func(done, total int, at time.Time, errs []error)
}

// Sample scrapes every endpoint every step for the period and returns the
// recording. An endpoint that fails a scrape is left out of that scrape
// (its series have a gap, as a failed Prometheus scrape leaves); it is an
// error only when no endpoint ever answered. Cancelling ctx stops it and
// returns ctx's error.
func Sample(ctx context.Context, opts SampleOptions) (*Recording, []error, error) {
	if len(opts.Endpoints) == 0 {
		return nil, nil, errors.New("no endpoints to scrape")
	}
	if opts.Step <= 0 || opts.Period < opts.Step {
		return nil, nil, fmt.Errorf("sampling %s every %s: the period must be at least one step, and the step positive", opts.Period, opts.Step)
	}
	total := int(opts.Period/opts.Step) + 1
	rec := NewRecording()
	var failures []error
	answered := false
	start := time.Now()
	for i := 0; i < total; i++ {
		if i > 0 {
			// Scrapes keep to the grid from the start, whatever each took.
			wait := time.Until(start.Add(time.Duration(i) * opts.Step))
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		at := time.Now()
		bodies, errs := fetchAll(ctx, opts.Endpoints)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		for j, body := range bodies {
			if errs[j] == nil {
				errs[j] = rec.AddText(at, opts.Endpoints[j].Job, bytes.NewReader(body))
			}
			rec.reach.scraped(opts.Endpoints[j].Job, errs[j])
			answered = answered || errs[j] == nil
		}
		var scrapeErrs []error
		for j, err := range errs {
			// A component declared hidden is not a failed scrape.
			if err != nil && opts.Endpoints[j].Hidden == "" {
				scrapeErrs = append(scrapeErrs, fmt.Errorf("%s: %w", opts.Endpoints[j].Job, err))
			}
		}
		failures = append(failures, scrapeErrs...)
		if opts.Scraped != nil {
			opts.Scraped(i+1, total, at, scrapeErrs)
		}
	}
	if !answered {
		return nil, failures, fmt.Errorf("no component's /metrics answered: %w", errors.Join(failures...))
	}
	return rec, failures, nil
}

func fetchAll(ctx context.Context, endpoints []Endpoint) ([][]byte, []error) {
	bodies := make([][]byte, len(endpoints))
	errs := make([]error, len(endpoints))
	var wg sync.WaitGroup
	for i, e := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i], errs[i] = e.fetch(ctx)
		}()
	}
	wg.Wait()
	return bodies, errs
}

// CounterSum scrapes e once and sums counter name over its series whose
// labels include every pair of match: one reading of a cumulative total,
// to subtract from a later one. A counter the response lacks reads 0: a
// labelled counter is not exposed until its first series is (a
// scheduler that has placed no pod has no attempts counter yet).
func CounterSum(ctx context.Context, e Endpoint, name string, match map[string]string) (float64, error) {
	body, err := Scrape(ctx, e)
	if err != nil {
		return 0, err
	}
	return counterSum(bytes.NewReader(body), name, match)
}

func counterSum(text io.Reader, name string, match map[string]string) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(text)
	if err != nil {
		return 0, err
	}
	mf, ok := families[name]
	switch {
	case !ok:
		return 0, nil
	case mf.GetType() != dto.MetricType_COUNTER:
		return 0, fmt.Errorf("%s is a %s, not a counter", name, strings.ToLower(mf.GetType().String()))
	}
	total := 0.0
	for _, m := range mf.GetMetric() {
		matched := 0
		for _, lp := range m.GetLabel() {
			if v, ok := match[lp.GetName()]; ok && v == lp.GetValue() {
				matched++
			}
		}
		if matched == len(match) {
			total += m.GetCounter().GetValue()
		}
	}
	return total, nil
}

// Tally is a histogram's cumulative count and sum: how many observations,
// and their total (seconds, for a duration).
type Tally struct {
	Count float64 `json:"count"`
	Sum   float64 `json:"seconds"`
}

// Minus is t less an earlier reading of the same histogram.
func (t Tally) Minus(earlier Tally) Tally {
	return Tally{Count: t.Count - earlier.Count, Sum: t.Sum - earlier.Sum}
}

// Families is one scrape, parsed: metric name → family.
type Families map[string]*dto.MetricFamily

// ParseFamilies parses one scrape (text, the Prometheus text format).
func ParseFamilies(text []byte) (Families, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(text))
}

// HistogramTotals reads, from one scrape (text, the Prometheus text
// format), what Families.HistogramTotals does.
func HistogramTotals(text []byte, byLabels map[string][]string) (map[string]map[string]Tally, error) {
	f, err := ParseFamilies(text)
	if err != nil {
		return nil, err
	}
	return f.HistogramTotals(byLabels)
}

// histogram is the family name, nil when the scrape lacks it, and an
// error when it is not a histogram.
func (f Families) histogram(name string) (*dto.MetricFamily, error) {
	mf, ok := f[name]
	if ok && mf.GetType() != dto.MetricType_HISTOGRAM {
		return nil, fmt.Errorf("%s is a %s, not a histogram", name, strings.ToLower(mf.GetType().String()))
	}
	return mf, nil
}

// HistogramTotals is the count and sum of each histogram of byLabels,
// summed by the values of the labels byLabels gives it, joined by spaces
// with the empty ones left out ("PATCH pods status", "DELETE pods"): name
// → key → tally. A histogram the scrape lacks has no entry (one with
// labels is not exposed before its first observation).
func (f Families) HistogramTotals(byLabels map[string][]string) (map[string]map[string]Tally, error) {
	out := map[string]map[string]Tally{}
	for name, labels := range byLabels {
		mf, err := f.histogram(name)
		if err != nil {
			return nil, err
		}
		if mf == nil {
			continue
		}
		by := map[string]Tally{}
		for _, m := range mf.GetMetric() {
			key := joinedLabels(m, labels)
			h := m.GetHistogram()
			t := by[key]
			by[key] = Tally{Count: t.Count + float64(h.GetSampleCount()), Sum: t.Sum + h.GetSampleSum()}
		}
		out[name] = by
	}
	return out, nil
}

// joinedLabels is the values m has of labels, in their order, joined by
// spaces with the empty ones left out ("PATCH pods status").
func joinedLabels(m *dto.Metric, labels []string) string {
	values := make([]string, 0, len(labels))
	for _, label := range labels {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() != "" {
				values = append(values, lp.GetValue())
			}
		}
	}
	return strings.Join(values, " ")
}

// CounterTotals is counter name summed by the values of labels, joined
// as HistogramTotals joins them, each total as a tally's Count; nil when
// the scrape lacks it (a labelled counter is not exposed before its
// first increment), an error when it is not a counter.
func (f Families) CounterTotals(name string, labels []string) (map[string]Tally, error) {
	mf, ok := f[name]
	if !ok {
		return nil, nil
	}
	if mf.GetType() != dto.MetricType_COUNTER {
		return nil, fmt.Errorf("%s is a %s, not a counter", name, strings.ToLower(mf.GetType().String()))
	}
	out := map[string]Tally{}
	for _, m := range mf.GetMetric() {
		key := joinedLabels(m, labels)
		out[key] = Tally{Count: out[key].Count + m.GetCounter().GetValue()}
	}
	return out, nil
}

// HistogramBuckets is histogram name's cumulative bucket counts summed
// over its series: each finite bucket's upper bound, formatted as
// strconv's 'g' does, → a tally whose Count is how many observations were
// at most that bound (all of them is HistogramTotals' count). nil when the
// scrape lacks the histogram.
func (f Families) HistogramBuckets(name string) (map[string]Tally, error) {
	mf, err := f.histogram(name)
	if mf == nil || err != nil {
		return nil, err
	}
	out := map[string]Tally{}
	for _, m := range mf.GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
			out[le] = Tally{Count: out[le].Count + float64(b.GetCumulativeCount())}
		}
	}
	return out, nil
}

// Scrape fetches e's /metrics once, in the Prometheus text format.
func Scrape(ctx context.Context, e Endpoint) ([]byte, error) {
	body, err := e.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s /metrics: %w", e.Job, err)
	}
	return body, nil
}
