package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
