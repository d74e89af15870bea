package workload

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"sync/atomic"
	"testing"
	"time"
)

// The marks of this test's own goroutines, standing in for the
// apiserver's.
var testTraceMarks = traceMarks{
	request: "workload.fakeRequest",
	verbs:   []verbMark{{"workload.fakeDelete", "delete"}, {"workload.fakePatch", "patch"}},
	etcd:    "workload.fakeEtcd",
	reader:  "workload.fakeReader",
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
	go fakeRequest(now, fakeDelete, done)
	go fakeRequest(now, fakePatch, done)
	close(before)
	for range 3 {
		<-done
	}
	stop.Store(true)
	trace.Stop()

	got, err := summariseTrace(&buf, testTraceMarks)
	if err != nil {
		t.Fatal(err)
	}
	del, patch := got.Requests["delete"], got.Requests["patch"]
	if del == nil || del.Count != 1 || patch == nil || patch.Count != 1 {
		t.Fatalf("requests = %+v, want one delete (the one begun before the trace left out) and one patch", got.Requests)
	}
	if del.EtcdSeconds < 0.015 || del.EtcdSeconds > del.Seconds {
		t.Errorf("the delete's wait for etcd = %.4fs of %.4fs, want its 20ms sleep", del.EtcdSeconds, del.Seconds)
	}
	if del.WaitToRunSeconds <= 0 || del.RunningSeconds <= 0 || del.WaitToRunSeconds+del.RunningSeconds+del.EtcdSeconds > del.Seconds+1e-9 {
		t.Errorf("the delete waited to run %.4fs and ran %.4fs of %.4fs: want both above 0, and with etcd's no more than its time",
			del.WaitToRunSeconds, del.RunningSeconds, del.Seconds)
	}
	if del.Slow != 0 {
		t.Errorf("slow deletes = %d, want 0 (under half a second)", del.Slow)
	}
	w := got.WaitsToRun["requests"]
	if w == nil || w.Count == 0 || w.AtLeast1ms == 0 {
		t.Errorf("the requests' waits to run = %+v, want some of 1ms or more behind the spinner", w)
	}
	if _, err := summariseTrace(bytes.NewReader([]byte("not a trace")), testTraceMarks); err == nil {
		t.Error("a file that is no trace was read without error")
	}
}
