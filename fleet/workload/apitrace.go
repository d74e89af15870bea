package workload

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
	"k8s.io/client-go/kubernetes"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// APIServerTrace is what a Go execution trace of kube-apiserver (its
// /debug/pprof/trace) shows of its requests and goroutines over a
// window: unlike its /metrics, every goroutine's every wait to run, and
// which request's goroutines waited.
type APIServerTrace struct {
	// Seconds is the window traced, from just after the hold starts;
	// Bytes and Events what the trace held.
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	Events  int     `json:"events"`
	// Requests are, by verb ("delete", "create", "update", "patch",
	// "get", "list", "watch", "deletecollection", or "other" for a
	// request in whose goroutines no resource handler was seen, such as
	// discovery), the HTTP/2 requests whose stream's goroutine started
	// and ended in the window.
	Requests map[string]*TracedRequests `json:"requests,omitempty"`
	// WaitsToRun are every goroutine's waits from ready to running, by
	// kind: "etcd client" (gRPC clients' connection readers: the
	// apiserver's are its connections to etcd, which hand each answer to
	// the request waiting for it),
	// "etcd writer" (the same connections' writers, which send each
	// call), "requests" (the goroutines of a request begun in the trace
	// and not yet answered, watches among them) and "other".
	WaitsToRun map[string]*TracedWaits `json:"waitsToRun,omitempty"`
	// EtcdReaders are the etcd connections' readers seen in the trace.
	EtcdReaders *TracedReaders `json:"etcdReaders,omitempty"`
}

// TracedReaders are the readers of the apiserver's gRPC connections
// in a trace (one per connection; the apiserver's are to etcd): how
// many were known (a reader is known by the stack it starts with or is
// first stated with, else once it stops: one running as the trace began
// is known late), and how often one was woken because its connection had
// bytes to read: by a thread that held a P (the usual way: a P that runs
// out of work polls the network, and a thread blocked in the poller
// while a P is idle wakes as the bytes arrive), or by one that held none
// (the runtime's monitor, which polls the network when no thread has
// blocked in the poller for 10 ms, later when it has been idle, or a
// thread back from the poller that found every P taken).
type TracedReaders struct {
	Readers         int `json:"readers"`
	NetworkWakes    int `json:"networkWakes"`
	WokenWithoutAnP int `json:"wokenWithoutAnP"`
}

// TracedRequests are one verb's requests in a trace: how many, their
// time from the goroutine their HTTP/2 stream started starting to its
// end (Seconds), and of it the time when one of the request's goroutines
// (the stream's, the timeout filter's, the one the handler runs the
// storage call in…) ran or was in a system call (RunningSeconds); else
// when one was ready but not yet running (WaitToRunSeconds: for one of
// the apiserver's GOMAXPROCS slots, for the kernel to run a thread woken
// to take an idle one, or stopped by the GC or the trace itself; a
// thread the kernel keeps from a core while it runs one counts as
// running); else when one waited for etcd, blocked in etcd's client
// (EtcdSeconds: etcd's time and the gRPC writer's and reader's waits to
// run). The rest is waiting for anything else: a queue, a lock, the
// connection's writer. Slow… are the same for the requests of half a
// second or more, the audit log's threshold for a request's layers.
// A request's verb is known once one of its goroutines stops inside a
// handler; one that never does (a GET answered at once from the watch
// cache) counts as "other", so the get and list counts are lower
// bounds. A DELETE or a write always waits for etcd there.
type TracedRequests struct {
	Count            int     `json:"count"`
	Seconds          float64 `json:"seconds"`
	WaitToRunSeconds float64 `json:"waitToRunSeconds"`
	RunningSeconds   float64 `json:"runningSeconds"`
	EtcdSeconds      float64 `json:"etcdSeconds"`
	Slow             int     `json:"slow"`
	SlowSeconds      float64 `json:"slowSeconds"`
	SlowWaitToRun    float64 `json:"slowWaitToRunSeconds"`
	SlowRunning      float64 `json:"slowRunningSeconds"`
	SlowEtcd         float64 `json:"slowEtcdSeconds"`
	// EtcdWaits bound how long the requests' goroutines' waits for etcd
	// went on after each answer arrived, and split them by what the
	// connection's reader that ended each did.
	EtcdWaits *TracedEtcdWaits `json:"etcdWaits,omitempty"`
}

