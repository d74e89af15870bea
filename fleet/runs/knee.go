package runs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// KneeOptions ask for the knee of sustainable churn: the highest rate at
// which a churn of StepDuration keeps MinRatio of its creates and the
// mutating-calls SLI within its upstream SLO. The rate doubles from From
// until a step fails (or Max passes), then the gap between the last pass
// and the first failure is halved until it is at most Resolution of the
// pass.
type KneeOptions struct {
	// Churn is every step's churn (pod size, lifetime, namespace); its
	// Rate and Duration are set per step.
	Churn        ChurnOptions  `json:"churn"`
	From         float64       `json:"from"`
	Max          float64       `json:"max"`
	StepDuration time.Duration `json:"stepDuration"`
	// Resolution is how close the search gets: it stops when the first
	// failing rate is at most (1+Resolution) × the last passing one.
	Resolution float64 `json:"resolution"`
	// MinRatio is the share of create slots that must succeed.
	MinRatio float64 `json:"minRatio"`
	// Cooldown is the wait after each step, for queues to drain and
	// Prometheus to scrape the step's last requests.
	Cooldown time.Duration `json:"cooldown"`
	// CreatesOnly judges every step on MinRatio alone: the SLI is still
	// measured and recorded when the fleet has Prometheus, so that a
	// fleet with Prometheus and one without are judged alike.
	CreatesOnly bool `json:"createsOnly,omitempty"`
}

// NewKneeOptions are the search's defaults: from 25 pods/s, doubling up
// to 800, 60 s steps, 10 % resolution, 95 % of creates (issue #12's
// churn goal), 30 s between steps.
func NewKneeOptions() KneeOptions {
	return KneeOptions{
		Churn: NewChurnOptions(false), From: 25, Max: 800, StepDuration: time.Minute,
		Resolution: 0.1, MinRatio: 0.95, Cooldown: 30 * time.Second,
	}
}

// Validate checks the search's values and every step's churn, each error
// naming the value and what is allowed.
func (o *KneeOptions) Validate() error {
	switch {
	case o.From <= 0:
		return fmt.Errorf("--from %g is out of range: it must be more than 0 pods/s", o.From)
	case o.Max < o.From:
		return fmt.Errorf("--max %g is out of range: it must be at least --from (%g)", o.Max, o.From)
	case o.Resolution < 0.01 || o.Resolution > 1:
		return fmt.Errorf("--resolution %g is out of range: allowed are 0.01-1 (a share of the rate)", o.Resolution)
	case o.MinRatio <= 0 || o.MinRatio > 1:
		return fmt.Errorf("--min-ratio %g is out of range: allowed are more than 0 and at most 1", o.MinRatio)
	case o.Cooldown < 0:
		return fmt.Errorf("--cooldown %s is out of range: it must be 0 or more", o.Cooldown)
	}
	c := o.Churn
	c.Rate, c.Duration = o.Max, o.StepDuration
	return c.Validate()
}

// KneeStep is one churn of the search and why it passed or failed.
type KneeStep struct {
	Rate  float64 `json:"rate"`
	RunID string  `json:"runId"`
	// CreateRatio is the churn's creates that succeeded per create slot.
	CreateRatio float64 `json:"createRatio"`
	Errors429   int     `json:"errors429"`
	// CreateP99 is the client's create latency p99, from just before the
	// request was sent (APF's queue wait included).
	CreateP99 float64 `json:"createP99Seconds"`
	// MutatingP99 is the apiserver's mutating-calls SLI p99 over the
	// step (the worst resource and verb, at Where); nil without
	// Prometheus.
	MutatingP99 *float64 `json:"mutatingP99Seconds,omitempty"`
	Where       string   `json:"where,omitempty"`
	Pass        bool     `json:"pass"`
	Why         string   `json:"why"`
}

// KneeResult is the search: every step, the knee (the highest rate that
// passed; 0 when none did) and the lowest rate that failed (0 when none
// did, up to Max).
type KneeResult struct {
	Run
	Knee      float64    `json:"knee"`
	FirstFail float64    `json:"firstFail"`
	Steps     []KneeStep `json:"steps"`
	// SLO says how the mutating-calls SLI was judged, or why it was not.
	SLO     string `json:"slo"`
	Verdict string `json:"verdict"`
}

// Summary is the knee in one line.
func (r KneeResult) Summary() string { return r.Verdict }

// searchKnee doubles the rate from from while try passes (up to max),
// then bisects between the last pass and the first failure until they
// are within resolution. Rates of 10/s and more are whole numbers.
func searchKnee(ctx context.Context, from, max, resolution float64, try func(rate float64) (bool, error)) (knee, firstFail float64, err error) {
	for r := from; ; r = math.Min(2*r, max) {
		pass, err := try(r)
		if err != nil {
			return knee, firstFail, err
		}
		if !pass {
			firstFail = r
			break
		}
		knee = r
		if r >= max {
			return knee, 0, nil
		}
	}
	for knee > 0 && firstFail-knee > resolution*knee && ctx.Err() == nil {
		mid := (knee + firstFail) / 2
		if mid >= 10 {
			mid = math.Round(mid)
		}
		if mid <= knee || mid >= firstFail {
			break // whole rates cannot get closer
		}
		pass, err := try(mid)
		if err != nil {
			return knee, firstFail, err
		}
		if pass {
			knee = mid
		} else {
			firstFail = mid
		}
	}
	return knee, firstFail, ctx.Err()
}

// errKneeStep stops the search when a step could not run at all.
var errKneeStep = errors.New("a step of the search failed")

