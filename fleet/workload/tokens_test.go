package workload

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Requests let through by client-go's own token bucket replay as drawn
// to its burst and no deeper, however many more were held; requests
// fewer than the burst sent at once replay as drawn by their number;
// requests at the refill rate draw one token.
func TestDrawTokens(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	phases := []record.Phase{{Name: "train", Start: t0, End: t0.Add(time.Hour)}}
	limit := TokenBucket{QPS: 50, Burst: 200}

	clock := testingclock.NewFakeClock(t0)
	limiter := flowcontrol.NewTokenBucketRateLimiterWithClock(float32(limit.QPS), limit.Burst, clock)
	var paced []time.Time
	for range 500 { // all asked for at t0: Accept sleeps the fake clock on to each one's turn
		limiter.Accept()
		paced = append(paced, clock.Now())
	}
	d := drawTokens(paced, limit, phases)["train"]
	if d == nil || d.Requests != 500 || math.Abs(d.Drawn-200) > 1e-6 || d.QPS != 50 || d.Burst != 200 {
		t.Errorf("500 requests through a 200-token limiter: %+v; want 200 drawn", d)
	}
	if last := paced[len(paced)-1].Sub(t0).Seconds(); math.Abs(last-6) > 1e-6 {
		t.Errorf("the limiter let the last through at %g s, want 6 s (300 held at 50 a second)", last)
	}

	// 50 at once, 100 s idle (refilled to the burst and no more), then
	// 150 at once: 150 drawn at 100 s, not 50 at 0 s.
	var twice []time.Time
	for i := range 150 {
		if i < 50 {
			twice = append(twice, t0.Add(time.Duration(i)*time.Microsecond))
		}
		twice = append(twice, t0.Add(100*time.Second+time.Duration(i)*time.Microsecond))
	}
	d = drawTokens(twice, limit, phases)["train"]
	if d.Requests != 200 || math.Abs(d.Drawn-150) > 0.01 || math.Abs(d.DrawnAt-100) > 0.001 {
		t.Errorf("50 requests at once, then 150 100 s later: %+v; want 150 drawn at 100 s", d)
	}

	// The log is in the order requests were answered, not received:
	// sorted, 200 requests at 100 a second draw 200 − 50 × 1.99 = 100.5
	// by the last; replayed in the log's order, time would run backwards
	// between them.
	var spread []time.Time
	for i := range 100 {
		spread = append(spread, t0.Add(time.Second+time.Duration(99-i)*10*time.Millisecond), t0.Add(time.Duration(99-i)*10*time.Millisecond))
	}
	d = drawTokens(spread, limit, phases)["train"]
	if math.Abs(d.Drawn-100.5) > 1e-6 || math.Abs(d.DrawnAt-1.99) > 1e-9 {
		t.Errorf("200 requests over 2 s, answered out of order: %+v; want 100.5 drawn at 1.99 s", d)
	}

	var steady []time.Time
	for i := range 100 {
		steady = append(steady, t0.Add(time.Duration(i)*20*time.Millisecond))
	}
	if d = drawTokens(steady, limit, phases)["train"]; math.Abs(d.Drawn-1) > 1e-6 {
		t.Errorf("requests at 50 a second: %+v; want 1 drawn", d)
	}
}

// The bucket carries from before a phase into it: requests out of every
// phase draw it and count in none; a phase without requests is absent.
func TestDrawTokensPhases(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	phases := []record.Phase{{Name: "train", Start: t0.Add(time.Second), End: t0.Add(2 * time.Second)}, {Name: "hold", Start: t0.Add(5 * time.Second), End: t0.Add(6 * time.Second)}}
	var times []time.Time
	for range 80 {
		times = append(times, t0) // before the train phase
	}
	for range 30 {
		times = append(times, t0.Add(1500*time.Millisecond))
	}
	got := drawTokens(times, TokenBucket{QPS: 10, Burst: 100}, phases)
	// 80 drawn at 0 s, 15 back by 1.5 s, then 30 more: 95 drawn.
	if d := got["train"]; d == nil || d.Requests != 30 || math.Abs(d.Drawn-95) > 1e-6 || math.Abs(d.DrawnAt-0.5) > 1e-6 {
		t.Errorf("train: %+v; want 30 requests, 95 drawn at 0.5 s", d)
	}
	if _, ok := got["hold"]; ok || len(got) != 1 {
		t.Errorf("phases %v; want only train", got)
	}
}

// The audit log's requests of the scheduler's own client are replayed;
// its event client's, another client's and a request's first stage are
// not.
func TestAuditSchedulerTokens(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sched := "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abcdef/scheduler"
	var lines []string
	for i := range 40 {
		lines = append(lines, auditLine("ResponseComplete", "create", "pods/binding", "p", sched, 201, at(100+i), at(200+i)))
	}
	lines = append(lines,
		auditLine("ResponseComplete", "create", "events", "e", "kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abcdef", 201, at(100), at(101)),
		auditLine("ResponseComplete", "create", "pods", "p", jobAgent, 201, at(100), at(101)),
		auditLine("RequestReceived", "patch", "pods/status", "p", sched, 0, at(100), at(100)))
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var res TrainResult
	phases := []record.Phase{{Name: "train", Start: t0, End: at(1000)}}
	if _, err := recordAudit(&res, path, 0, "ns", auditSpans{}, phases, TokenBucket{QPS: 1, Burst: 100}); err != nil {
		t.Fatal(err)
	}
	if d := res.SchedulerTokens["train"]; d == nil || d.Requests != 40 || d.Drawn < 39.9 || d.Drawn > 40 {
		t.Errorf("tokens %+v; want the scheduler's 40 bindings, about 40 drawn", d)
	}
	res = TrainResult{}
	if _, err := recordAudit(&res, path, 0, "ns", auditSpans{}, phases, TokenBucket{}); err != nil || res.SchedulerTokens != nil {
		t.Errorf("without the scheduler's limits: tokens %v, %v; want none", res.SchedulerTokens, err)
	}
}