// TracedEtcdWaits are requests' goroutines' waits for etcd, each whole
// (from a goroutine blocking in etcd's client to its being readied,
// whether or not another of its request's goroutines ran meanwhile),
// split by the connection's reader that ended the wait, handing an
// answer over. Count and Seconds are the waits on a channel (as for an
// answer) that a reader ended, Requests the requests that had any. The
// answer's last bytes reached the apiserver after the later of the
// wait's start and the moment the reader last began to wait for its
// connection to have bytes (it had then read everything, and not all of
// the answer), and before the reader's last read ended (it then held
// the answer), so the time the wait went on after they arrived is
// bounded:
//   - HandOverAtMostSeconds is the time after the first of those (the
//     whole wait if the reader was parked across its start);
//   - HandOverAtLeastSeconds the time after the second (the whole wait
//     if the reader held the answer before it began), or 0 where a read
//     the trace did not show came between (ReadMissed counts those).
//
// BeforeWakeSeconds is the time until that reader was last woken
// because its connection had bytes to read (0 if it was not, in the
// wait: NoNetworkWait counts those waits), and the rest is what the
// reader did after (from the wait's start if it was not woken in it):
// waiting to run, running (reading this and other calls' and watches'
// frames) or blocked on anything but the network. Those four add up to
// Seconds. Other and OtherSeconds are the waits something else ended
// (a timer, a cancelled context), a wait on a lock a reader released,
// or one a reader not yet known when the wait began ended.
type TracedEtcdWaits struct {
	Count                  int     `json:"count"`
	Requests               int     `json:"requests"`
	Seconds                float64 `json:"seconds"`
	HandOverAtMostSeconds  float64 `json:"handOverAtMostSeconds"`
	HandOverAtLeastSeconds float64 `json:"handOverAtLeastSeconds"`
	ReadMissed             int     `json:"readMissed"`
	NoNetworkWait          int     `json:"noNetworkWait"`
	BeforeWakeSeconds      float64 `json:"beforeWakeSeconds"`
	ReaderWaitToRunSeconds float64 `json:"readerWaitToRunSeconds"`
	ReaderRunningSeconds   float64 `json:"readerRunningSeconds"`
	ReaderBlockedSeconds   float64 `json:"readerBlockedSeconds"`
	Other                  int     `json:"other"`
	OtherSeconds           float64 `json:"otherSeconds"`
	// SendSampled counts the waits (of Count) for a call's answer's
	// headers (its first wait) whose goroutine woke its connection's
	// writer from waiting for work (as handing it a frame does) and
	// then, without stopping, began the wait, unless the writer waited
	// for work again and another goroutine woke it before the wait
	// began (the call's last frame may then have woken no one): the
	// writer is known, and the frame that woke it was written after the
	// wake. SendSampledSeconds and SendSampledBeforeWakeSeconds are those
	// waits' Seconds and BeforeWakeSeconds. Their call's send, from the
	// wait's start, is bounded: SendAtLeastSeconds is the time to the
	// end of the writer's first write after the wake (0 if it ended
	// before the wait began); SendAtMostSeconds the time to the end of
	// its first write that drains its buffer (its loop's Flush, made
	// once it found nothing more to do) begun after it had looked for
	// work since the wait began (it had not run before the wait began,
	// or a draining write of its had ended since), else of its last
	// write before it
	// waited for work after the wait began; no later than the end of
	// the reader's last read, which held the answer (or the wait's end
	// where a read was missed); and 0 if the writer waited for work
	// again before the wait began with no other wake between (it writes
	// all it holds first, and the call's last frame would have woken
	// it). SendDrained counts the sampled waits whose SendAtMostSeconds
	// is that first draining write's end (not the writer's last write
	// before it waited for work, the read's end, or 0).
	// SendWriterWaitToRunSeconds is the writer's waiting to run from the
	// wake (just before the wait began) to its first write's end, in
	// every sampled wait, those whose send was 0 too: not a part of the
	// send.
	SendSampled                  int     `json:"sendSampled"`
	SendDrained                  int     `json:"sendDrained"`
	SendSampledSeconds           float64 `json:"sendSampledSeconds"`
	SendSampledBeforeWakeSeconds float64 `json:"sendSampledBeforeWakeSeconds"`
	SendAtLeastSeconds           float64 `json:"sendAtLeastSeconds"`
	SendAtMostSeconds            float64 `json:"sendAtMostSeconds"`
	SendWriterWaitToRunSeconds   float64 `json:"sendWriterWaitToRunSeconds"`
}

func (w *TracedEtcdWaits) add(o TracedEtcdWaits) {
	w.Count += o.Count
	w.Requests += o.Requests
	w.Seconds += o.Seconds
	w.HandOverAtMostSeconds += o.HandOverAtMostSeconds
	w.HandOverAtLeastSeconds += o.HandOverAtLeastSeconds
	w.ReadMissed += o.ReadMissed
	w.NoNetworkWait += o.NoNetworkWait
	w.BeforeWakeSeconds += o.BeforeWakeSeconds
	w.ReaderWaitToRunSeconds += o.ReaderWaitToRunSeconds
	w.ReaderRunningSeconds += o.ReaderRunningSeconds
	w.ReaderBlockedSeconds += o.ReaderBlockedSeconds
	w.Other += o.Other
	w.OtherSeconds += o.OtherSeconds
	w.SendSampled += o.SendSampled
	w.SendDrained += o.SendDrained
	w.SendSampledSeconds += o.SendSampledSeconds
	w.SendSampledBeforeWakeSeconds += o.SendSampledBeforeWakeSeconds
	w.SendAtLeastSeconds += o.SendAtLeastSeconds
	w.SendAtMostSeconds += o.SendAtMostSeconds
	w.SendWriterWaitToRunSeconds += o.SendWriterWaitToRunSeconds
}

