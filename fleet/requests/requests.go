// Package requests counts every API request a run sends, at the HTTP
// transport, and keeps client-go from retrying any of them: a 429 from
// API Priority and Fairness is a finding to report, not noise to retry
// away.
package requests

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"sync"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// Error kinds, the same in every run's record.
const (
	ErrTooManyRequests = "429" // APF (or max-inflight) rejected the request
	ErrClient          = "4xx" // any other 4xx: conflict, not found, forbidden…
	ErrServer          = "5xx"
	// ErrEtcdNoSpace is a 5xx whose cause is etcd's NOSPACE alarm ("mvcc:
	// database space exceeded"): every write fails until the alarm is
	// recovered from, so it is told apart from other server errors.
	ErrEtcdNoSpace = "etcd-nospace"
	ErrTimeout     = "timeout"
	ErrConnection  = "connection"
	ErrOther       = "other"
)

// Stats is what a run's requests met, by HTTP method (POST, DELETE, GET,
// PUT, PATCH: the verbs apiserver_request_sli_duration_seconds uses for
// mutating calls). No request is ever retried, so every 429 here is one
// the server sent and the run lost.
type Stats struct {
	// Sent counts the requests that reached the transport, by method.
	Sent map[string]int `json:"sent"`
	// Succeeded counts the 2xx answers over all methods.
	Succeeded int `json:"succeeded"`
	// Errors counts failed requests by kind over all methods;
	// ErrorsByVerb splits them per method.
	Errors       map[string]int            `json:"errors"`
	ErrorsByVerb map[string]map[string]int `json:"errorsByVerb,omitempty"`
	// Rejected is Errors["429"]: the rejections of API Priority and
	// Fairness (or of the max-inflight filter when APF is off).
	Rejected int `json:"rejected429"`
	// Cancelled counts requests cut short by the run's own cancellation
	// (Ctrl-C, esc): not the server's error, so not in Errors.
	Cancelled int `json:"cancelled,omitempty"`
}

// Failed is the number of requests that failed, over all kinds.
func (s Stats) Failed() int {
	n := 0
	for _, c := range s.Errors {
		n += c
	}
	return n
}

// Counter counts the requests sent through the transports it wraps.
type Counter struct {
	mu        sync.Mutex
	sent      map[string]int
	succeeded int
	errors    map[string]map[string]int
	cancelled int
}

// NewCounter returns an empty counter.
func NewCounter() *Counter {
	return &Counter{sent: map[string]int{}, errors: map[string]map[string]int{}}
}

// Configure makes cfg's clients count their requests on c and never
// retry them.
func (c *Counter) Configure(cfg *rest.Config) {
	cfg.Wrap(c.Wrap)
}

// Wrap returns a transport that counts every request on c. It removes
// Retry-After from 429 and 5xx answers after counting them: client-go's
// REST client otherwise re-sends such a request up to ten times and the
// run would see latency instead of the rejection.
func (c *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{c: c, next: rt}
}

type roundTripper struct {
	c    *Counter
	next http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	kind := ""
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		r.c.record(req.Method, "", true)
		return resp, err
	case err != nil:
		kind = transportKind(err)
	default:
		kind = statusKind(resp.StatusCode)
		if kind == ErrServer && peekNoSpace(resp) {
			kind = ErrEtcdNoSpace
		}
		if kind == ErrTooManyRequests || kind == ErrServer || kind == ErrEtcdNoSpace {
			resp.Header.Del("Retry-After")
		}
	}
	r.c.record(req.Method, kind, false)
	return resp, err
}

func (c *Counter) record(method, kind string, cancelled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[method]++
	switch {
	case cancelled:
		c.cancelled++
	case kind == "":
		c.succeeded++
	default:
		if c.errors[method] == nil {
			c.errors[method] = map[string]int{}
		}
		c.errors[method][kind]++
	}
}

// Stats returns a copy of what was counted so far.
func (c *Counter) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Sent: maps.Clone(c.sent), Succeeded: c.succeeded, Errors: map[string]int{}, Cancelled: c.cancelled}
	if len(c.errors) > 0 {
		s.ErrorsByVerb = map[string]map[string]int{}
	}
	for verb, kinds := range c.errors {
		s.ErrorsByVerb[verb] = maps.Clone(kinds)
		for k, n := range kinds {
			s.Errors[k] += n
		}
	}
	s.Rejected = s.Errors[ErrTooManyRequests]
	return s
}

// statusKind names an HTTP status's error kind, "" for success.
func statusKind(code int) string {
	switch {
	case code == http.StatusTooManyRequests:
		return ErrTooManyRequests
	case code == http.StatusGatewayTimeout: // the apiserver's own request timeout
		return ErrTimeout
	case code >= 500:
		return ErrServer
	case code >= 400:
		return ErrClient
	case code >= 300:
		return ErrOther
	}
	return ""
}

func transportKind(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	case errors.As(err, new(*net.OpError)), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return ErrConnection
	}
	return ErrOther
}

// Classify names the kind of an error a client call returned.
func Classify(err error) string {
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return ErrTimeout
	case apierrors.IsTooManyRequests(err):
		return ErrTooManyRequests
	case errors.As(err, &status) && IsEtcdNoSpace(status.Status().Message):
		return ErrEtcdNoSpace
	case errors.As(err, &status):
		if kind := statusKind(int(status.Status().Code)); kind != "" {
			return kind
		}
	}
	return transportKind(err)
}
