package metrics

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Kind is the shape of a catalog query. The catalog needs only these four,
// so both sources work from this structured form rather than from PromQL
// text: Prometheus gets the PromQL generated from it, the direct scrape
// source evaluates it itself.
type Kind string

// The shapes of catalog queries.
const (
	// QuantileOfRate is histogram_quantile(q, sum(rate(m_bucket{…}[w])) by (…, le)).
	QuantileOfRate Kind = "quantile-of-rate"
	// SumOfRate is sum(rate(m{…}[w])) by (…).
	SumOfRate Kind = "rate"
	// GaugeSum is sum(m{…}) by (…).
	GaugeSum Kind = "gauge-sum"
	// GaugeMax is max(m{…}).
	GaugeMax Kind = "gauge-max"
	// GaugeAvg is avg(m{…}) by (…).
	GaugeAvg Kind = "gauge-avg"
)

// MatchOp is a PromQL label matcher operator.
type MatchOp string

// PromQL's four label matchers.
const (
	Equal     MatchOp = "="
	NotEqual  MatchOp = "!="
	Regexp    MatchOp = "=~"
	NotRegexp MatchOp = "!~"
)

// Matcher selects series by one label, as in PromQL: a missing label
// matches as the empty string and regular expressions are anchored.
type Matcher struct {
	Label string
	Op    MatchOp
	Value string
	re    *regexp.Regexp
}

// Expr is a catalog query in structured form.
type Expr struct {
	Kind Kind
	// Metric is the metric name; for QuantileOfRate the histogram's name
	// without the _bucket suffix.
	Metric   string
	Matchers []Matcher
	// By are the labels the sum keeps (le is implied for quantiles).
	By []string
	// Window is the rate() range.
	Window   time.Duration
	Quantile float64
	// Or, when set, is PromQL's `or`: its series are added where this
	// expression has none with the same labels.
	Or *Expr
}

func eq(label, value string) Matcher    { return Matcher{Label: label, Op: Equal, Value: value} }
func notRe(label, value string) Matcher { return Matcher{Label: label, Op: NotRegexp, Value: value} }
func re(label, value string) Matcher    { return Matcher{Label: label, Op: Regexp, Value: value} }

// PromQL renders the expression as Prometheus evaluates it.
func (e Expr) PromQL() string {
	var s string
	switch e.Kind {
	case QuantileOfRate:
		s = fmt.Sprintf("histogram_quantile(%s, sum(rate(%s[%s]))%s)",
			strconv.FormatFloat(e.Quantile, 'g', -1, 64), e.selector(e.Metric+"_bucket"), model.Duration(e.Window), by(append(append([]string{}, e.By...), "le")))
	case SumOfRate:
		s = fmt.Sprintf("sum(rate(%s[%s]))%s", e.selector(e.Metric), model.Duration(e.Window), by(e.By))
	case GaugeSum:
		s = fmt.Sprintf("sum(%s)%s", e.selector(e.Metric), by(e.By))
	case GaugeMax:
		s = fmt.Sprintf("max(%s)%s", e.selector(e.Metric), by(e.By))
	case GaugeAvg:
		s = fmt.Sprintf("avg(%s)%s", e.selector(e.Metric), by(e.By))
	default:
		s = fmt.Sprintf("<unknown kind %q>", e.Kind)
	}
	if e.Or != nil {
		s += " or " + e.Or.PromQL()
	}
	return s
}

func (e Expr) selector(name string) string {
	if len(e.Matchers) == 0 {
		return name
	}
	parts := make([]string, len(e.Matchers))
	for i, m := range e.Matchers {
		parts[i] = m.Label + string(m.Op) + strconv.Quote(m.Value)
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

func by(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	return " by (" + strings.Join(labels, ", ") + ")"
}

// families lists the metric families the expression reads.
func (e Expr) families() []string {
	out := []string{e.Metric}
	if e.Or != nil {
		out = append(out, e.Or.families()...)
	}
	return out
}

// compile checks the expression and compiles its regular expressions
// the way PromQL does (fully anchored), into copies of its matchers: an
// Expr copied from the catalog shares them, and evaluations may run at
// once.
func (e *Expr) compile() error {
	e.Matchers = append([]Matcher(nil), e.Matchers...)
	if e.Or != nil {
		or := *e.Or
		e.Or = &or
	}
	switch e.Kind {
	case QuantileOfRate, SumOfRate:
		if e.Window <= 0 {
			return fmt.Errorf("%s of %s: window %s must be positive", e.Kind, e.Metric, e.Window)
		}
	case GaugeSum, GaugeMax, GaugeAvg:
	default:
		return fmt.Errorf("unknown kind %q", e.Kind)
	}
	for i := range e.Matchers {
		m := &e.Matchers[i]
		switch m.Op {
		case Equal, NotEqual:
		case Regexp, NotRegexp:
			r, err := regexp.Compile("^(?:" + m.Value + ")$")
			if err != nil {
				return fmt.Errorf("matcher %s%s%q: %w", m.Label, m.Op, m.Value, err)
			}
			m.re = r
		default:
			return fmt.Errorf("unknown matcher operator %q", m.Op)
		}
	}
	if e.Or != nil {
		return e.Or.compile()
	}
	return nil
}

// matches reports whether labels pass every matcher; the expression must
// have been compiled.
func (e Expr) matches(labels map[string]string) bool {
	for _, m := range e.Matchers {
		v := labels[m.Label]
		var ok bool
		switch m.Op {
		case Equal:
			ok = v == m.Value
		case NotEqual:
			ok = v != m.Value
		case Regexp:
			ok = m.re.MatchString(v)
		case NotRegexp:
			ok = !m.re.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	return true
}
