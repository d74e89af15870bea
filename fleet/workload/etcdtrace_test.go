package workload

import (
	"bytes"
	"context"
	"math"
	"net"
	"runtime"
	"runtime/trace"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	xtrace "golang.org/x/exp/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestHandlerMethod(t *testing.T) {
	for fn, want := range map[string]string{
		"go.etcd.io/etcd/api/v3/etcdserverpb._KV_Txn_Handler":                "Txn",
		"go.etcd.io/etcd/api/v3/etcdserverpb._KV_Range_Handler.func1":        "Range",
		"go.etcd.io/etcd/api/v3/etcdserverpb._Lease_LeaseGrant_Handler":      "LeaseGrant",
		"go.etcd.io/etcd/api/v3/etcdserverpb.(*kVClient).Txn":                "",
		"google.golang.org/grpc/health/grpc_health_v1._Health_Check_Handler": "",
	} {
		if got := handlerMethod(fn); got != want {
			t.Errorf("handlerMethod(%q) = %q, want %q", fn, got, want)
		}
	}
}

// TestEtcdTraceEvents reads made-up events: a connection's reader woken
// by bytes reads and starts two calls; the first waits for its
// request's frames (which the reader reads, then hands over), for raft,
// for quota to send, then wakes the writer, which writes after the call
// ends; the second ends without stopping in a handler.
func TestEtcdTraceEvents(t *testing.T) {
	const (
		R, W, B, S, NE = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoSyscall, xtrace.GoNotExist
	)
	reader := []string{"internal/poll.(*FD).Read", "google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams", "google.golang.org/grpc.(*Server).serveStreams"}
	writer := []string{"google.golang.org/grpc/internal/transport.(*controlBuffer).get", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"}
	write := []string{"syscall.write", "internal/poll.(*FD).Write", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"}
	start := []string{"google.golang.org/grpc.(*Server).serveStreams.func2.1"}
	handler := func(top string) []string {
		return []string{top, "go.etcd.io/etcd/api/v3/etcdserverpb._KV_Txn_Handler", "google.golang.org/grpc.(*Server).processUnaryRPC", start[0]}
	}
	receive := []string{"google.golang.org/grpc/internal/transport.(*recvBufferReader).Read", "google.golang.org/grpc.recvAndDecompress", "google.golang.org/grpc.(*Server).processUnaryRPC", start[0]}
	s := newEtcdSummary()
	for _, c := range []why{
		{change: change{0, 0, 1, NE, R, reader}},
		{change: change{0, 0, 2, NE, R, writer}},
		{change: change{0.2, 2, 2, R, B, nil}},
		{change: change{0.3, 2, 2, B, W, writer}, reason: "select"},
		{change: change{0.5, 1, 1, R, B, nil}},
		{change: change{1, 1, 1, B, W, reader}, reason: "network"},
		{change: change{2, xtrace.NoGoroutine, 1, W, R, nil}},
		{change: change{3, 1, 1, R, B, nil}},
		{change: change{3.2, 1, 1, B, S, []string{"syscall.read", reader[0], reader[1]}}},
		{change: change{3.5, 1, 1, S, B, nil}},
		{change: change{4, 1, 3, NE, R, start}}, // an arrival of 2ms
		{change: change{4.5, 1, 4, NE, R, start}},
		{change: change{5, 3, 3, R, B, nil}},
		{change: change{5.5, 4, 4, R, B, nil}},
		{change: change{6, 3, 3, B, W, receive}, reason: "select"},
		{change: change{6, 4, 4, B, NE, nil}}, // never in a handler: unknown
		{change: change{6.2, 1, 1, B, S, []string{"syscall.read", reader[0], reader[1]}}},
		{change: change{6.6, 1, 1, S, B, nil}},
		{change: change{7, 1, 3, W, R, nil}}, // 0.4ms after the reader read its frames
		{change: change{7.5, 3, 3, R, B, nil}},
		{change: change{8, 3, 3, B, W, handler("go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).processInternalRaftRequestOnce")}, reason: "select"},
		{change: change{10, 5, 3, W, R, nil}},
		{change: change{10.5, 3, 3, R, B, nil}},
		{change: change{11, 3, 3, B, W, handler("google.golang.org/grpc/internal/transport.(*writeQuota).get")}, reason: "select"},
		{change: change{12, 1, 3, W, R, nil}},
		{change: change{12.5, 3, 3, R, B, nil}},
		{change: change{13, 3, 2, W, R, nil}}, // the call hands the writer its answer
		{change: change{13.5, 3, 3, B, NE, nil}},
		{change: change{14, 2, 2, R, B, nil}},
		{change: change{14.5, 2, 2, B, S, write}},
		{change: change{15, 2, 2, S, B, nil}}, // an answer sent 1.5ms after its call ended
		{change: change{15.5, 2, 2, B, S, write}},
		{change: change{16, 2, 2, S, B, nil}}, // not woken by a call: none
	} {
		s.transition(c.goChange())
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	txn, unknown := s.out.Calls["Txn"], s.out.Calls["unknown"]
	if txn == nil || unknown == nil || len(s.out.Calls) != 2 {
		t.Fatalf("calls = %+v, want a Txn and an unknown", s.out.Calls)
	}
	want := TracedCalls{Count: 1, Seconds: 0.0095, FirstWaitToRunSeconds: 0.001, WaitToRunSeconds: 0.0025, RunningSeconds: 0.003, ReceivingSeconds: 0.001,
		ReceivingAfterReadSeconds: 0.0004, SendingSeconds: 0.001, BlockedSeconds: 0.002, AfterReadSeconds: 0.0005}
	if got := *txn; got.Count != 1 || !near(got.Seconds, want.Seconds) || !near(got.FirstWaitToRunSeconds, want.FirstWaitToRunSeconds) ||
		!near(got.WaitToRunSeconds, want.WaitToRunSeconds) || !near(got.RunningSeconds, want.RunningSeconds) || !near(got.ReceivingSeconds, want.ReceivingSeconds) ||
		!near(got.ReceivingAfterReadSeconds, want.ReceivingAfterReadSeconds) || !near(got.SendingSeconds, want.SendingSeconds) ||
		!near(got.BlockedSeconds, want.BlockedSeconds) || !near(got.AfterReadSeconds, want.AfterReadSeconds) {
		t.Errorf("Txn = %+v, want %+v", got, want)
	}
	if got := *unknown; got.Count != 1 || !near(got.Seconds, 0.0015) || !near(got.WaitToRunSeconds, 0.001) || !near(got.RunningSeconds, 0.0005) || !near(got.AfterReadSeconds, 0.001) {
		t.Errorf("unknown = %+v, want 1.5ms: 1 waiting to run, 0.5 running; 1ms after the read", got)
	}
	for kind, w := range map[string]struct {
		n int
		s float64
	}{"grpc reader": {2, 0.0015}, "grpc writer": {2, 0.0012}, "calls": {5, 0.0035}} {
		if got := s.out.WaitsToRun[kind]; got == nil || got.Count != w.n || !near(got.Seconds, w.s) {
			t.Errorf("waits to run of %s = %+v, want %d, %gs", kind, got, w.n, w.s)
		}
	}
	if a := s.out.Arrivals; a.Count != 1 || !near(a.Seconds, 0.002) {
		t.Errorf("arrivals = %+v, want one of 2ms", a)
	}
	if a := s.out.AnswerSends; a.Count != 1 || !near(a.Seconds, 0.0015) {
		t.Errorf("answer sends = %+v, want one of 1.5ms", a)
	}
}

// slowKV is an etcd KV service whose Txn sleeps.
type slowKV struct {
	etcdserverpb.UnimplementedKVServer
	txn time.Duration
}

func (k *slowKV) Txn(context.Context, *etcdserverpb.TxnRequest) (*etcdserverpb.TxnResponse, error) {
	time.Sleep(k.txn)
	return &etcdserverpb.TxnResponse{}, nil
}

// Range yields once, so that its goroutine stops in the handler, as a
// linearizable read does waiting for its index: one that never stops
// there is "unknown".
func (k *slowKV) Range(context.Context, *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	runtime.Gosched()
	return &etcdserverpb.RangeResponse{}, nil
}

// TestSummariseEtcdTrace traces real gRPC calls to etcd's generated KV
// service over loopback TCP: the calls are found by method, a Txn's
// sleep is blocked time, and the connection's reader and writer are
// known.
func TestSummariseEtcdTrace(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	const sleep = 20 * time.Millisecond
	etcdserverpb.RegisterKVServer(srv, &slowKV{txn: sleep})
	go srv.Serve(l)
	defer srv.Stop()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kv := etcdserverpb.NewKVClient(conn)
	ctx := context.Background()
	if _, err := kv.Range(ctx, &etcdserverpb.RangeRequest{}); err != nil { // connected before the trace
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const n = 4
	for range n {
		if _, err := kv.Txn(ctx, &etcdserverpb.TxnRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Range(ctx, &etcdserverpb.RangeRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the last call's goroutine ends after its answer
	trace.Stop()

	got, err := summariseEtcdTrace(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	txn, rng := got.Calls["Txn"], got.Calls["Range"]
	if txn == nil || rng == nil || txn.Count != n || rng.Count != n {
		for m, c := range got.Calls {
			t.Logf("%s: %+v", m, *c)
		}
		t.Fatalf("want %d Txns and %d Ranges", n, n)
	}
	if txn.BlockedSeconds < n*sleep.Seconds() {
		t.Errorf("Txn blocked %.3fs, want at least its sleeps' %.3fs", txn.BlockedSeconds, n*sleep.Seconds())
	}
	if txn.AfterReadSeconds+rng.AfterReadSeconds <= 0 {
		t.Errorf("no call started after a read seen: Txn %+v, Range %+v", txn, rng)
	}
	for method, c := range got.Calls {
		if c.ReceivingAfterReadSeconds > c.ReceivingSeconds+1e-9 {
			t.Errorf("%s = %+v: received after the read longer than received", method, c)
		}
		if sum := c.WaitToRunSeconds + c.RunningSeconds + c.ReceivingSeconds + c.SendingSeconds + c.BlockedSeconds; math.Abs(sum-c.Seconds) > 1e-9 || c.FirstWaitToRunSeconds > c.WaitToRunSeconds {
			t.Errorf("%s = %+v: the parts add up to %g, or the first wait exceeds all", method, c, sum)
		}
	}
	for _, kind := range []string{"calls", "grpc reader", "grpc writer"} {
		if got.WaitsToRun[kind] == nil {
			t.Errorf("no waits to run of %s: %v", kind, got.WaitsToRun)
		}
	}
	// Each call's bytes wake a reader parked on its connection, and each
	// answer a writer idle since the last; how many of either the trace
	// shows depends on scheduling, but not none.
	if got.Arrivals.Count == 0 || got.Arrivals.Count > 2*n {
		t.Errorf("arrivals = %+v, want 1 to %d", got.Arrivals, 2*n)
	}
	if got.AnswerSends.Count == 0 {
		t.Errorf("answer sends = %+v, want some", got.AnswerSends)
	}
}