// TracedWaits are the waits to run of a kind of goroutine in a trace:
// how many ended in the window, their seconds, and how many lasted at
// least 1, 10 and 100 ms.
type TracedWaits struct {
	Count        int     `json:"count"`
	Seconds      float64 `json:"seconds"`
	AtLeast1ms   int     `json:"atLeast1ms"`
	AtLeast10ms  int     `json:"atLeast10ms"`
	AtLeast100ms int     `json:"atLeast100ms"`
}

func (w *TracedWaits) add(d time.Duration) {
	w.Count++
	w.Seconds += d.Seconds()
	if d >= time.Millisecond {
		w.AtLeast1ms++
	}
	if d >= 10*time.Millisecond {
		w.AtLeast10ms++
	}
	if d >= 100*time.Millisecond {
		w.AtLeast100ms++
	}
}

// maxTrace bounds a trace (the apiserver's or etcd's): a busy apiserver's is about half a
// megabyte a second, all kept on disk until the hold ends.
const maxTrace = 10 * time.Minute

// slowRequest is the audit log's threshold for annotating a request's
// layers (AuditedTimes), so that the two sources' slow requests compare.
const slowRequest = 500 * time.Millisecond

// traceMarks name, by substrings of function names in a goroutine's
// stack, what a goroutine of the traced program does.
type traceMarks struct {
	// request ends the name of the function that starts the goroutine
	// serving one HTTP/2 request.
	request string
	// verbs: a request whose goroutines' stacks hold the first mark is
	// of that verb.
	verbs []verbMark
	// etcd is in the stack of a goroutine waiting for etcd, reader in
	// the start of an etcd connection's reader, writer in the stack of
	// its writer, read in the stack of a reader's system call that reads
	// its connection (gRPC reads through the poller's raw connection, not
	// (*FD).Read), write in that of a writer's system call that writes
	// to it, drain in that of a write draining the writer's buffer (not
	// one made because the buffer filled), idle in that of a writer
	// waiting for work, header in that of a call's goroutine waiting for
	// its answer's headers (its first wait).
	etcd, reader, writer, read, write, drain, idle, header string
}

type verbMark struct{ mark, verb string }

// Marks both components' traces share: grpc-go's connection writer
// (loopyWriter), its wait for work, and the system calls on a connection.
const (
	grpcWriterMark = "transport.(*loopyWriter).run"
	grpcIdleMark   = "transport.(*controlBuffer).get"
	readMark       = "syscall.read"
	writeMark      = "syscall.write"
)

// apiserverMarks are kube-apiserver's (v1.36; k8s.io/apiserver's
// endpoints/handlers), checked on a traced fleet.
var apiserverMarks = traceMarks{
	request: "http2.(*serverConn).runHandler",
	verbs: []verbMark{
		{"handlers.DeleteResource.", "delete"},
		{"handlers.DeleteCollection.", "deletecollection"},
		{"handlers.CreateResource.", "create"},
		{"handlers.CreateNamedResource.", "create"},
		{"handlers.createHandler.", "create"},
		{"handlers.UpdateResource.", "update"},
		{"handlers.PatchResource.", "patch"},
		{"handlers.handleWatch", "watch"},
		{"handlers.ListResource.", "list"},
		{"handlers.GetResource.", "get"},
		{"handlers.getResourceHandler.", "get"},
	},
	etcd:   "go.etcd.io/etcd/client/v3",
	reader: "grpc/internal/transport.(*http2Client).reader",
	writer: grpcWriterMark,
	read:   readMark,
	write:  writeMark,
	drain:  "grpc/internal/transport.(*bufWriter).Flush",
	idle:   grpcIdleMark,
	header: "grpc/internal/transport.(*ClientStream).waitOnHeader",
}

// tracing is a Go execution trace of a component being taken.
type tracing struct {
	what  string // "apiserver", "etcd"
	whose string // "the apiserver's", "etcd's"
	d     time.Duration
	done  chan struct{}
	path  string
	err   error
}

// traceOpener asks a component for an execution trace of d.
type traceOpener func(ctx context.Context, d time.Duration) (io.ReadCloser, error)

// apiserverTrace opens the apiserver's /debug/pprof/trace, which it
// serves as a long-running request, with no timeout of its own.
func apiserverTrace(admin kubernetes.Interface) traceOpener {
	return func(ctx context.Context, d time.Duration) (io.ReadCloser, error) {
		body, err := admin.Discovery().RESTClient().Get().AbsPath("/debug/pprof/trace").Param("seconds", fmt.Sprint(int(d.Seconds()))).Stream(ctx)
		if err != nil {
			return nil, fmt.Errorf("GET /debug/pprof/trace: %w", err)
		}
		return body, nil
	}
}

