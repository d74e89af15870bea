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

func (c change) apply(s *traceSummary) {
	stack := xtrace.NoStack
	if len(c.frames) > 0 {
		var fs []xtrace.StackFrame
		for i, f := range c.frames { // a stack's frames are told apart by PC
			fs = append(fs, xtrace.StackFrame{PC: uint64(i + 1), Func: f})
		}
		stack = xtrace.MakeStack(fs)
	}
	s.transition(goChange{now: xtrace.Time(c.ms * 1e6), by: c.by, id: c.id, from: c.from, to: c.to, stack: stack})
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

//go:noinline
func fakeReaderNet(conn net.Conn, answers chan<- struct{}) {
	b := make([]byte, 1)
	for {
		if _, err := conn.Read(b); err != nil {
			close(answers)
			return
		}
		answers <- struct{}{}
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
// after the request began: the wait is split by the reader's wake from
// waiting for the network.
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
	time.Sleep(100 * time.Millisecond)
	if _, err := server.Write([]byte{1}); err != nil {
		t.Fatal(err)
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
	// The reader read the byte after it was written, 100ms after the
	// request began.
	if w.HandOverAtLeastSeconds > w.Seconds-0.05 || w.HandOverAtLeastSeconds > w.HandOverAtMostSeconds || w.HandOverAtMostSeconds > w.Seconds {
		t.Errorf("the wait of %.4fs was handed over in at least %.4fs and at most %.4fs: want at least under its last 50ms, at most between it and the whole",
			w.Seconds, w.HandOverAtLeastSeconds, w.HandOverAtMostSeconds)
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
// for etcd five times. The reader that ends three of them waits for the
// network, to run, reads, runs and blocks on something else in them; a
// timer ends the fourth, a reader first known after it began the
// fifth. A writer the request starts is known as one only when it stops
// in its loop, and from then on is not the request's.
func TestTraceEtcdWaits(t *testing.T) {
	s := newTraceSummary(testTraceMarks)
	const (
		R, W, B, S, NE = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoSyscall, xtrace.GoNotExist
	)
	etcd := []string{"runtime.chanrecv1", "workload.fakeEtcd", "workload.fakeDelete", "workload.fakeRequest"}
	read := []string{"syscall.read", "internal/poll.(*FD).Read", "workload.fakeReader"}
	writer := []string{"workload.fakeWriter", "workload.fakeRequest.func3"}
	for _, c := range []why{
		{change: change{0, 1, 10, NE, R, []string{"workload.fakeReader"}}},
		{change: change{0.5, 1, 10, R, B, nil}},
		{change: change{1, 10, 10, B, W, read}, reason: "network"},
		{change: change{2, 1, 2, NE, R, []string{"workload.fakeRequest"}}},
		{change: change{2.5, 1, 2, R, B, nil}},
		{change: change{2.6, 2, 11, NE, R, []string{"workload.fakeRequest.func3"}}}, // the writer, not yet known
		{change: change{3, 2, 2, B, W, etcd}},
		{change: change{4, 1, 11, R, B, nil}},
		{change: change{5, 11, 11, B, W, writer}, reason: "chan receive"},
		{change: change{6, 1, 11, W, R, nil}},
		{change: change{6.5, 1, 11, R, B, nil}},
		{change: change{7, 11, 11, B, W, writer}, reason: "chan receive"},
		{change: change{10, xtrace.NoGoroutine, 10, W, R, nil}, noP: true}, // bytes to read
		{change: change{14, 1, 10, R, B, nil}},
		{change: change{14.5, 10, 10, B, S, read}},
		{change: change{15, 10, 10, S, B, nil}},
		{change: change{16, 10, 2, W, R, nil}}, // handed over: at most 13ms, at least 1; 7 before the wake, 4 waiting to run, 2 running
		{change: change{17, 10, 10, B, W, read}, reason: "network"},
		{change: change{18, 1, 2, R, B, nil}},
		{change: change{19, 2, 2, B, W, etcd}},
		{change: change{20, xtrace.NoGoroutine, 10, W, R, nil}},
		{change: change{21, 1, 10, R, B, nil}},
		{change: change{21.2, 10, 10, B, S, read}},
		{change: change{21.4, 10, 10, S, B, nil}},
		{change: change{22, 10, 10, B, W, []string{"workload.fakeReader"}}, reason: "chan send"},
		{change: change{25, 99, 10, W, R, nil}},
		{change: change{26, 1, 10, R, B, nil}},
		{change: change{27, 10, 2, W, R, nil}}, // at most 8ms, at least 5.6; 1 before the wake, 2 waiting to run, 2 running, 3 blocked
		{change: change{28, 1, 2, R, B, nil}},
		{change: change{29, 2, 2, B, W, etcd}},
		{change: change{30, xtrace.NoGoroutine, 2, W, R, nil}}, // a timer
		{change: change{31, 1, 2, R, B, nil}},
		{change: change{32, 2, 2, B, W, etcd}},
		{change: change{35, 10, 2, W, R, nil}}, // the reader ran throughout: 3ms, at most and at least
		{change: change{36, 1, 2, R, B, nil}},
		{change: change{36.2, 2, 2, B, W, etcd}},
		{change: change{36.5, 1, 12, NE, R, []string{"workload.fakeReader"}}},
		{change: change{37, 1, 12, R, B, nil}},
		{change: change{38, 12, 2, W, R, nil}}, // a reader not known when the wait began
		{change: change{39, 1, 2, R, B, nil}},
		{change: change{40, 2, 2, B, NE, nil}},
	} {
		stack := xtrace.NoStack
		if len(c.frames) > 0 {
			var fs []xtrace.StackFrame
			for i, f := range c.frames {
				fs = append(fs, xtrace.StackFrame{PC: uint64(i + 1), Func: f})
			}
			stack = xtrace.MakeStack(fs)
		}
		s.transition(goChange{now: xtrace.Time(c.ms * 1e6), by: c.by, id: c.id, from: c.from, to: c.to, stack: stack, reason: c.reason, noP: c.noP})
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	del := s.out.Requests["delete"]
	if del == nil || del.EtcdWaits == nil {
		t.Fatalf("requests = %+v, want a delete that waited for etcd", s.out.Requests)
	}
	if !near(del.Seconds, 0.038) || !near(del.WaitToRunSeconds, 0.0075) || !near(del.RunningSeconds, 0.0057) || !near(del.EtcdSeconds, 0.0248) {
		t.Errorf("delete = %+v, want 38ms: 7.5 waiting to run, 5.7 running (the writer's only until known), 24.8 for etcd", del)
	}
	w := *del.EtcdWaits
	if w.Count != 3 || w.Requests != 1 || !near(w.Seconds, 0.024) || !near(w.HandOverAtMostSeconds, 0.024) || !near(w.HandOverAtLeastSeconds, 0.0096) || w.NoNetworkWait != 1 {
		t.Errorf("the delete's waits for etcd = %+v, want 3 of 24ms, handed over in at most 24ms and at least 9.6, one without a wait for the network", w)
	}
	if !near(w.BeforeWakeSeconds, 0.008) || !near(w.ReaderWaitToRunSeconds, 0.006) || !near(w.ReaderRunningSeconds, 0.007) || !near(w.ReaderBlockedSeconds, 0.003) {
		t.Errorf("the delete's waits for etcd = %+v, want 8ms before the wake, then the reader 6 waiting to run, 7 running, 3 blocked", w)
	}
	if w.Other != 2 || !near(w.OtherSeconds, 0.0028) {
		t.Errorf("the delete's other waits for etcd = %d of %.4fs, want the timer's 1ms and the unknown reader's 1.8ms", w.Other, w.OtherSeconds)
	}
	if r := *s.out.EtcdReaders; r.NetworkWakes != 2 || r.WokenWithoutAnP != 1 {
		t.Errorf("etcd readers = %+v, want 2 wakes from the network, 1 by a thread without a P", r)
	}
	if w := s.out.WaitsToRun["etcd writer"]; w == nil || w.Count != 1 || !near(w.Seconds, 0.0005) {
		t.Errorf("the writer's waits to run = %+v, want its one of 0.5ms once known", w)
	}
	if w := s.out.WaitsToRun["requests"]; w == nil || w.Count != 7 {
		t.Errorf("the requests' waits to run = %+v, want the request's 6 and the writer's first, before it was known", w)
	}
}