// Knee runs the search on env's fleet, each step a churn recorded in its
// own run folder, then records the search itself (kind "knee").
func Knee(ctx context.Context, env Env, o KneeOptions) (KneeResult, error) {
	if err := o.Validate(); err != nil {
		return KneeResult{}, err
	}
	s, err := open(env)
	if err != nil {
		return KneeResult{}, err
	}
	var prom *metrics.Prometheus
	res := KneeResult{SLO: "not judged: the fleet has no Prometheus (steps pass on the create ratio alone)"}
	if s.prometheusURL != "" {
		if prom, err = metrics.NewPrometheus(s.prometheusURL); err != nil {
			return res, err
		}
		res.SLO = "mutating API calls p99 ≤ 1s (apiserver_request_sli_duration_seconds, scope resource, worst resource and verb) over each step and its cooldown, not over upstream's 5-minute window: " + metrics.SourceAPICallLatency
		if o.CreatesOnly {
			res.SLO = "measured, not judged (--creates-only: steps pass on the create ratio alone): " + res.SLO
		}
	}
	id := NewID("knee")
	started := time.Now().UTC()
	n := 0
	try := func(rate float64) (bool, error) {
		n++
		env.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("knee step %d: churn at %g pods/s for %s", n, rate, o.StepDuration)})
		c := o.Churn
		c.Rate, c.Duration = rate, o.StepDuration
		from := time.Now()
		cr, err := Churn(ctx, env, c)
		if err != nil || cr.Interrupted {
			if err == nil {
				err = ctx.Err()
			}
			return false, fmt.Errorf("%w at %g pods/s: %v", errKneeStep, rate, err)
		}
		step := KneeStep{Rate: rate, RunID: cr.ID, CreateRatio: cr.CreateRatio, Errors429: cr.Errors["429"], CreateP99: cr.Latency["create"].P99}
		if err := sleepCtx(ctx, o.Cooldown); err != nil {
			return false, err
		}
		if prom != nil {
			step.MutatingP99, step.Where = worstMutatingP99(ctx, prom, from, time.Now())
		}
		step.Pass, step.Why = judgeKneeStep(step, o.MinRatio, o.CreatesOnly)
		res.Steps = append(res.Steps, step)
		env.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("knee step %d at %g pods/s: %s", n, rate, step.Why)})
		return step.Pass, nil
	}
	res.Knee, res.FirstFail, err = searchKnee(ctx, o.From, o.Max, o.Resolution, try)
	outcome := Completed
	switch {
	case ctx.Err() != nil:
		outcome = Interrupted
	case err != nil:
		outcome = "failed: " + err.Error()
	}
	res.Verdict = kneeVerdict(res, o)
	run, werr := s.write(record.Record{
		ID: id, Kind: "knee", Started: started, Outcome: outcome, Params: o, Result: res,
		Phases: []record.Phase{{Name: "knee", Start: started, End: time.Now().UTC()}},
	})
	res.Run = run
	if werr != nil {
		return res, werr
	}
	if outcome == Interrupted {
		return res, nil
	}
	return res, err
}

// worstMutatingP99 is the catalog's mutating-calls SLI taken over
// [from, to] instead of upstream's 5 minutes, so that one step is judged
// on its own requests: the worst resource and verb.
func worstMutatingP99(ctx context.Context, prom *metrics.Prometheus, from, to time.Time) (*float64, string) {
	q, err := metrics.Lookup("sli-mutating-p99")
	if err != nil {
		return nil, err.Error()
	}
	e := q.Expr
	e.Window = to.Sub(from).Round(time.Second)
	series, err := prom.Range(ctx, e.PromQL(), to, to, time.Second)
	if err != nil {
		return nil, err.Error()
	}
	var worst *float64
	where := ""
	for _, s := range series {
		for _, p := range s.Points {
			if worst == nil || p[1] > *worst {
				v := p[1]
				worst, where = &v, s.Labels["verb"]+" "+s.Labels["resource"]
				if sub := s.Labels["subresource"]; sub != "" {
					where += "/" + sub
				}
			}
		}
	}
	return worst, where
}

// judgeKneeStep passes a step that kept minRatio of its creates and, when
// the SLI was measured and createsOnly is false, kept it within 1 s.
func judgeKneeStep(s KneeStep, minRatio float64, createsOnly bool) (bool, string) {
	why := fmt.Sprintf("%.1f%% of creates (need %.0f%%), %d × 429, create p99 %.2fs", 100*s.CreateRatio, 100*minRatio, s.Errors429, s.CreateP99)
	pass := s.CreateRatio >= minRatio
	if s.MutatingP99 != nil {
		why += fmt.Sprintf(", mutating SLI p99 %.2fs (%s)", *s.MutatingP99, s.Where)
		if createsOnly {
			why += ", not judged"
		} else {
			pass = pass && *s.MutatingP99 <= 1
		}
	}
	if pass {
		return true, "pass: " + why
	}
	return false, "fail: " + why
}

func kneeVerdict(r KneeResult, o KneeOptions) string {
	switch {
	case len(r.Steps) == 0:
		return "no step ran"
	case r.Knee == 0:
		return fmt.Sprintf("no knee found: the first step (%g pods/s) already failed; lower --from", o.From)
	case r.FirstFail == 0:
		return fmt.Sprintf("no knee up to --max %g pods/s: every step passed", o.Max)
	}
	return fmt.Sprintf("knee %g pods/s (first failure %g pods/s) after %d steps of %s", r.Knee, r.FirstFail, len(r.Steps), o.StepDuration)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