// startTrace starts taking a trace of d (none when d is 0) of what,
// named whose in messages.
func startTrace(ctx context.Context, what, whose string, open traceOpener, d time.Duration) *tracing {
	if d == 0 {
		return nil
	}
	t := &tracing{what: what, whose: whose, d: d, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.path, t.err = captureTrace(ctx, what, open, d)
	}()
	return t
}

// readTraceTimeout bounds reading a whole trace: it is read even after
// the run is interrupted, as the phases' meters are.
const readTraceTimeout = 2 * time.Minute

// traceResult waits for trace t, then reads it with read; nil, with a
// warning, if it could not be taken or read. A trace whose capture an
// interrupt cut short is not read.
func traceResult[T any](ctx context.Context, t *tracing, report progress.Func, read func(context.Context, string, time.Duration) (*T, error)) *T {
	if t == nil {
		return nil
	}
	<-t.done
	var out *T
	err := t.err
	if err == nil {
		done := progress.Step(report, t.what+" trace", fmt.Sprintf("reading %s trace of the hold's first %s", t.whose, t.d), 0)
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTraceTimeout)
		out, err = read(readCtx, t.path, t.d)
		cancel()
		done()
	}
	if err != nil {
		report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("%s trace is not recorded: %v", t.whose, err)})
	}
	return out
}

// captureTrace asks for an execution trace of d and writes it to a
// temporary file, returned for the trace's reader (which removes it). It
// is read only after the window, so that reading it costs the run's CPU
// nothing while it is measured.
func captureTrace(ctx context.Context, what string, open traceOpener, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	body, err := open(ctx, d)
	if err != nil {
		return "", err
	}
	defer body.Close()
	f, err := os.CreateTemp("", "ghostfleet-"+what+"-*.trace")
	if err != nil {
		return "", err
	}
	if _, err = io.Copy(f, body); err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("receiving the trace: %w", err)
	}
	return f.Name(), nil
}

// readAPIServerTrace summarises the trace in file path, then removes it.
func readAPIServerTrace(ctx context.Context, path string, d time.Duration) (*APIServerTrace, error) {
	t, size, err := readTraceFile(ctx, path, func(ctx context.Context, r io.Reader) (*APIServerTrace, error) {
		return summariseTrace(ctx, r, apiserverMarks)
	})
	if err != nil {
		return nil, err
	}
	t.Seconds, t.Bytes = d.Seconds(), size
	return t, nil
}

// readTraceFile summarises the trace in file path with summarise, then
// removes the file; it also returns the file's size.
func readTraceFile[T any](ctx context.Context, path string, summarise func(context.Context, io.Reader) (*T, error)) (*T, int64, error) {
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	t, err := summarise(ctx, f)
	return t, st.Size(), err
}

// eachEvent reads a Go execution trace, handing each event to event.
func eachEvent(ctx context.Context, r io.Reader, event func(trace.Event)) (err error) {
	// The trace library panics on what it cannot make sense of: that
	// loses the trace, not the run.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading the trace: %v", p)
		}
	}()
	tr, err := trace.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a Go execution trace: %w", err)
	}
	for n := 0; ; n++ {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the trace after %d events: %w", n, err)
		}
		if n%readEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		event(ev)
	}
}

// tracedGoroutine is one goroutine's state as the trace is read.
type tracedGoroutine struct {
	state    trace.GoState
	since    trace.Time
	etcdWait bool // waiting, blocked in etcd's client
	// Its wait for etcd is on a channel, as for an answer, not a lock.
	answerWait bool
	reader     *tracedReader  // when it is an etcd connection's reader
	writer     *tracedWriter  // when it is an etcd connection's writer
	req        *tracedRequest // the request it serves, if any
	root       bool           // it received req
	// While it waits for etcd for a request: the readers' clocks when
	// the wait began.
	readersAt []readerClock
	// waking is the send it began by waking an idle writer while it
	// runs now; send is its wait for etcd's, if it began the wait
	// after waking one.
	waking, send *callSend
}

// tracedWriter is an etcd connection's writer as the trace is read.
type tracedWriter struct {
	g *tracedGoroutine
	// waitToRun is its waiting to run until g.since.
	waitToRun time.Duration
	// idle: it waits for work; writing: it is in a write to its
	// connection, which drains its buffer if draining, and began at
	// writeStart; lastWrite is when its last write ended.
	idle, writing, draining bool
	writeStart, lastWrite   trace.Time
	// sends are the calls whose goroutines woke it since it last waited
	// for work, and those that had not begun their wait when it did.
	sends []*callSend
}

// waitToRunAt is the writer's waiting to run until now.
func (w *tracedWriter) waitToRunAt(now trace.Time) time.Duration {
	if w.g.state == trace.GoRunnable {
		return w.waitToRun + time.Duration(now-w.g.since)
	}
	return w.waitToRun
}

