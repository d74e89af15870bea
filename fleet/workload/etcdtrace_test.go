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
// by bytes reads and starts two calls. The first waits for its
// request's frames (which the reader reads, then hands over: the
// request's least starts at that read), for raft, for quota to send,
// then wakes the idle writer, which writes after the call ends; the
// second ends without stopping in a handler. Two reads follow: one
// answer's writer waits on its buffer's lock before it writes, the
// other's wrote it before its call ended. A reader waiting as the trace
// begins is woken by bytes.
func TestEtcdTraceEvents(t *testing.T) {
	const (
		R, W, B, S, NE, U = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoSyscall, xtrace.GoNotExist, xtrace.GoUndetermined
	)
	reader := []string{"internal/poll.(*FD).Read", "google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams", "google.golang.org/grpc.(*Server).serveStreams"}
	read := append([]string{"syscall.read"}, reader...)
	idle := []string{"google.golang.org/grpc/internal/transport.(*controlBuffer).get", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"}
	lock := append([]string{"sync.(*Mutex).Lock"}, idle...)
	write := []string{"syscall.write", "internal/poll.(*FD).Write", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"}
	start := []string{"google.golang.org/grpc.(*Server).serveStreams.func2.1"}
	handler := func(method, top string) []string {
		return []string{top, "go.etcd.io/etcd/api/v3/etcdserverpb._KV_" + method + "_Handler", "google.golang.org/grpc.(*Server).processUnaryRPC", start[0]}
	}
	raft := handler("Txn", "go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).processInternalRaftRequestOnce")
	index := handler("Range", "go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).linearizableReadNotify")
	receive := []string{"google.golang.org/grpc/internal/transport.(*recvBufferReader).Read", "google.golang.org/grpc.recvAndDecompress", "google.golang.org/grpc.(*Server).processUnaryRPC", start[0]}
	s := newEtcdSummary()
	for _, c := range []why{
		{change: change{0, 0, 1, NE, R, reader}},
		{change: change{0, 0, 2, NE, R, idle}},
		{change: change{0, xtrace.NoGoroutine, 9, U, W, reader}}, // waiting for bytes as the trace begins
		{change: change{0.2, 2, 2, R, B, nil}},
		{change: change{0.3, 2, 2, B, W, idle}, reason: "select"},
		{change: change{0.5, 1, 1, R, B, nil}},
		{change: change{1, 1, 1, B, W, reader}, reason: "network"},
		{change: change{2, xtrace.NoGoroutine, 1, W, R, nil}},
		{change: change{3, 1, 1, R, B, nil}},
		{change: change{3.2, 1, 1, B, S, read}},
		{change: change{3.5, 1, 1, S, B, nil}},
		{change: change{4, 1, 3, NE, R, start}}, // an arrival of 2ms, 0.5ms after the read
		{change: change{4.5, 1, 4, NE, R, start}},
		{change: change{5, 3, 3, R, B, nil}},
		{change: change{5.5, 4, 4, R, B, nil}},
		{change: change{6, 3, 3, B, W, receive}, reason: "select"},
		{change: change{6, 4, 4, B, NE, nil}}, // never in a handler: unknown, 2.5ms after the read
		{change: change{6.2, 1, 1, B, S, read}},
		{change: change{6.6, 1, 1, S, B, nil}},
		{change: change{7, 1, 3, W, R, nil}},
		{change: change{7.5, 3, 3, R, B, nil}},
		{change: change{8, 3, 3, B, W, raft}, reason: "select"}, // its request read by 6.6
		{change: change{10, 5, 3, W, R, nil}},
		{change: change{10.5, 3, 3, R, B, nil}},
		{change: change{11, 3, 3, B, W, handler("Txn", "google.golang.org/grpc/internal/transport.(*writeQuota).get")}, reason: "select"},
		{change: change{12, 1, 3, W, R, nil}},
		{change: change{12.5, 3, 3, R, B, nil}},
		{change: change{13, 3, 2, W, R, nil}}, // the call hands the idle writer its answer
		{change: change{13.5, 3, 3, B, NE, nil}},
		{change: change{14, 2, 2, R, B, nil}},
		{change: change{14.5, 2, 2, B, S, write}},
		{change: change{15, 2, 2, S, B, nil}}, // sent 1.5ms after its call ended
		{change: change{15.5, 2, 2, B, S, write}},
		{change: change{16, 2, 2, S, B, nil}}, // no call waiting: none
		{change: change{16, 1, 7, NE, R, start}},
		{change: change{16.05, 2, 2, B, W, idle}, reason: "select"},
		{change: change{16.1, 7, 7, R, B, nil}},
		{change: change{16.2, 7, 7, B, W, index}, reason: "select"},
		{change: change{16.3, 5, 7, W, R, nil}},
		{change: change{16.4, 7, 7, R, B, nil}},
		{change: change{16.5, 7, 2, W, R, nil}},
		{change: change{16.6, 2, 2, R, B, nil}},
		{change: change{16.7, 7, 7, B, NE, nil}},
		{change: change{16.8, 2, 2, B, W, lock}, reason: "sync"}, // not idle: nothing sent yet
		{change: change{17, 5, 2, W, R, nil}},
		{change: change{17.2, 2, 2, R, B, nil}},
		{change: change{17.3, 2, 2, B, S, write}},
		{change: change{17.5, 2, 2, S, B, nil}}, // sent 0.8ms after its call ended
		{change: change{17.6, 2, 2, B, W, idle}, reason: "select"},
		{change: change{18, 1, 8, NE, R, start}},
		{change: change{18.1, 8, 8, R, B, nil}},
		{change: change{18.2, 8, 8, B, W, index}, reason: "select"},
		{change: change{18.3, 5, 8, W, R, nil}},
		{change: change{18.4, 8, 8, R, B, nil}},
		{change: change{18.5, 8, 2, W, R, nil}},
		{change: change{18.6, 2, 2, R, B, nil}},
		{change: change{18.7, 2, 2, B, S, write}},
		{change: change{18.8, 2, 2, S, B, nil}},
		{change: change{18.9, 8, 8, B, NE, nil}},
		{change: change{19, 2, 2, B, W, idle}, reason: "select"}, // its answer went out before it ended: 0
		{change: change{20, xtrace.NoGoroutine, 9, W, R, nil}},
		{change: change{20.5, 9, 9, R, B, nil}},
		{change: change{21, 9, 10, NE, R, start}}, // an arrival of 1ms; no read seen
		{change: change{21.5, 10, 10, R, B, nil}},
		{change: change{22, 10, 10, B, NE, nil}},
	} {
		s.transition(c.goChange())
	}
	// Made-up times in ms round to whole nanoseconds.
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-8 }
	same := func(got, want TracedCalls) bool {
		return got.Count == want.Count && got.ReadBeforeHandler == want.ReadBeforeHandler && near(got.Seconds, want.Seconds) &&
			near(got.FirstWaitToRunSeconds, want.FirstWaitToRunSeconds) && near(got.WaitToRunSeconds, want.WaitToRunSeconds) &&
			near(got.RunningSeconds, want.RunningSeconds) && near(got.ReceivingSeconds, want.ReceivingSeconds) &&
			near(got.SendingSeconds, want.SendingSeconds) && near(got.BlockedSeconds, want.BlockedSeconds) &&
			near(got.AfterReadSeconds, want.AfterReadSeconds) && near(got.AfterRequestReadSeconds, want.AfterRequestReadSeconds)
	}
	for method, want := range map[string]TracedCalls{
		"Txn": {Count: 1, Seconds: 0.0095, FirstWaitToRunSeconds: 0.001, WaitToRunSeconds: 0.0025, RunningSeconds: 0.003, ReceivingSeconds: 0.001,
			SendingSeconds: 0.001, BlockedSeconds: 0.002, AfterReadSeconds: 0.0005, AfterRequestReadSeconds: 0.0069, ReadBeforeHandler: 1},
		"Range": {Count: 2, Seconds: 0.0016, FirstWaitToRunSeconds: 0.0002, WaitToRunSeconds: 0.0004, RunningSeconds: 0.001, BlockedSeconds: 0.0002,
			AfterReadSeconds: 0.0208, AfterRequestReadSeconds: 0.0224},
		"unknown": {Count: 2, Seconds: 0.0025, FirstWaitToRunSeconds: 0.0015, WaitToRunSeconds: 0.0015, RunningSeconds: 0.001,
			AfterReadSeconds: 0.001, AfterRequestReadSeconds: 0.0025},
	} {
		if got := s.out.Calls[method]; got == nil || !same(*got, want) {
			t.Errorf("%s = %+v, want %+v", method, got, want)
		}
	}
	if len(s.out.Calls) != 3 {
		t.Errorf("calls = %v, want Txn, Range and unknown", s.out.Calls)
	}
	for kind, w := range map[string]struct {
		n int
		s float64
	}{"grpc reader": {3, 0.002}, "grpc writer": {5, 0.0016}, "calls": {10, 0.0044}} {
		if got := s.out.WaitsToRun[kind]; got == nil || got.Count != w.n || !near(got.Seconds, w.s) {
			t.Errorf("waits to run of %s = %+v, want %d, %gs", kind, got, w.n, w.s)
		}
	}
	if a := s.out.Arrivals; a.Count != 2 || !near(a.Seconds, 0.003) {
		t.Errorf("arrivals = %+v, want two, of 2 and 1ms", a)
	}
	if a := s.out.AnswerSends; a.Count != 3 || !near(a.Seconds, 0.0023) {
		t.Errorf("answer sends = %+v, want three: 1.5, 0.8 and 0ms", a)
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
	// Each call's request arrives in one read, so its least is from
	// that read.
	if txn.AfterRequestReadSeconds < n*sleep.Seconds() {
		t.Errorf("Txns' least with their request read %.3fs, want at least their sleeps' %.3fs", txn.AfterRequestReadSeconds, n*sleep.Seconds())
	}
	for method, c := range got.Calls {
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
