package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Sample scrapes every endpoint at every step, leaves a failed scrape out
// and reports it, and stops when cancelled.
func TestSample(t *testing.T) {
	var n atomic.Int64
	var accept atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		fmt.Fprintf(w, "# TYPE scheduler_schedule_attempts_total counter\nscheduler_schedule_attempts_total{result=\"scheduled\"} %d\n", 10*n.Add(1))
	}))
	defer srv.Close()
	calls := 0
	flaky := Endpoint{Job: "etcd", Fetch: func(context.Context) ([]byte, error) {
		calls++
		if calls == 2 {
			return nil, errors.New("connection refused")
		}
		return []byte("# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes 42\n"), nil
	}}
	var seen []int
	rec, failures, err := Sample(context.Background(), SampleOptions{
		Endpoints: []Endpoint{HTTPEndpoint("kube-scheduler", srv.URL+"/metrics", nil), flaky},
		Period:    200 * time.Millisecond, Step: 100 * time.Millisecond,
		Scraped: func(done, total int, _ time.Time, _ []error) { seen = append(seen, done*10+total) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[13 23 33]" {
		t.Errorf("progress %v, want 3 scrapes of 3", seen)
	}
	if len(failures) != 1 || !strings.Contains(failures[0].Error(), "etcd: connection refused") {
		t.Errorf("failures %v", failures)
	}
	if got := accept.Load(); got != textFormat {
		t.Errorf("Accept %q", got)
	}
	scrapes := rec.Scrapes()
	if len(scrapes) != 3 {
		t.Fatalf("%d scrapes", len(scrapes))
	}
	q, _ := Lookup("etcd-db-size")
	series, err := rec.Range(context.Background(), q.PromQL, scrapes[0], scrapes[2], 0)
	if err != nil {
		t.Fatal(err)
	}
	// The failed second scrape leaves a gap, as in Prometheus.
	if len(series) != 1 || len(series[0].Points) != 2 {
		t.Errorf("etcd-db-size %+v, want points at the first and last scrapes", series)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Sample(ctx, SampleOptions{Endpoints: []Endpoint{flaky}, Period: time.Minute, Step: time.Second}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, _, err := Sample(context.Background(), SampleOptions{Endpoints: []Endpoint{flaky}, Period: time.Second, Step: time.Minute}); err == nil {
		t.Error("a period shorter than a step was accepted")
	}
}

func TestLiveAnswersFromItsWindow(t *testing.T) {
	var n atomic.Int64
	ep := Endpoint{Job: "etcd", Fetch: func(context.Context) ([]byte, error) {
		return fmt.Appendf(nil, "# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes %d\n", n.Add(1)), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	window := 250 * time.Millisecond
	live := StartLive(ctx, []Endpoint{ep}, 50*time.Millisecond, window)
	q, _ := Lookup("etcd-db-size")
	// Wait (without a deadline on speed) until well past one window.
	for n.Load() < 12 {
		time.Sleep(20 * time.Millisecond)
	}
	end := time.Now()
	s, err := live.Range(ctx, q.PromQL, end.Add(-time.Hour), end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || len(s[0].Points) == 0 {
		t.Fatalf("series %+v", s)
	}
	// Old scrapes were forgotten: the first value left is not the first scraped.
	if first := s[0].Points[0][1]; first <= 1 {
		t.Errorf("first value %g: samples older than the window were kept", first)
	}
	if last := s[0].Points[len(s[0].Points)-1][1]; last < 11 {
		t.Errorf("last value %g, want the latest scrapes", last)
	}
}

// CounterSum adds the series whose labels match, reads a counter not
// exposed yet as 0, and refuses a gauge.
func TestCounterSum(t *testing.T) {
	text := `# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 30
scheduler_schedule_attempts_total{profile="other",result="scheduled"} 12
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 7
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 3
`
	e := Endpoint{Job: "kube-scheduler", Fetch: func(context.Context) ([]byte, error) { return []byte(text), nil }}
	got, err := CounterSum(context.Background(), e, "scheduler_schedule_attempts_total", map[string]string{"result": "scheduled"})
	if err != nil || got != 42 {
		t.Errorf("scheduled: %v, %v; want 42", got, err)
	}
	if got, _ := CounterSum(context.Background(), e, "scheduler_schedule_attempts_total", nil); got != 49 {
		t.Errorf("all results: %v, want 49", got)
	}
	if _, err := CounterSum(context.Background(), e, "scheduler_pending_pods", nil); err == nil || !strings.Contains(err.Error(), "scheduler_pending_pods is a gauge, not a counter") {
		t.Errorf("a gauge: %v", err)
	}
	if got, err := CounterSum(context.Background(), e, "no_such_total", nil); err != nil || got != 0 {
		t.Errorf("a counter not exposed yet: %v, %v; want 0", got, err)
	}
	down := Endpoint{Job: "kube-scheduler", Fetch: func(context.Context) ([]byte, error) { return nil, errors.New("connection refused") }}
	if _, err := CounterSum(context.Background(), down, "scheduler_schedule_attempts_total", nil); err == nil || !strings.Contains(err.Error(), "kube-scheduler /metrics: connection refused") {
		t.Errorf("a scrape that fails: %v", err)
	}
}

// HistogramTotals adds each histogram's count and sum by its labels' values
// (an empty one left out of the key), leaves out a histogram not exposed
// yet, and refuses a family of another type.
func TestHistogramTotals(t *testing.T) {
	text := []byte(`# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="DELETE",le="0.1"} 3
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="DELETE",le="+Inf"} 5
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="DELETE"} 2.5
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="DELETE"} 5
rest_client_rate_limiter_duration_seconds_bucket{host="10.0.0.1:6443",verb="DELETE",le="+Inf"} 1
rest_client_rate_limiter_duration_seconds_sum{host="10.0.0.1:6443",verb="DELETE"} 0.5
rest_client_rate_limiter_duration_seconds_count{host="10.0.0.1:6443",verb="DELETE"} 1
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",verb="GET",le="+Inf"} 7
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="GET"} 0.25
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="GET"} 7
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",subresource="",verb="DELETE",le="+Inf"} 4
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="",verb="DELETE"} 0.2
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",subresource="",verb="DELETE"} 4
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",subresource="status",verb="PATCH",le="+Inf"} 2
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",subresource="status",verb="PATCH"} 0.1
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",subresource="status",verb="PATCH"} 2
# TYPE workqueue_depth gauge
workqueue_depth{name="job"} 4
`)
	got, err := HistogramTotals(text, map[string][]string{
		"rest_client_rate_limiter_duration_seconds": {"verb"},
		"workqueue_work_duration_seconds":           {"name"},
		"apiserver_request_duration_seconds":        {"verb", "resource", "subresource"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]Tally{
		"rest_client_rate_limiter_duration_seconds": {"DELETE": {Count: 6, Sum: 3}, "GET": {Count: 7, Sum: 0.25}},
		"apiserver_request_duration_seconds":        {"DELETE pods": {Count: 4, Sum: 0.2}, "PATCH pods status": {Count: 2, Sum: 0.1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v (DELETE over both hosts, keys of the labels' values in their order, no entry for the histogram not exposed)", got, want)
	}
	if _, err := HistogramTotals(text, map[string][]string{"workqueue_depth": {"name"}}); err == nil || !strings.Contains(err.Error(), "workqueue_depth is a gauge, not a histogram") {
		t.Errorf("a gauge: %v", err)
	}
	if d := (Tally{Count: 9, Sum: 4}).Minus(Tally{Count: 6, Sum: 3}); d != (Tally{Count: 3, Sum: 1}) {
		t.Errorf("Minus: %+v, want 3 observations of 1s in all", d)
	}
}

// CounterTotals sums a counter by its labels' values, the empty ones
// left out; a counter the scrape lacks is nil, a histogram an error.
func TestCounterTotals(t *testing.T) {
	f, err := ParseFamilies([]byte(`# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{group="",resource="pods"} 97
apiserver_terminated_watchers_total{group="coordination.k8s.io",resource="leases"} 17
apiserver_terminated_watchers_total{group="",resource="nodes",instance="b"} 60
apiserver_terminated_watchers_total{group="",resource="nodes",instance="a"} 7
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 1
apiserver_request_duration_seconds_sum{verb="GET"} 0.1
apiserver_request_duration_seconds_count{verb="GET"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.CounterTotals("apiserver_terminated_watchers_total", []string{"resource", "group"})
	want := map[string]Tally{"pods": {Count: 97}, "leases coordination.k8s.io": {Count: 17}, "nodes": {Count: 67}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if got, err := f.CounterTotals("workqueue_adds_total", nil); got != nil || err != nil {
		t.Errorf("a counter the scrape lacks: %v, %v; want nil, no error", got, err)
	}
	if _, err := f.CounterTotals("apiserver_request_duration_seconds", nil); err == nil || !strings.Contains(err.Error(), "not a counter") {
		t.Errorf("a histogram read as a counter: %v; want an error", err)
	}
}

// A histogram's finite buckets are summed over its series by upper
// bound; one the text lacks is nil, a gauge is an error.
func TestHistogramBuckets(t *testing.T) {
	text := []byte(`# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="6.399999999999999e-08"} 3
go_sched_latencies_seconds_bucket{le="0.010485759999999998"} 7
go_sched_latencies_seconds_bucket{le="+Inf"} 8
go_sched_latencies_seconds_sum 0.5
go_sched_latencies_seconds_count 8
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 2
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 2
apiserver_request_duration_seconds_sum{verb="GET"} 0.1
apiserver_request_duration_seconds_count{verb="GET"} 2
apiserver_request_duration_seconds_bucket{verb="PUT",le="0.1"} 1
apiserver_request_duration_seconds_bucket{verb="PUT",le="+Inf"} 4
apiserver_request_duration_seconds_sum{verb="PUT"} 2
apiserver_request_duration_seconds_count{verb="PUT"} 4
# TYPE go_goroutines gauge
go_goroutines 12
`)
	f, err := ParseFamilies(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.HistogramBuckets("go_sched_latencies_seconds")
	want := map[string]Tally{"6.399999999999999e-08": {Count: 3}, "0.010485759999999998": {Count: 7}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("one series: %v, %v; want %v", got, err, want)
	}
	got, err = f.HistogramBuckets("apiserver_request_duration_seconds")
	want = map[string]Tally{"0.1": {Count: 3}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("two series: %v, %v; want %v", got, err, want)
	}
	if got, err := f.HistogramBuckets("go_sched_pauses_total_gc_seconds"); got != nil || err != nil {
		t.Errorf("absent: %v, %v; want nil, nil", got, err)
	}
	if _, err := f.HistogramBuckets("go_goroutines"); err == nil || !strings.Contains(err.Error(), "go_goroutines is a gauge, not a histogram") {
		t.Errorf("a gauge: %v", err)
	}
}