// callSend is the send of a call whose goroutine woke its connection's
// idle writer, as the trace is read.
type callSend struct {
	// The writer's waiting to run at the wake, and from it to its
	// first write's end (firstWrite), which begins before start.
	waitAtWoken, writerWait time.Duration
	// start is when the goroutine began to wait for the answer's
	// headers (0: not yet). drained is the end of the writer's first
	// draining write begun once it had looked for work since start
	// (byWrite), else of its last write before it waited for work
	// after start: either holds the call.
	start, firstWrite, drained trace.Time
	byWrite                    bool
	// ran: the writer ran after the wake. looked: it has looked for
	// work since start: it had not run before start, or a draining
	// write of its ended after it (a draining write begun after start
	// can still follow a look before it, when the call's last frame was
	// not yet handed over).
	ran, looked bool
	// idleBefore: the writer waited for work after the wake and
	// before start, with no other wake between; dead (looked at only
	// until start): the goroutine did not wait for an answer's headers
	// next, or another wake made the send unknown.
	idleBefore, dead bool
}

// readerClock is an etcd connection's reader's time so far, by what it
// did: waiting for the network is not counted.
type readerClock struct{ waitToRun, running, blocked time.Duration }

func (c readerClock) minus(o readerClock) readerClock {
	return readerClock{c.waitToRun - o.waitToRun, c.running - o.running, c.blocked - o.blocked}
}

// tracedReader is an etcd connection's reader as the trace is read.
type tracedReader struct {
	index int // in traceSummary.readers
	g     *tracedGoroutine
	clock readerClock // until g.since
	// network: its wait now is for its connection to have bytes (or
	// began before the trace: a reader waits for little else);
	// reading: its system call now reads its connection.
	network, reading bool
	// When it last began to wait for the network, when it was last
	// woken from that wait (and its clock then), and when its last read
	// from its connection ended.
	netWait, woken, readEnd trace.Time
	atWoken                 readerClock
}

// at is the reader's clock at now, at or after its last change.
func (r *tracedReader) at(now trace.Time) readerClock {
	c, d := r.clock, time.Duration(now-r.g.since)
	switch r.g.state {
	case trace.GoRunnable:
		c.waitToRun += d
	case trace.GoRunning, trace.GoSyscall:
		c.running += d
	case trace.GoWaiting:
		if !r.network {
			c.blocked += d
		}
	}
	return c
}

// tracedRequest is one request as the trace is read: how many of its
// goroutines are in each state now, and its time so far by the most
// active of them.
type tracedRequest struct {
	start, last trace.Time
	done        bool
	verb        string
	// Its goroutines now running (or in a system call), ready to run,
	// and waiting for etcd.
	running, ready, etcd  int
	waitToRun, run, etcdT time.Duration
	etcdWaits             TracedEtcdWaits
}

// advance counts the time since the request's last change: running if
// one of its goroutines ran, else waiting to run if one was ready, else
// waiting for etcd if one did; otherwise it waited for something else.
func (r *tracedRequest) advance(now trace.Time) {
	d := time.Duration(now - r.last)
	switch {
	case r.running > 0:
		r.run += d
	case r.ready > 0:
		r.waitToRun += d
	case r.etcd > 0:
		r.etcdT += d
	}
	r.last = now
}

// count adds n goroutines in state s to the request's.
func (r *tracedRequest) count(s trace.GoState, etcdWait bool, n int) {
	switch {
	case s == trace.GoRunning || s == trace.GoSyscall:
		r.running += n
	case s == trace.GoRunnable:
		r.ready += n
	case s == trace.GoWaiting && etcdWait:
		r.etcd += n
	}
}

// stackMarks are what one stack holds of the marks.
type stackMarks struct {
	verb                                                    string
	request, reader, writer, etcd, read, write, drain, idle bool
	// header: the header mark; selects: blocked in a select.
	header, selects bool
}

// traceSummary is a trace's summary as its events are read.
type traceSummary struct {
	out   *APIServerTrace
	marks traceMarks
	gs    map[trace.GoID]*tracedGoroutine
	// The etcd connections' readers, in the order first seen.
	readers []*tracedReader
	// What each stack holds, once per stack (stacks repeat), for the
	// generation being read: a stack refers to its generation's tables.
	seen map[trace.Stack]stackMarks
}

// readEvery is how many events are read between two looks at whether
// the read ran out of time (readTraceTimeout).
const readEvery = 1 << 16

// summariseTrace reads a Go execution trace: each request's time by what
// its goroutines did (a goroutine created by one of a request's
// goroutines while the request lasts serves it too), and every
// goroutine's waits to run by kind. A request that began before the
// trace is left out, as is one not answered by its end.
func summariseTrace(ctx context.Context, r io.Reader, marks traceMarks) (*APIServerTrace, error) {
	s := newTraceSummary(marks)
	if err := eachEvent(ctx, r, s.event); err != nil {
		return nil, err
	}
	s.out.EtcdReaders.Readers = len(s.readers)
	return s.out, nil
}

func newTraceSummary(marks traceMarks) *traceSummary {
	return &traceSummary{
		out: &APIServerTrace{
			Requests: map[string]*TracedRequests{}, WaitsToRun: map[string]*TracedWaits{},
			EtcdReaders: &TracedReaders{},
		},
		marks: marks,
		gs:    map[trace.GoID]*tracedGoroutine{},
		seen:  map[trace.Stack]stackMarks{},
	}
}

