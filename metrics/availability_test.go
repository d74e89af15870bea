package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiserverText is a minimal apiserver /metrics with one SLI histogram.
const apiserverText = `# TYPE apiserver_request_sli_duration_seconds histogram
apiserver_request_sli_duration_seconds_bucket{verb="POST",scope="resource",resource="pods",subresource="",le="0.1"} %d
apiserver_request_sli_duration_seconds_bucket{verb="POST",scope="resource",resource="pods",subresource="",le="+Inf"} %d
apiserver_request_sli_duration_seconds_sum{verb="POST",scope="resource",resource="pods",subresource=""} 1
apiserver_request_sli_duration_seconds_count{verb="POST",scope="resource",resource="pods",subresource=""} %d
`

// refusedURL is an address nothing listens on: a listener opened and
// closed again.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/metrics"
}

func statusServer(t *testing.T, code int) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, http.StatusText(code), code)
	}))
	t.Cleanup(s.Close)
	return s.URL + "/metrics"
}

// TestSampleMarksHiddenComponents scrapes a working apiserver next to a
// scheduler that refuses connections, a controller-manager that answers
// 403 and an etcd that answers 404: those three are not available, the
// apiserver's SLI has values.
func TestSampleMarksHiddenComponents(t *testing.T) {
	n := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n += 10
		fmt.Fprintf(w, apiserverText, n, n, n)
	}))
	defer api.Close()
	rec, failures, err := Sample(context.Background(), SampleOptions{
		Endpoints: []Endpoint{
			HTTPEndpoint("kube-apiserver", api.URL+"/metrics", nil),
			HTTPEndpoint("kube-scheduler", refusedURL(t), nil),
			HTTPEndpoint("kube-controller-manager", statusServer(t, http.StatusForbidden), nil),
			HTTPEndpoint("etcd", statusServer(t, http.StatusNotFound), nil),
		},
		Period: 20 * time.Millisecond, Step: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(failures) != 9 {
		t.Errorf("%d failures, want 9 (3 components × 3 scrapes): %v", len(failures), failures)
	}
	a := rec.Availability(context.Background())
	want := map[string]string{
		ComponentScheduler:         "scheduler /metrics unreachable: ",
		ComponentControllerManager: "controller-manager /metrics unreachable: 403 Forbidden",
		ComponentEtcd:              "etcd /metrics unreachable: 404 Not Found",
	}
	if len(a) != len(want) {
		t.Errorf("availability %v, want %d components marked", a, len(want))
	}
	for c, prefix := range want {
		if !strings.HasPrefix(a[c], prefix) {
			t.Errorf("%s: %q, want it to start %q", c, a[c], prefix)
		}
	}
	if !strings.Contains(a[ComponentScheduler], "refused") {
		t.Errorf("scheduler: %q, want it to say the connection was refused", a[ComponentScheduler])
	}
	q, _ := Lookup("sli-mutating-p99")
	if _, ok := a.Reason(q); ok {
		t.Errorf("the apiserver's SLI is marked not available: %v", a)
	}
	s, err := rec.Range(context.Background(), q.PromQL, time.Now().Add(-time.Minute), time.Now(), time.Second)
	if err != nil || len(s) == 0 {
		t.Errorf("apiserver SLI: %v, %v; want series", s, err)
	}
	sched, _ := Lookup("scheduler-throughput")
	if why, ok := a.Reason(sched); !ok || !strings.Contains(NotAvailable(why), "not available on this cluster (scheduler /metrics unreachable") {
		t.Errorf("scheduler-throughput: %q %v", why, ok)
	}
}

// A declared hidden component is never fetched and is no failure.
func TestSampleHonoursDeclaredHidden(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, apiserverText, 1, 1, 1) }))
	defer api.Close()
	fetched := false
	rec, failures, err := Sample(context.Background(), SampleOptions{
		Endpoints: []Endpoint{
			HTTPEndpoint("kube-apiserver", api.URL+"/metrics", nil),
			{Job: "etcd", Hidden: "etcd /metrics hidden: attached with --metrics apiserver-only", Fetch: func(context.Context) ([]byte, error) {
				fetched = true
				return nil, nil
			}},
		},
		Period: 10 * time.Millisecond, Step: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if fetched || len(failures) != 0 {
		t.Errorf("fetched %v, failures %v: a hidden endpoint is neither fetched nor failed", fetched, failures)
	}
	if got := rec.Availability(context.Background())[ComponentEtcd]; got != "etcd /metrics hidden: attached with --metrics apiserver-only" {
		t.Errorf("etcd: %q", got)
	}
}

func TestReachability(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	tests := []struct {
		name   string
		scrape []error
		hidden bool
	}{
		{"refused", []error{refused, refused}, true},
		{"answered once, then refused: down, not hidden", []error{nil, refused}, false},
		{"refused, then answered", []error{refused, nil}, false},
		{"500s are failed scrapes, not a hidden component", []error{&StatusError{Code: 500, Status: "500 Internal Server Error"}}, false},
		{"a timeout is a failed scrape", []error{context.DeadlineExceeded}, false},
		{"403", []error{&StatusError{Code: 403, Status: "403 Forbidden"}}, true},
		{"401", []error{&StatusError{Code: 401, Status: "401 Unauthorized"}}, true},
		{"apiserver proxy 403", []error{apierrors.NewForbidden(schema.GroupResource{Resource: "pods/proxy"}, "kube-scheduler-x", errors.New("no"))}, true},
		{"apiserver proxy 404", []error{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "kube-scheduler-x")}, true},
		{"apiserver 503 refused", []error{apierrors.NewServiceUnavailable("error trying to reach service: dial tcp 10.0.0.1:10259: connect: connection refused")}, true},
		{"apiserver 500", []error{apierrors.NewInternalError(errors.New("boom"))}, false},
		{"declared", []error{&HiddenError{Reason: "declared"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reachability
			for _, err := range tt.scrape {
				r.scraped("kube-scheduler", err)
			}
			why, hidden := r.availability()[ComponentScheduler]
			if hidden != tt.hidden {
				t.Errorf("hidden %v (%q), want %v", hidden, why, tt.hidden)
			}
		})
	}
}

func TestPrometheusTargetErrors(t *testing.T) {
	tests := []struct {
		lastError string
		hidden    bool
	}{
		{`Get "https://127.0.0.1:10259/metrics": dial tcp 127.0.0.1:10259: connect: connection refused`, true},
		{"server returned HTTP status 403 Forbidden", true},
		{"server returned HTTP status 404 Not Found", true},
		{"context deadline exceeded", false},
		{"server returned HTTP status 500 Internal Server Error", false},
	}
	for _, tt := range tests {
		if _, hidden := hiddenWhyText(ComponentScheduler, tt.lastError); hidden != tt.hidden {
			t.Errorf("%q: hidden %v, want %v", tt.lastError, hidden, tt.hidden)
		}
	}
}

func TestEveryQueryHasAComponent(t *testing.T) {
	known := map[string]bool{ComponentAPIServer: true, ComponentScheduler: true, ComponentControllerManager: true, ComponentEtcd: true, ComponentKwok: true}
	for _, q := range Catalog {
		if !known[q.Component] {
			t.Errorf("%s: component %q", q.ID, q.Component)
		}
	}
	for job, want := range map[string]string{"kube-apiserver": ComponentAPIServer, "kube-scheduler": ComponentScheduler, "kube-controller-manager": ComponentControllerManager, "etcd": ComponentEtcd, "kwok-controller": ComponentKwok, "node-exporter": ""} {
		if got := ComponentOfJob(job); got != want {
			t.Errorf("job %s: %q, want %q", job, got, want)
		}
	}
}
