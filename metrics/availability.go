package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The components a catalog query's series come from (Query.Component).
// On managed control planes only the apiserver's /metrics is usually
// reachable; a query whose component is hidden is "not available on this
// cluster", which is neither "no data yet" nor a real zero.
const (
	ComponentAPIServer         = "apiserver"
	ComponentScheduler         = "scheduler"
	ComponentControllerManager = "controller-manager"
	ComponentEtcd              = "etcd"
	ComponentKwok              = "kwok"
	// ComponentWatch is what GhostFleet measures itself from its
	// informers (pod startup): it needs no component's /metrics.
	ComponentWatch = "watch"
)

// HiddenComponents are the control plane components whose /metrics a
// managed control plane may hide; the apiserver's is always there.
var HiddenComponents = []string{ComponentScheduler, ComponentControllerManager, ComponentEtcd}

// ComponentOfJob is the component a scrape job (Prometheus's job label,
// or a direct endpoint's Job) reads: kube-scheduler → scheduler. Empty
// when the job is none of them.
func ComponentOfJob(job string) string {
	j := strings.ToLower(job)
	switch {
	case strings.Contains(j, "apiserver"):
		return ComponentAPIServer
	case strings.Contains(j, "scheduler"):
		return ComponentScheduler
	case strings.Contains(j, "controller-manager"), strings.Contains(j, "controllermanager"):
		return ComponentControllerManager
	case strings.Contains(j, "etcd"):
		return ComponentEtcd
	case strings.Contains(j, "kwok"):
		return ComponentKwok
	}
	return ""
}

// Availability says which components' /metrics cannot be read on the
// current target, and why ("scheduler /metrics unreachable: connection
// refused"). A component not in it is available, or not known to be
// hidden.
type Availability map[string]string

// Reason is why q's component cannot be read; ok is false when it can
// (or nothing says it cannot).
func (a Availability) Reason(q Query) (reason string, ok bool) {
	reason, ok = a[q.Component]
	return reason, ok
}

// Components lists the unavailable components, sorted.
func (a Availability) Components() []string {
	out := make([]string, 0, len(a))
	for c := range a {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// NotAvailable is how snapshots, reports and the console say it:
// "not available on this cluster (scheduler /metrics unreachable: …)".
func NotAvailable(reason string) string {
	return "not available on this cluster (" + reason + ")"
}

// AvailabilitySource is a range source that knows which components it
// cannot read: the direct scrape source (from its scrapes) and
// Prometheus (from its targets).
type AvailabilitySource interface {
	Availability(ctx context.Context) Availability
}

// AvailabilityOf asks src, when it can tell; nil otherwise.
func AvailabilityOf(ctx context.Context, src any) Availability {
	if s, ok := src.(AvailabilitySource); ok {
		return s.Availability(ctx)
	}
	return nil
}

// HiddenError is a component's /metrics that is not there to scrape:
// declared hidden, or found missing. Endpoint.Hidden returns one.
type HiddenError struct{ Reason string }

func (e *HiddenError) Error() string { return e.Reason }

// StatusError is an HTTP answer other than 200 from a /metrics endpoint.
type StatusError struct {
	URL    string
	Code   int
	Status string // "403 Forbidden"
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %s: %s", e.URL, e.Status, e.Body)
}

// Unreachable says why err means component's /metrics is not reachable on
// this cluster at all — refused or unroutable connections, 401, 403 and
// 404, or an endpoint declared hidden — rather than a scrape that failed
// once (a timeout, a 500): those leave a gap in the series, not a
// verdict on the cluster. ok is false for them.
func Unreachable(component string, err error) (reason string, ok bool) {
	if err == nil {
		return "", false
	}
	var h *HiddenError
	if errors.As(err, &h) {
		return h.Reason, true
	}
	what := component + " /metrics unreachable: "
	var se *StatusError
	if errors.As(err, &se) && hiddenStatus(se.Code) {
		return what + se.Status, true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		if hiddenStatus(code) {
			return what + fmt.Sprintf("%d %s", code, http.StatusText(code)), true
		}
		// The apiserver proxying to a pod says why it could not.
		if msg := status.Status().Message; strings.Contains(msg, "connection refused") {
			return what + "connection refused (through the apiserver's proxy)", true
		}
		return "", false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return what + "connection refused", true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && !op.Timeout() {
		return what + op.Err.Error(), true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return what + "no such host " + dns.Name, true
	}
	return "", false
}

func hiddenStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound
}

// hiddenWhyText is Unreachable for an error Prometheus reports as text
// (a target's lastError).
func hiddenWhyText(component, lastError string) (string, bool) {
	for _, s := range []string{"connection refused", "no route to host", "no such host", "401 Unauthorized", "403 Forbidden", "404 Not Found"} {
		if strings.Contains(lastError, s) {
			return component + " /metrics unreachable: " + s + " (Prometheus's last scrape)", true
		}
	}
	return "", false
}

// reachability follows each component's scrapes: a component that
// answered once is available (a later failure is a gap, a component
// down, not a hidden one); one that never answered and whose latest
// failure says it is not there is unavailable.
type reachability struct {
	answered map[string]bool
	hidden   map[string]string
}

func (r *reachability) scraped(job string, err error) {
	c := ComponentOfJob(job)
	if c == "" {
		return
	}
	if r.answered == nil {
		r.answered, r.hidden = map[string]bool{}, map[string]string{}
	}
	if err == nil {
		r.answered[c] = true
		delete(r.hidden, c)
		return
	}
	if r.answered[c] {
		return
	}
	if why, ok := Unreachable(c, err); ok {
		r.hidden[c] = why
	} else {
		delete(r.hidden, c) // failing, not known to be hidden
	}
}

func (r *reachability) availability() Availability {
	out := Availability{}
	for c, why := range r.hidden {
		out[c] = why
	}
	return out
}