func (s *traceSummary) marksOf(st trace.Stack) stackMarks {
	if m, ok := s.seen[st]; ok {
		return m
	}
	var m stackMarks
	for f := range st.Frames() {
		if m.verb == "" {
			if i := slices.IndexFunc(s.marks.verbs, func(v verbMark) bool { return strings.Contains(f.Func, v.mark) }); i >= 0 {
				m.verb = s.marks.verbs[i].verb
			}
		}
		m.request = m.request || strings.HasSuffix(f.Func, s.marks.request)
		m.reader = m.reader || strings.Contains(f.Func, s.marks.reader)
		m.writer = m.writer || s.marks.writer != "" && strings.Contains(f.Func, s.marks.writer)
		m.read = m.read || s.marks.read != "" && strings.Contains(f.Func, s.marks.read)
		m.write = m.write || s.marks.write != "" && strings.Contains(f.Func, s.marks.write)
		m.drain = m.drain || s.marks.drain != "" && strings.Contains(f.Func, s.marks.drain)
		m.idle = m.idle || s.marks.idle != "" && strings.Contains(f.Func, s.marks.idle)
		m.header = m.header || s.marks.header != "" && strings.Contains(f.Func, s.marks.header)
		m.selects = m.selects || f.Func == "runtime.selectgo"
		m.etcd = m.etcd || strings.Contains(f.Func, s.marks.etcd)
	}
	s.seen[st] = m
	return m
}

// event reads one event of the trace.
func (s *traceSummary) event(ev trace.Event) {
	s.out.Events++
	if ev.Kind() == trace.EventSync {
		clear(s.seen)
	} else if c, ok := goChangeOf(ev); ok {
		s.transition(c)
	}
}

// goChangeOf is the goroutine's change of state ev states, if it states
// one.
func goChangeOf(ev trace.Event) (goChange, bool) {
	if ev.Kind() != trace.EventStateTransition {
		return goChange{}, false
	}
	st := ev.StateTransition()
	if st.Resource.Kind != trace.ResourceGoroutine {
		return goChange{}, false
	}
	from, to := st.Goroutine()
	return goChange{
		now: ev.Time(), by: ev.Goroutine(), id: st.Resource.Goroutine(),
		from: from, to: to, stack: st.Stack, reason: st.Reason, noP: ev.Proc() == trace.NoProc,
	}, true
}

// goChange is a goroutine's change from one state to another.
type goChange struct {
	now trace.Time
	// by is the goroutine that made it, id the one that changed, and
	// stack id's: where it starts when created, where it stopped when it
	// leaves running, what it was doing when the trace states it (first,
	// and at each new generation).
	by, id   trace.GoID
	from, to trace.GoState
	stack    trace.Stack
	// reason is why it waits, when to is waiting; noP says the thread
	// that made the change held no P.
	reason string
	noP    bool
}

// transition reads one goroutine's change of state.
func (s *traceSummary) transition(c goChange) {
	now, by, id, from, to := c.now, c.by, c.id, c.from, c.to
	g := s.gs[id]
	if g == nil {
		g = &tracedGoroutine{state: from, since: now}
		s.gs[id] = g
	}
	m := s.marksOf(c.stack)
	if m.reader && g.reader == nil {
		g.reader = &tracedReader{index: len(s.readers), g: g, network: true}
		s.readers = append(s.readers, g.reader)
	}
	if m.writer && g.writer == nil {
		g.writer = &tracedWriter{g: g}
		// A writer starts in a closure: known only once it stops in
		// its loop, it serves no request, even one that started it.
		if req := g.req; req != nil && !g.root {
			if !req.done {
				req.advance(now)
				req.count(g.state, g.etcdWait, -1)
			}
			g.req = nil
		}
	}
	if from == to {
		// A new generation of the trace restating a state: nothing
		// changed, and a wait goes on.
		return
	}
	if from == trace.GoNotExist {
		if m.request {
			g.req, g.root = &tracedRequest{start: now, last: now}, true
		} else if p := s.gs[by]; p != nil && p.req != nil && !p.req.done && !m.reader && !m.writer {
			// A connection's reader or writer a request opened serves
			// every request after it, not this one.
			g.req = p.req
		}
	}
	req := g.req
	if req != nil && req.done {
		req = nil
	}
	if req != nil {
		req.advance(now)
		req.count(g.state, g.etcdWait, -1)
	}
	if g.state == trace.GoRunnable && to == trace.GoRunning {
		kind := "other"
		switch {
		case g.reader != nil:
			kind = "etcd client"
		case g.writer != nil:
			kind = "etcd writer"
		case req != nil:
			kind = "requests"
		}
		s.waits(kind).add(time.Duration(now - g.since))
	}
	if g.state == trace.GoWaiting && g.etcdWait && g.readersAt != nil {
		if req != nil {
			s.etcdAnswered(g, req, c)
		}
		g.readersAt = nil
	}
	if g.send != nil && from == trace.GoWaiting {
		g.send.dead, g.send = true, nil
	}
	if r := g.reader; r != nil {
		s.readerChanged(r, c, m.read)
	}
	if w := g.writer; w != nil {
		s.writerChanged(w, c, m)
	}
	if from == trace.GoRunning {
		g.etcdWait = to == trace.GoWaiting && m.etcd
		g.answerWait = g.etcdWait && (c.reason == "chan receive" || c.reason == "select")
		if g.etcdWait && req != nil {
			g.readersAt = s.readerClocks(now)
		}
		// A send is sampled when the goroutine that woke the writer
		// waits for the answer's headers next: its call's first wait.
		// (Reading a long answer, it wakes the writer for window updates
		// in later ones.)
		if cs := g.waking; cs != nil {
			g.waking = nil
			if g.answerWait && m.header && req != nil && !cs.dead {
				cs.start, cs.looked, g.send = now, !cs.ran, cs
			} else {
				cs.dead = true
			}
		}
		// A watch's first stop can be in the list handler that serves
		// it, before its watch's.
		if req := g.req; req != nil && m.verb != "" && (req.verb == "" || req.verb == "list" && m.verb == "watch") {
			req.verb = m.verb
		}
	}
	g.state, g.since = to, now
	if req != nil {
		req.count(to, g.etcdWait, 1)
	}
	if to == trace.GoNotExist {
		if g.root {
			g.req.done = true
			s.out.add(g.req, now)
		}
		delete(s.gs, id)
	}
}

