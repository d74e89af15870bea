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
// reader ends on a byte read from a loopback connection, written 20ms
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
	time.Sleep(20 * time.Millisecond)
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
	if w.Count != 1 || w.Other != 0 || w.BeforeAnswerSeconds < 0.015 || w.BeforeAnswerSeconds > w.Seconds {
		t.Errorf("the delete's waits for etcd = %+v, want one ended by the reader, 15ms or more of it before the answer", w)
	}
	if parts := w.BeforeAnswerSeconds + w.ReaderWaitToRunSeconds + w.ReaderRunningSeconds + w.ReaderBlockedSeconds; math.Abs(parts-w.Seconds) > 1e-9 {
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
// for etcd four times; the reader that ends three of them waits for
// the network, to run, runs and blocks on something else in them; a
// timer ends the fourth. A writer the request starts is not its.
func TestTraceEtcdWaits(t *testing.T) {
	s := newTraceSummary(testTraceMarks)
	const (
		R, W, B, NE = xtrace.GoRunnable, xtrace.GoWaiting, xtrace.GoRunning, xtrace.GoNotExist
	)
	etcd := []string{"runtime.chanrecv1", "workload.fakeEtcd", "workload.fakeDelete", "workload.fakeRequest"}
	for _, c := range []why{
		{change: change{0, 1, 10, NE, R, []string{"workload.fakeReader"}}},
		{change: change{0.5, 1, 10, R, B, nil}},
		{change: change{1, 10, 10, B, W, []string{"internal/poll.(*FD).Read", "workload.fakeReader"}}, reason: "network"},
		{change: change{2, 1, 2, NE, R, []string{"workload.fakeRequest"}}},
		{change: change{2.5, 1, 2, R, B, nil}},
		{change: change{2.6, 2, 11, NE, R, []string{"workload.fakeWriter"}}},
		{change: change{3, 2, 2, B, W, etcd}},
		{change: change{4, 1, 11, R, B, nil}},
		{change: change{5, 11, 11, B, W, []string{"workload.fakeWriter", "workload.fakeRequest.func3"}}},
		{change: change{10, xtrace.NoGoroutine, 10, W, R, nil}, noP: true}, // the answer
		{change: change{14, 1, 10, R, B, nil}},
		{change: change{16, 10, 2, W, R, nil}}, // handed over: 7ms before, 4 waiting to run, 2 running
		{change: change{17, 10, 10, B, W, []string{"internal/poll.(*FD).Read", "workload.fakeReader"}}, reason: "network"},
		{change: change{18, 1, 2, R, B, nil}},
		{change: change{19, 2, 2, B, W, etcd}},
		{change: change{20, xtrace.NoGoroutine, 10, W, R, nil}},
		{change: change{21, 1, 10, R, B, nil}},
		{change: change{22, 10, 10, B, W, []string{"workload.fakeReader"}}, reason: "chan send"},
		{change: change{25, 99, 10, W, R, nil}},
		{change: change{26, 1, 10, R, B, nil}},
		{change: change{27, 10, 2, W, R, nil}}, // 1ms before, 2 waiting to run, 2 running, 3 blocked
		{change: change{28, 1, 2, R, B, nil}},
		{change: change{29, 2, 2, B, W, etcd}},
		{change: change{30, xtrace.NoGoroutine, 2, W, R, nil}}, // a timer
		{change: change{31, 1, 2, R, B, nil}},
		{change: change{32, 2, 2, B, W, etcd}},
		{change: change{35, 10, 2, W, R, nil}}, // the reader ran throughout: 3ms running
		{change: change{36, 1, 2, R, B, nil}},
		{change: change{37, 2, 2, B, NE, nil}},
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
	w := *del.EtcdWaits
	if w.Count != 3 || !near(w.Seconds, 0.024) || !near(w.BeforeAnswerSeconds, 0.008) || !near(w.ReaderWaitToRunSeconds, 0.006) ||
		!near(w.ReaderRunningSeconds, 0.007) || !near(w.ReaderBlockedSeconds, 0.003) || w.Other != 1 || !near(w.OtherSeconds, 0.001) {
		t.Errorf("the delete's waits for etcd = %+v, want 3 of 24ms (8 before the answer, 6 the reader waiting to run, 7 running, 3 blocked) and 1 of 1ms ended otherwise", w)
	}
	if r := *s.out.EtcdReaders; r.NetworkWakes != 2 || r.WokenWithoutAnP != 1 {
		t.Errorf("etcd readers = %+v, want 2 wakes from the network, 1 by a thread without a P", r)
	}
	if w := s.out.WaitsToRun["etcd writer"]; w == nil || w.Count != 1 || !near(w.Seconds, 0.0014) {
		t.Errorf("the writer's waits to run = %+v, want its one of 1.4ms", w)
	}
	if w := s.out.WaitsToRun["requests"]; w == nil || w.Count != 5 {
		t.Errorf("the requests' waits to run = %+v, want the request's 5 and not the writer's", w)
	}
}
