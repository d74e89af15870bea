package workload

import (
	"bytes"
	"context"
	"math"
	"net"
	"runtime"
	"runtime/trace"
	"sync/atomic"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// The marks of this test's own goroutines, standing in for the
// apiserver's.
var testTraceMarks = traceMarks{
	request: "workload.fakeRequest",
	verbs:   []verbMark{{"workload.fakeDelete", "delete"}, {"workload.fakePatch", "patch"}},
	etcd:    "workload.fakeEtcd",
	reader:  "workload.fakeReader",
	writer:  "workload.fakeWriter",
	read:    "syscall.read",
	write:   "syscall.write",
	drain:   "workload.fakeFlush",
	idle:    "workload.fakeIdle",
	header:  "workload.fakeHeader",
}

//go:noinline
func fakeRequest(start <-chan struct{}, call func(), done chan<- struct{}) {
	<-start
	answered := make(chan struct{})
	go func() { call(); close(answered) }() // as the handler's finisher does
	<-answered
	done <- struct{}{}
}

//go:noinline
func fakeDelete() { fakeEtcd(20 * time.Millisecond) }

//go:noinline
func fakePatch() { fakeEtcd(time.Millisecond) }

//go:noinline
func fakeEtcd(d time.Duration) { time.Sleep(d) }

//go:noinline
func fakeReader(answers <-chan struct{}) {
	for range answers {
	}
}

// TestSummariseTrace traces this process serving three requests while
// a goroutine spins on its one GOMAXPROCS slot: a request that began
// before the trace is left out, the others are counted by verb with
// their wait for etcd and their waits to run behind the spinner.
func TestSummariseTrace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan struct{}, 3)
	before := make(chan struct{})
	go fakeRequest(before, fakeDelete, done) // received before the trace
	time.Sleep(10 * time.Millisecond)

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	go func() {
		for !stop.Load() {
		}
	}()
	now := make(chan struct{})
	close(now)
	answers := make(chan struct{})
	go fakeReader(answers)
	go fakeRequest(now, fakeDelete, done)
	go fakeRequest(now, fakePatch, done)
	close(before)
	for range 3 {
		<-done
		answers <- struct{}{}
	}
	close(answers)
	stop.Store(true)
	trace.Stop()

	got, err := summariseTrace(context.Background(), &buf, testTraceMarks)
	if err != nil {
		t.Fatal(err)
	}
	del, patch := got.Requests["delete"], got.Requests["patch"]
	if del == nil || del.Count != 1 || patch == nil || patch.Count != 1 {
		t.Fatalf("requests = %+v, want one delete (the one begun before the trace left out) and one patch", got.Requests)
	}
	if del.EtcdSeconds < 0.015 {
		t.Errorf("the delete's wait for etcd = %.4fs of %.4fs, want its 20ms sleep", del.EtcdSeconds, del.Seconds)
	}
	// Always one of its goroutines runs, is ready or waits for etcd.
	if del.WaitToRunSeconds <= 0 || del.RunningSeconds <= 0 || del.WaitToRunSeconds+del.RunningSeconds+del.EtcdSeconds < 0.9*del.Seconds {
		t.Errorf("the delete waited to run %.4fs and ran %.4fs of %.4fs: want both above 0, and with etcd's nearly all its time",
			del.WaitToRunSeconds, del.RunningSeconds, del.Seconds)
	}
	if del.Slow != 0 {
		t.Errorf("slow deletes = %d, want 0 (under half a second)", del.Slow)
	}
	w := got.WaitsToRun["requests"]
	if w == nil || w.Count == 0 || w.AtLeast1ms == 0 {
		t.Errorf("the requests' waits to run = %+v, want some of 1ms or more behind the spinner", w)
	}
	if r := got.WaitsToRun["etcd client"]; r == nil || r.Count == 0 {
		t.Errorf("the reader's waits to run = %+v, want its own kind", r)
	}
	if w := del.EtcdWaits; w == nil || w.Count != 0 || w.Other != 1 || w.OtherSeconds < 0.015 {
		t.Errorf("the delete's waits for etcd = %+v, want one ended by a timer, not a reader", w)
	}
	if got.EtcdReaders == nil || got.EtcdReaders.Readers != 1 {
		t.Errorf("etcd readers = %+v, want the one reader", got.EtcdReaders)
	}
	if _, err := summariseTrace(context.Background(), bytes.NewReader([]byte("not a trace")), testTraceMarks); err == nil {
		t.Error("a file that is no trace was read without error")
	}
}