// readerChanged keeps reader r's clock and marks as its goroutine
// changes state, before the goroutine's state is set; read says the
// stack is in a read of its connection.
func (s *traceSummary) readerChanged(r *tracedReader, c goChange, read bool) {
	r.clock = r.at(c.now)
	if c.from == trace.GoWaiting && r.network && c.to == trace.GoRunnable {
		r.woken, r.atWoken = c.now, r.clock
		s.out.EtcdReaders.NetworkWakes++
		if c.noP {
			s.out.EtcdReaders.WokenWithoutAnP++
		}
	}
	if c.from == trace.GoSyscall && r.reading {
		r.readEnd, r.reading = c.now, false
	}
	switch c.to {
	case trace.GoSyscall:
		r.reading = read
	case trace.GoWaiting:
		r.network = c.reason == "network" || c.from == trace.GoUndetermined
		if r.network {
			r.netWait = c.now
		}
	}
}

// writerChanged follows writer w's sends as its goroutine changes
// state, before the goroutine's state is set; m is what the stack holds.
func (s *traceSummary) writerChanged(w *tracedWriter, c goChange, m stackMarks) {
	now := c.now
	switch {
	case c.from == trace.GoWaiting && w.idle:
		w.idle = false
		// A send whose goroutine has not begun its wait, the writer
		// having waited for work since its wake: the call's last frame,
		// if handed over after this wake, woke no one, and is not known.
		for _, cs := range w.sends {
			cs.dead = true
		}
		w.sends = w.sends[:0]
		if p := s.gs[c.by]; p != nil && p != w.g {
			cs := &callSend{waitAtWoken: w.waitToRunAt(now)}
			if p.waking != nil {
				p.waking.dead = true // woken again for a later frame
			}
			p.waking = cs
			w.sends = append(w.sends, cs)
		}
	case c.from == trace.GoRunnable && c.to == trace.GoRunning:
		for _, cs := range w.sends {
			cs.ran = true
		}
	case c.from == trace.GoRunning && c.to == trace.GoSyscall:
		w.writing, w.draining, w.writeStart = m.write, m.drain, now
	case c.from == trace.GoSyscall && w.writing:
		w.writing, w.lastWrite = false, now
		for _, cs := range w.sends {
			if cs.firstWrite == 0 {
				cs.firstWrite, cs.writerWait = now, w.waitToRunAt(now)-cs.waitAtWoken
			}
			if cs.start == 0 || cs.drained != 0 {
				continue
			}
			if w.draining && cs.looked && w.writeStart >= cs.start {
				cs.drained, cs.byWrite = now, true
			}
			// After a draining write the loop waits for work or takes
			// it: a look. (A write made because the buffer filled can
			// follow the look that found nothing, before the drain.)
			cs.looked = cs.looked || w.draining
		}
	case c.from == trace.GoRunning && c.to == trace.GoWaiting && c.reason == "network":
		// A write that did not take all it was given (the socket was
		// full): the rest goes in the next.
		for _, cs := range w.sends {
			if cs.byWrite && cs.drained == w.lastWrite {
				cs.drained, cs.byWrite = 0, false
			}
		}
	case c.from == trace.GoRunning && c.to == trace.GoWaiting && m.idle && c.reason == "select":
		// It writes all it holds before it waits for work (not on its
		// buffer's lock): a call handed to it is out by its last write.
		w.idle = true
		for _, cs := range w.sends {
			switch {
			case cs.start == 0:
				cs.idleBefore = true
			case cs.drained == 0:
				cs.drained = w.lastWrite
			}
		}
		w.sends = slices.DeleteFunc(w.sends, func(cs *callSend) bool { return cs.dead || cs.start != 0 })
	case c.from == trace.GoUndetermined && c.to == trace.GoWaiting && m.idle && m.selects:
		w.idle = true
	}
	if w.g.state == trace.GoRunnable {
		w.waitToRun += time.Duration(now - w.g.since)
	}
}

// readerClocks are every reader's clock at now.
func (s *traceSummary) readerClocks(now trace.Time) []readerClock {
	cs := make([]readerClock, len(s.readers))
	for i, r := range s.readers {
		cs[i] = r.at(now)
	}
	return cs
}

// etcdAnswered counts goroutine g's wait for etcd for req, which c
// ends: split by what the reader that ended it did, if a reader known
// since before the wait ended a wait on a channel.
func (s *traceSummary) etcdAnswered(g *tracedGoroutine, req *tracedRequest, c goChange) {
	d := time.Duration(c.now - g.since)
	by := s.gs[c.by]
	if by == nil || by.reader == nil || by.reader.index >= len(g.readersAt) || !g.answerWait {
		req.etcdWaits.Other++
		req.etcdWaits.OtherSeconds += d.Seconds()
		return
	}
	r := by.reader
	w := TracedEtcdWaits{
		Count: 1, Seconds: d.Seconds(),
		HandOverAtMostSeconds: time.Duration(c.now - max(g.since, r.netWait)).Seconds(),
	}
	// The answer was read by the end of the reader's last read, unless
	// the trace missed a read.
	answered := c.now
	if r.readEnd < r.woken || r.readEnd < r.netWait {
		// A reader parks after a read finds nothing, and reads after it
		// is woken: a read was not seen, so the least is not known.
		w.ReadMissed = 1
	} else {
		w.HandOverAtLeastSeconds = time.Duration(c.now - max(g.since, r.readEnd)).Seconds()
		answered = r.readEnd
	}
	from := g.readersAt[r.index]
	if r.woken > g.since {
		w.BeforeWakeSeconds = time.Duration(r.woken - g.since).Seconds()
		from = r.atWoken
	} else {
		w.NoNetworkWait = 1
	}
	after := r.at(c.now).minus(from)
	w.ReaderWaitToRunSeconds = after.waitToRun.Seconds()
	w.ReaderRunningSeconds = after.running.Seconds()
	w.ReaderBlockedSeconds = after.blocked.Seconds()
	if cs := g.send; cs != nil {
		// The call was sent before its answer was read: most is at
		// most the read's end.
		most := answered
		switch {
		case cs.idleBefore:
			most = cs.start
		case cs.drained != 0:
			most = min(most, cs.drained)
		}
		most = max(most, cs.start)
		least := min(max(cs.firstWrite, cs.start), most)
		if cs.byWrite && cs.drained <= answered {
			w.SendDrained = 1
		}
		w.SendSampled, w.SendSampledSeconds, w.SendSampledBeforeWakeSeconds = 1, w.Seconds, w.BeforeWakeSeconds
		w.SendAtLeastSeconds = time.Duration(least - cs.start).Seconds()
		w.SendAtMostSeconds = time.Duration(most - cs.start).Seconds()
		w.SendWriterWaitToRunSeconds = cs.writerWait.Seconds()
	}
	req.etcdWaits.add(w)
}

func (s *traceSummary) waits(kind string) *TracedWaits { return waitsOf(s.out.WaitsToRun, kind) }

// waitsOf is kind's waits in m, added if missing.
func waitsOf(m map[string]*TracedWaits, kind string) *TracedWaits {
	w := m[kind]
	if w == nil {
		w = &TracedWaits{}
		m[kind] = w
	}
	return w
}

// add counts a request that ended at end.
func (t *APIServerTrace) add(req *tracedRequest, end trace.Time) {
	verb := cmp.Or(req.verb, "other")
	r := t.Requests[verb]
	if r == nil {
		r = &TracedRequests{}
		t.Requests[verb] = r
	}
	life := time.Duration(end - req.start)
	r.Count++
	r.Seconds += life.Seconds()
	r.WaitToRunSeconds += req.waitToRun.Seconds()
	r.RunningSeconds += req.run.Seconds()
	r.EtcdSeconds += req.etcdT.Seconds()
	if w := req.etcdWaits; w.Count+w.Other > 0 {
		if r.EtcdWaits == nil {
			r.EtcdWaits = &TracedEtcdWaits{}
		}
		if w.Count > 0 {
			w.Requests = 1
		}
		r.EtcdWaits.add(w)
	}
	if life >= slowRequest {
		r.Slow++
		r.SlowSeconds += life.Seconds()
		r.SlowWaitToRun += req.waitToRun.Seconds()
		r.SlowRunning += req.run.Seconds()
		r.SlowEtcd += req.etcdT.Seconds()
	}
}