// change is goroutine id's change from → to at ms, in goroutine by,
// with frames as its stack.
type change struct {
	ms       float64
	by, id   xtrace.GoID
	from, to xtrace.GoState
	frames   []string
}

func (c change) apply(s *traceSummary) { s.transition(why{change: c}.goChange()) }

// goChange is the change as the trace would state it.
func (w why) goChange() goChange {
	stack := xtrace.NoStack
	if len(w.frames) > 0 {
		var fs []xtrace.StackFrame
		for i, f := range w.frames { // a stack's frames are told apart by PC
			fs = append(fs, xtrace.StackFrame{PC: uint64(i + 1), Func: f})
		}
		stack = xtrace.MakeStack(fs)
	}
	return goChange{now: xtrace.Time(w.ms * 1e6), by: w.by, id: w.id, from: w.from, to: w.to, stack: stack, reason: w.reason, noP: w.noP}
}

// TestTraceSummaryEvents reads made-up events: a request whose storage
// goroutine waits for etcd, then to run across a new generation's
// restatement of its state, and starts a reader and another goroutine
// that outlive it; and a watch first seen stopping in the list handler.
func TestTraceSummaryEvents(t *testing.T) {
	marks := testTraceMarks
	marks.verbs = append(marks.verbs, verbMark{"workload.fakeWatch", "watch"}, verbMark{"workload.fakeList", "list"})
	s := newTraceSummary(marks)
	const (
		R, W, B, NE = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoNotExist
	)
	for _, c := range []change{
		{0, 1, 2, NE, R, []string{"workload.fakeRequest"}},
		{1, 1, 2, R, B, nil},
		{2, 2, 3, NE, R, []string{"workload.fakeRequest.func1"}},
		{2, 2, 2, B, W, []string{"runtime.selectgo", "workload.fakeRequest"}},
		{3, 1, 3, R, B, nil},
		{4, 3, 3, B, W, []string{"time.Sleep", "workload.fakeEtcd", "workload.fakeDelete"}},
		{20, 1, 3, W, R, nil},
		{30, 1, 3, R, R, nil}, // a new generation says it is still ready
		{60, 1, 3, R, B, nil},
		{61, 3, 4, NE, R, []string{"workload.fakeReader"}},
		{61.5, 3, 6, NE, R, []string{"workload.fakeRequest.func2"}}, // outlives the request
		{62, 3, 3, B, NE, nil},
		{62, 3, 2, W, R, nil},
		{63, 1, 2, R, B, nil},
		{64, 2, 2, B, NE, nil},
		{70, 1, 5, NE, R, []string{"workload.fakeRequest"}},
		{70.5, 1, 5, R, B, nil},
		{71, 5, 5, B, W, []string{"runtime.selectgo", "workload.fakeList"}},
		{66, 1, 6, R, B, nil},
		{75, 1, 4, R, B, nil},
		{80, 1, 5, W, R, nil},
		{81, 1, 5, R, B, nil},
		{82, 5, 5, B, W, []string{"runtime.selectgo", "workload.fakeWatch", "workload.fakeList"}},
		{89, 1, 5, W, R, nil},
		{89.5, 1, 5, R, B, nil},
		{90, 5, 5, B, NE, nil},
	} {
		c.apply(s)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	del := s.out.Requests["delete"]
	if del == nil || del.Count != 1 || !near(del.Seconds, 0.064) || !near(del.RunningSeconds, 0.005) || !near(del.WaitToRunSeconds, 0.043) || !near(del.EtcdSeconds, 0.016) {
		t.Errorf("delete = %+v, want 1 of 64ms: 5ms running, 43ms waiting to run, 16ms for etcd", del)
	}
	if w := s.out.Requests["watch"]; w == nil || w.Count != 1 || s.out.Requests["list"] != nil {
		t.Errorf("requests = %v, want the watch as one, no list", s.out.Requests)
	}
	if w := s.out.WaitsToRun["requests"]; w == nil || w.Count != 7 || w.AtLeast10ms != 1 || w.AtLeast1ms != 5 || !near(w.Seconds, 0.045) {
		t.Errorf("the requests' waits to run = %+v, want 7, 45ms, one of 40ms across the restatement, 5 of 1ms or more", w)
	}
	if w := s.out.WaitsToRun["etcd client"]; w == nil || w.Count != 1 || w.AtLeast10ms != 1 {
		t.Errorf("the reader's waits to run = %+v, want its 14ms wait, though a request started it", w)
	}
	if w := s.out.WaitsToRun["other"]; w == nil || w.Count != 1 || !near(w.Seconds, 0.0045) {
		t.Errorf("other waits to run = %+v, want the 4.5ms of a request's goroutine that outlived it", w)
	}
}

// fakeReaderNet hands an answer over for each byte 1 it reads, and
// reads any other byte without.
//
//go:noinline
func fakeReaderNet(conn net.Conn, answers chan<- struct{}) {
	b := make([]byte, 1)
	for {
		if _, err := conn.Read(b); err != nil {
			close(answers)
			return
		}
		if b[0] == 1 {
			answers <- struct{}{}
		}
	}
}

//go:noinline
func fakeDeleteAnswered(answers <-chan struct{}) func() {
	return func() { fakeEtcdAnswer(answers) }
}

//go:noinline
func fakeEtcdAnswer(answers <-chan struct{}) { <-answers }

// TestSummariseTraceAnswers traces a request whose wait for etcd a
// reader ends on a byte read from a loopback connection, written 100ms
// after the request began, after another byte at 30ms that it reads
// without handing anything over: the wait is bounded by the reader's
// last park and last read, and split at its last wake.
func TestSummariseTraceAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	answers := make(chan struct{})
	go fakeReaderNet(client, answers)
	now, done := make(chan struct{}), make(chan struct{}, 1)
	close(now)
	go fakeRequest(now, fakeDeleteAnswered(answers), done)
	for _, w := range []struct {
		after time.Duration
		b     byte
	}{{30 * time.Millisecond, 0}, {70 * time.Millisecond, 1}} {
		time.Sleep(w.after)
		if _, err := server.Write([]byte{w.b}); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	trace.Stop()

	got, err := summariseTrace(context.Background(), &buf, testTraceMarks)
	if err != nil {
		t.Fatal(err)
	}
	del := got.Requests["delete"]
	if del == nil || del.EtcdWaits == nil {
		t.Fatalf("requests = %+v, want a delete that waited for etcd", got.Requests)
	}
	w := del.EtcdWaits
	if w.Count != 1 || w.Other != 0 || w.BeforeWakeSeconds < 0.05 || w.BeforeWakeSeconds > w.Seconds {
		t.Errorf("the delete's waits for etcd = %+v, want one ended by the reader, 50ms or more of it before the reader's wake", w)
	}
	// The reader read the answer's byte after it was written, 100ms after
	// the request began, and parked again after reading the other, at
	// 30ms.
	if w.HandOverAtLeastSeconds > w.Seconds-0.05 || w.HandOverAtMostSeconds > w.Seconds-0.02 || w.HandOverAtLeastSeconds > w.HandOverAtMostSeconds || w.ReadMissed != 0 {
		t.Errorf("the wait of %.4fs was handed over in at least %.4fs and at most %.4fs (%d reads missed): want at least under its last 50ms, at most after the reader parked again",
			w.Seconds, w.HandOverAtLeastSeconds, w.HandOverAtMostSeconds, w.ReadMissed)
	}
	if parts := w.BeforeWakeSeconds + w.ReaderWaitToRunSeconds + w.ReaderRunningSeconds + w.ReaderBlockedSeconds; math.Abs(parts-w.Seconds) > 1e-9 {
		t.Errorf("the wait's parts add to %.6fs, want its %.6fs", parts, w.Seconds)
	}
	if r := got.EtcdReaders; r == nil || r.Readers != 1 || r.NetworkWakes < 1 {
		t.Errorf("etcd readers = %+v, want one, woken from the network", r)
	}
}

// why is a change with why the goroutine waits and whether the thread
// that made it held a P.
type why struct {
	change
	reason string
	noP    bool
}

// TestTraceEtcdWaits reads made-up events: a request's goroutine waits
// for etcd seven times. The reader that ends four of them waits for the
// network (once parking inside a wait), to run, reads, makes another
// system call, runs and blocks on something else in them, and once
// hands an answer over with no read seen; a timer ends one, a reader
// first known after it began another, and the last is a wait on a lock.
// A writer the request starts is known as one only when it stops in
// its loop, and from then on is not the request's.
func TestTraceEtcdWaits(t *testing.T) {
	s := newTraceSummary(testTraceMarks)
	const (
		R, W, B, S, NE = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoSyscall, xtrace.GoNotExist
	)
	etcd := []string{"runtime.chanrecv1", "workload.fakeEtcd", "workload.fakeDelete", "workload.fakeRequest"}
	read := []string{"syscall.read", "internal/poll.(*FD).RawRead", "workload.fakeReader"}
	park := []string{"runtime.netpollblock", "internal/poll.(*FD).RawRead", "workload.fakeReader"}
	writer := []string{"workload.fakeWriter", "workload.fakeRequest.func3"}
	const answer, network = "chan receive", "network"
	for _, c := range []why{
		{change: change{0, 1, 10, NE, R, []string{"workload.fakeReader"}}},
		{change: change{0.5, 1, 10, R, B, nil}},
		{change: change{1, 10, 10, B, W, park}, reason: network},
		{change: change{2, 1, 2, NE, R, []string{"workload.fakeRequest"}}},
		{change: change{2.5, 1, 2, R, B, nil}},
		{change: change{2.6, 2, 11, NE, R, []string{"workload.fakeRequest.func3"}}}, // the writer, not yet known
		{change: change{3, 2, 2, B, W, etcd}, reason: answer},
		{change: change{4, 1, 11, R, B, nil}},
		{change: change{5, 11, 11, B, W, writer}, reason: answer},
		{change: change{6, 1, 11, W, R, nil}},
		{change: change{6.5, 1, 11, R, B, nil}},
		{change: change{7, 11, 11, B, W, writer}, reason: answer},
		{change: change{10, xtrace.NoGoroutine, 10, W, R, nil}, noP: true}, // bytes to read
		{change: change{14, 1, 10, R, B, nil}},
		{change: change{14.5, 10, 10, B, S, read}},
		{change: change{15, 10, 10, S, B, nil}},
		{change: change{16, 10, 2, W, R, nil}}, // 13ms: at most 13, at least 1; 7 before the wake, 4 waiting to run, 2 running
		{change: change{18, 1, 2, R, B, nil}},
		{change: change{19, 2, 2, B, W, etcd}, reason: answer},
		{change: change{19.2, 10, 10, B, S, read}}, // finds nothing
		{change: change{19.4, 10, 10, S, B, nil}},
		{change: change{19.5, 10, 10, B, W, park}, reason: network},
		{change: change{20, xtrace.NoGoroutine, 10, W, R, nil}},
		{change: change{21, 1, 10, R, B, nil}},
		{change: change{21.2, 10, 10, B, S, read}},
		{change: change{21.4, 10, 10, S, B, nil}},
		{change: change{22, 10, 10, B, W, []string{"workload.fakeReader"}}, reason: "chan send"},
		{change: change{25, 99, 10, W, R, nil}},
		{change: change{26, 1, 10, R, B, nil}},
		{change: change{26.2, 10, 10, B, S, []string{"syscall.Syscall6", "workload.fakeReader"}}}, // not a read
		{change: change{26.4, 10, 10, S, B, nil}},
		{change: change{27, 10, 2, W, R, nil}}, // 8ms: at most 7.5, at least 5.6; 1 before the wake, 2 waiting to run, 2 running, 3 blocked
		{change: change{28, 1, 2, R, B, nil}},
		{change: change{29, 2, 2, B, W, etcd}, reason: answer},
		{change: change{30, xtrace.NoGoroutine, 2, W, R, nil}}, // a timer
		{change: change{31, 1, 2, R, B, nil}},
		{change: change{32, 2, 2, B, W, etcd}, reason: answer},
		{change: change{35, 10, 2, W, R, nil}}, // the reader ran throughout: 3ms, at most and at least
		{change: change{36, 1, 2, R, B, nil}},
		{change: change{36.2, 2, 2, B, W, etcd}, reason: answer},
		{change: change{36.5, 1, 12, NE, R, []string{"workload.fakeReader"}}},
		{change: change{37, 1, 12, R, B, nil}},
		{change: change{38, 12, 2, W, R, nil}}, // a reader not known when the wait began
		{change: change{39, 1, 2, R, B, nil}},
		{change: change{39.2, 2, 2, B, W, etcd}, reason: answer},
		{change: change{39.5, 10, 10, B, W, park}, reason: network}, // with no read seen before
		{change: change{40, xtrace.NoGoroutine, 10, W, R, nil}},
		{change: change{40.5, 1, 10, R, B, nil}},
		{change: change{41, 10, 2, W, R, nil}}, // 1.8ms: at most 1.5, the least unknown; 0.8 before the wake, 0.5 waiting to run, 0.5 running
		{change: change{42, 1, 2, R, B, nil}},
		{change: change{42.5, 2, 2, B, W, etcd}, reason: "sync"},
		{change: change{43, 10, 2, W, R, nil}}, // a lock the reader released
		{change: change{44, 1, 2, R, B, nil}},
		{change: change{45, 2, 2, B, NE, nil}},
	} {
		s.transition(c.goChange())
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	del := s.out.Requests["delete"]
	if del == nil || del.EtcdWaits == nil {
		t.Fatalf("requests = %+v, want a delete that waited for etcd", s.out.Requests)
	}
	if !near(del.Seconds, 0.043) || !near(del.WaitToRunSeconds, 0.0095) || !near(del.RunningSeconds, 0.0064) || !near(del.EtcdSeconds, 0.0271) {
		t.Errorf("delete = %+v, want 43ms: 9.5 waiting to run, 6.4 running (the writer's only until known), 27.1 for etcd", del)
	}
	w := *del.EtcdWaits
	if w.Count != 4 || w.Requests != 1 || !near(w.Seconds, 0.0258) || w.NoNetworkWait != 1 || w.ReadMissed != 1 {
		t.Errorf("the delete's waits for etcd = %+v, want 4 of 25.8ms, one without a wait for the network, one with a read missed", w)
	}
	if !near(w.HandOverAtMostSeconds, 0.025) || !near(w.HandOverAtLeastSeconds, 0.0096) {
		t.Errorf("the delete's waits for etcd = %+v, want handed over in at most 25ms (13+7.5+3+1.5) and at least 9.6 (1+5.6+3)", w)
	}
	if !near(w.BeforeWakeSeconds, 0.0088) || !near(w.ReaderWaitToRunSeconds, 0.0065) || !near(w.ReaderRunningSeconds, 0.0075) || !near(w.ReaderBlockedSeconds, 0.003) {
		t.Errorf("the delete's waits for etcd = %+v, want 8.8ms before the wake, then the reader 6.5 waiting to run, 7.5 running, 3 blocked", w)
	}
	if w.Other != 3 || !near(w.OtherSeconds, 0.0033) {
		t.Errorf("the delete's other waits for etcd = %d of %.4fs, want the timer's 1ms, the unknown reader's 1.8ms and the lock's 0.5ms", w.Other, w.OtherSeconds)
	}
	if r := *s.out.EtcdReaders; r.NetworkWakes != 3 || r.WokenWithoutAnP != 1 {
		t.Errorf("etcd readers = %+v, want 3 wakes from the network, 1 by a thread without a P", r)
	}
	if w := s.out.WaitsToRun["etcd writer"]; w == nil || w.Count != 1 || !near(w.Seconds, 0.0005) {
		t.Errorf("the writer's waits to run = %+v, want its one of 0.5ms once known", w)
	}
	if w := s.out.WaitsToRun["requests"]; w == nil || w.Count != 9 {
		t.Errorf("the requests' waits to run = %+v, want the request's 8 and the writer's first, before it was known", w)
	}
}

// TestTraceCallSends reads made-up events: a request's goroutine waits
// for an answer's headers ten times, and seven of those waits are
// sampled, having woken the connection's idle writer just before: the
// call written by the writer's first write, after two waits to run (one
// after a yield); written before the wait began (the writer waited for
// work again); written by a draining write begun before the wait, the
// first write after the wake only filling the buffer; with the answer
// read before the writer drained, after the goroutine had woken it
// twice; with the writer running before the wait began, so that only
// its second draining write is known to hold the call, even after a
// write made because its buffer filled; and with a draining write the
// socket did not take whole, finished after a wait for the network. Not
// sampled: the writer already awake; the writer waiting for work again
// and woken by another goroutine before the wait began (the call's last
// frame then woke no one); a wake followed by a wait that is not for an
// answer's headers (as a window update's is).
func TestTraceCallSends(t *testing.T) {
	s := newTraceSummary(testTraceMarks)
	const (
		R, W, B, S, NE, U = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoSyscall, xtrace.GoNotExist, xtrace.GoUndetermined
		N                 = xtrace.NoGoroutine
	)
	header := []string{"runtime.selectgo", "workload.fakeHeader", "workload.fakeEtcd", "workload.fakeDelete", "workload.fakeRequest"}
	message := []string{"runtime.chanrecv1", "workload.fakeEtcd", "workload.fakeDelete", "workload.fakeRequest"}
	park := []string{"runtime.netpollblock", "internal/poll.(*FD).RawRead", "workload.fakeReader"}
	read := []string{"syscall.read", "internal/poll.(*FD).RawRead", "workload.fakeReader"}
	idle := []string{"runtime.selectgo", "workload.fakeIdle", "workload.fakeWriter"}
	drain := []string{"syscall.write", "workload.fakeFlush", "workload.fakeWriter"}
	fill := []string{"syscall.write", "workload.fakeWriter"}
	sleep := []string{"time.Sleep", "workload.fakeOther"}
	const answer, network, work = "select", "network", "select"
	// The reader, parked, is woken by bytes at ms, reads them, and
	// hands the answer over a millisecond after the wake.
	answered := func(ms float64) []why {
		return []why{
			{change: change{ms, N, 10, W, R, nil}},
			{change: change{ms + 0.5, 1, 10, R, B, nil}},
			{change: change{ms + 0.6, 10, 10, B, S, read}},
			{change: change{ms + 0.8, 10, 10, S, B, nil}},
			{change: change{ms + 1, 10, 2, W, R, nil}},
			{change: change{ms + 1.5, 10, 10, B, W, park}, reason: network},
		}
	}
	var cs []why
	add := func(w ...why) { cs = append(cs, w...) }
	add(
		why{change: change{0, 1, 10, NE, R, []string{"workload.fakeReader"}}},
		why{change: change{0, N, 11, U, W, idle}}, // waiting for work as the trace begins
		why{change: change{0.5, 1, 10, R, B, nil}},
		why{change: change{1, 10, 10, B, W, park}, reason: network},
		why{change: change{2, 1, 2, NE, R, []string{"workload.fakeRequest"}}},
		why{change: change{2.5, 1, 2, R, B, nil}},
		// 1: woken at 3, the call written by 7.2, the writer waiting 3ms to run.
		why{change: change{3, 2, 11, W, R, nil}},
		why{change: change{3.5, 2, 2, B, W, header}, reason: answer},
		why{change: change{5, 1, 11, R, B, nil}},
		why{change: change{5.5, 11, 11, B, R, nil}}, // yields
		why{change: change{6.5, 1, 11, R, B, nil}},
		why{change: change{7, 11, 11, B, S, drain}},
		why{change: change{7.2, 11, 11, S, B, nil}},
		why{change: change{7.5, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(9)...) // 6.5ms, 5.5 before the wake, the send 3.7
	add(
		why{change: change{11, 1, 2, R, B, nil}},
		// Another goroutine wakes the writer and does not wait for etcd.
		why{change: change{11.2, 1, 3, NE, R, []string{"workload.fakeOther"}}},
		why{change: change{11.3, 1, 3, R, B, nil}},
		why{change: change{11.5, 3, 11, W, R, nil}},
		why{change: change{11.6, 3, 3, B, W, sleep}, reason: "sleep"},
		// 2: the writer awake: not sampled.
		why{change: change{12, 2, 2, B, W, header}, reason: answer},
		why{change: change{13, 1, 11, R, B, nil}},
		why{change: change{13.5, 11, 11, B, S, drain}},
		why{change: change{13.7, 11, 11, S, B, nil}},
		why{change: change{14, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(15)...) // 4ms
	add(
		why{change: change{17, 1, 2, R, B, nil}},
		// 3: the writer writes and waits for work again before the wait.
		why{change: change{18, 2, 11, W, R, nil}},
		why{change: change{18.2, 1, 11, R, B, nil}},
		why{change: change{18.3, 11, 11, B, S, drain}},
		why{change: change{18.4, 11, 11, S, B, nil}},
		why{change: change{18.5, 11, 11, B, W, idle}, reason: work},
		why{change: change{19, 2, 2, B, W, header}, reason: answer},
	)
	add(answered(22)...) // 4ms, 3 before the wake, the send 0
	add(
		why{change: change{24, 1, 2, R, B, nil}},
		// 4: a write filling the buffer, then a drain, both before the
		// wait; the writer waits for work after it began.
		why{change: change{25, 2, 11, W, R, nil}},
		why{change: change{25.5, 1, 11, R, B, nil}},
		why{change: change{25.6, 11, 11, B, S, fill}},
		why{change: change{25.8, 11, 11, S, B, nil}},
		why{change: change{25.9, 11, 11, B, S, drain}},
		why{change: change{26, 2, 2, B, W, header}, reason: answer},
		why{change: change{26.3, 11, 11, S, B, nil}},
		why{change: change{27, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(28)...) // 3ms, 2 before the wake, the send at most 0.3
	add(
		why{change: change{30, 1, 2, R, B, nil}},
		// 5: woken twice in one run; the answer is read before the
		// writer drains.
		why{change: change{31, 2, 11, W, R, nil}},
		why{change: change{31.2, 1, 11, R, B, nil}},
		why{change: change{31.3, 11, 11, B, S, drain}},
		why{change: change{31.4, 11, 11, S, B, nil}},
		why{change: change{31.5, 11, 11, B, W, idle}, reason: work},
		why{change: change{32, 2, 11, W, R, nil}},
		why{change: change{33, 2, 2, B, W, header}, reason: answer},
		why{change: change{34, 1, 11, R, B, nil}},
		why{change: change{34.2, 11, 11, B, S, fill}},
		why{change: change{34.4, 11, 11, S, B, nil}},
	)
	add(answered(35)...) // 3ms, 2 before the wake, the send 1.4 to 2.8
	add(
		why{change: change{36.5, 11, 11, B, S, drain}},
		why{change: change{36.7, 11, 11, S, B, nil}},
		why{change: change{37, 11, 11, B, W, idle}, reason: work},
		why{change: change{37.5, 1, 2, R, B, nil}},
		// 6: the writer writes, waits for work, and another goroutine
		// wakes it before the wait begins: not sampled.
		why{change: change{40, 2, 11, W, R, nil}},
		why{change: change{40.2, 1, 11, R, B, nil}},
		why{change: change{40.3, 11, 11, B, S, drain}},
		why{change: change{40.4, 11, 11, S, B, nil}},
		why{change: change{40.5, 11, 11, B, W, idle}, reason: work},
		why{change: change{40.6, N, 3, W, R, nil}},
		why{change: change{40.65, 1, 3, R, B, nil}},
		why{change: change{40.7, 3, 11, W, R, nil}},
		why{change: change{40.8, 3, 3, B, W, sleep}, reason: "sleep"},
		why{change: change{41, 2, 2, B, W, header}, reason: answer},
		why{change: change{41.2, 1, 11, R, B, nil}},
		why{change: change{41.5, 11, 11, B, S, drain}},
		why{change: change{41.7, 11, 11, S, B, nil}},
		why{change: change{42, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(43)...) // 3ms
	add(
		why{change: change{45, 1, 2, R, B, nil}},
		// 7: a wake, then a wait for an answer's message: not sampled.
		why{change: change{46, 2, 11, W, R, nil}},
		why{change: change{46.5, 2, 2, B, W, message}, reason: "chan receive"},
		why{change: change{47, 1, 11, R, B, nil}},
		why{change: change{47.1, 11, 11, B, S, drain}},
		why{change: change{47.3, 11, 11, S, B, nil}},
		why{change: change{47.5, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(48)...) // 2.5ms
	add(
		why{change: change{49.5, 1, 2, R, B, nil}},
		// 8: the writer runs before the wait begins; its first draining
		// write after, begun before it looked for work again, may not
		// hold the call: the second does.
		why{change: change{50, 2, 11, W, R, nil}},
		why{change: change{50.2, 1, 11, R, B, nil}},
		why{change: change{50.5, 2, 2, B, W, header}, reason: answer},
		why{change: change{50.6, 11, 11, B, S, drain}},
		why{change: change{50.8, 11, 11, S, B, nil}},
		why{change: change{51, 11, 11, B, S, drain}},
		why{change: change{51.3, 11, 11, S, B, nil}},
		why{change: change{51.5, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(53)...) // 3.5ms, 2.5 before the wake, the send 0.3 to 0.8
	add(
		why{change: change{55, 1, 2, R, B, nil}},
		// 9: the writer runs before the wait; a write made because its
		// buffer filled, then a drain with no look between: only the
		// next drain is known to hold the call.
		why{change: change{57, 2, 11, W, R, nil}},
		why{change: change{57.2, 1, 11, R, B, nil}},
		why{change: change{57.5, 2, 2, B, W, header}, reason: answer},
		why{change: change{57.6, 11, 11, B, S, fill}},
		why{change: change{57.8, 11, 11, S, B, nil}},
		why{change: change{58, 11, 11, B, S, drain}},
		why{change: change{58.2, 11, 11, S, B, nil}},
		why{change: change{58.4, 11, 11, B, S, drain}},
		why{change: change{58.6, 11, 11, S, B, nil}},
		why{change: change{59, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(60)...) // 3.5ms, 2.5 before the wake, the send 0.3 to 1.1
	add(
		why{change: change{62, 1, 2, R, B, nil}},
		// 10: the drain's write does not take it all; the writer waits
		// for the network and writes the rest.
		why{change: change{63, 2, 11, W, R, nil}},
		why{change: change{63.5, 2, 2, B, W, header}, reason: answer},
		why{change: change{64, 1, 11, R, B, nil}},
		why{change: change{64.2, 11, 11, B, S, drain}},
		why{change: change{64.4, 11, 11, S, B, nil}},
		why{change: change{64.5, 11, 11, B, W, []string{"runtime.netpollblock", "workload.fakeFlush", "workload.fakeWriter"}}, reason: network},
		why{change: change{65, N, 11, W, R, nil}},
		why{change: change{65.5, 1, 11, R, B, nil}},
		why{change: change{65.6, 11, 11, B, S, drain}},
		why{change: change{65.8, 11, 11, S, B, nil}},
		why{change: change{66, 11, 11, B, W, idle}, reason: work},
	)
	add(answered(67)...) // 4.5ms, 3.5 before the wake, the send 0.9 to 2.3
	add(
		why{change: change{69, 1, 2, R, B, nil}},
		why{change: change{70, 2, 2, B, NE, nil}},
	)
	for _, c := range cs {
		s.transition(c.goChange())
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	del := s.out.Requests["delete"]
	if del == nil || del.EtcdWaits == nil {
		t.Fatalf("requests = %+v, want a delete that waited for etcd", s.out.Requests)
	}
	w := *del.EtcdWaits
	if w.Count != 10 || !near(w.Seconds, 0.0375) {
		t.Errorf("the delete's waits for etcd = %+v, want 10 of 37.5ms", w)
	}
	if w.SendSampled != 7 || !near(w.SendSampledSeconds, 0.028) || !near(w.SendSampledBeforeWakeSeconds, 0.021) {
		t.Errorf("sampled %d waits of %.4fs, %.4fs before the wake; want 7 of 28ms (6.5+4+3+3+3.5+3.5+4.5), 21 before (5.5+3+2+2+2.5+2.5+3.5)",
			w.SendSampled, w.SendSampledSeconds, w.SendSampledBeforeWakeSeconds)
	}
	if !near(w.SendAtLeastSeconds, 0.0066) || !near(w.SendAtMostSeconds, 0.011) || w.SendDrained != 4 {
		t.Errorf("the sends took at least %.4fs and at most %.4fs, %d at most by a draining write; want 6.6ms (3.7+0+0+1.4+0.3+0.3+0.9) and 11 (3.7+0+0.3+2.8+0.8+1.1+2.3), 4 (the first and the last three)",
			w.SendAtLeastSeconds, w.SendAtMostSeconds, w.SendDrained)
	}
	if !near(w.SendWriterWaitToRunSeconds, 0.0071) {
		t.Errorf("the writer waited %.4fs to run in the sampled sends, want 7.1ms (3+0.2+0.5+2+0.2+0.2+1)", w.SendWriterWaitToRunSeconds)
	}
}
