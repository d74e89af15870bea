package workload

import (
	"cmp"
	"context"
	"io"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// EtcdTrace is what a Go execution trace of etcd (its /debug/pprof/trace,
// served with --enable-pprof) shows of the gRPC calls it served over a
// window: unlike grpc_server_handling_seconds, which times a call from
// its handler's start to its return, each call's whole time in its
// stream's goroutine, from the goroutine's creation (as the connection's
// reader read the call's headers) to its end (the answer and status
// handed to the connection's writer).
type EtcdTrace struct {
	// Seconds is the window traced, from just after the hold starts;
	// Bytes and Events what the trace held.
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	Events  int     `json:"events"`
	// Calls are, by method ("Range", "Txn", "LeaseGrant"…, or "unknown"
	// for a call whose goroutine never stopped inside a method's
	// handler, so that its stack never named it), the calls whose
	// stream's goroutine was created and ended in the window.
	Calls map[string]*TracedCalls `json:"calls,omitempty"`
	// WaitsToRun are every goroutine's waits from ready to running, by
	// kind: "calls" (the calls' goroutines, in or out of the window),
	// "grpc reader" (the gRPC server's connection readers, which read
	// each call's frames and start its goroutine), "grpc writer" (the
	// connections' writers, which send each answer: the server's, and
	// those of etcd's own gRPC clients) and "other" (raft, the store,
	// the WAL…).
	WaitsToRun map[string]*TracedWaits `json:"waitsToRun,omitempty"`
	// Arrivals are, each time a server connection's reader was woken
	// because its connection had bytes to read and then started a call's
	// goroutine before it waited for bytes again, the time from the wake
	// to the first such start: the reader's wait to run and its reading
	// of the frames before the call's headers. Calls started later in the
	// same wake, and wakes that started none, are not counted, nor the
	// bytes' wait before the wake (the runtime looks for them when a P
	// runs out of work, or every 10 ms).
	Arrivals *TracedWaits `json:"arrivals,omitempty"`
	// AnswerSends are, for each call that woke a connection's writer
	// waiting for work once its request was read (as handing it the
	// answer does), the time from the call's end
	// to the end of that writer's next write to its connection, or 0 if
	// the writer waited for more work first (it writes all it holds
	// before, so the answer went out before the call ended): the
	// writer's wait to run and its framing of all it held. An answer
	// handed to a writer already awake is not counted; a large answer
	// may take more writes.
	AnswerSends *TracedWaits `json:"answerSends,omitempty"`
}

// TracedCalls are one method's calls in an etcd trace: how many, and
// their goroutines' time from creation to end (Seconds), split into
// waiting to run (WaitToRunSeconds, of which FirstWaitToRunSeconds from
// creation to first running), running or in a system call
// (RunningSeconds), and blocked: reading the call's request, for its
// frames (ReceivingSeconds: they usually arrive with the headers, so
// mostly a wait for the connection's reader to reach them); for flow
// control's quota to send the answer (SendingSeconds); on anything else
// (BlockedSeconds: a write's raft commit and apply, a linearizable
// read's index, a lock). Those parts add up to Seconds.
// AfterReadSeconds is the time from the end of the connection reader's
// last read before it started the call (which read the call's headers)
// to the start. AfterRequestReadSeconds is the time from the end of the
// reader's last read before the call first stopped inside its method's
// handler (or ended, if it never did) to the call's end: the request's
// last bytes had been read by then (gRPC reads the whole request before
// it calls the handler), so it is a least of the call's time in etcd
// with its whole request read, to its answer handed to the writer.
// ReadBeforeHandler counts the calls whose reader read again between
// starting them and that stop, whose least leaves out the time before
// that read. A call whose reader's reads the trace did not show has
// both after-read figures 0, and still counts.
type TracedCalls struct {
	Count                   int     `json:"count"`
	Seconds                 float64 `json:"seconds"`
	FirstWaitToRunSeconds   float64 `json:"firstWaitToRunSeconds"`
	WaitToRunSeconds        float64 `json:"waitToRunSeconds"`
	RunningSeconds          float64 `json:"runningSeconds"`
	ReceivingSeconds        float64 `json:"receivingSeconds"`
	SendingSeconds          float64 `json:"sendingSeconds"`
	BlockedSeconds          float64 `json:"blockedSeconds"`
	AfterReadSeconds        float64 `json:"afterReadSeconds"`
	AfterRequestReadSeconds float64 `json:"afterRequestReadSeconds"`
	ReadBeforeHandler       int     `json:"readBeforeHandler"`
}

// etcdMarks name, by substrings of function names, what a goroutine of
// etcd does (grpc-go v1.83's server, etcd v3.6's generated handlers),
// checked on a traced fleet.
var etcdMarks = struct {
	// call starts a call's goroutine (serveStreams's closure, run with
	// go for each new stream); handler is the generated handler's
	// prefix, followed by "Service_Method_Handler".
	call, handler string
	// receive and send are in the stack of a call blocked reading its
	// request and waiting for quota to send its answer.
	receive, send string
	// reader and writer are in the stacks of a server connection's
	// reader and of any connection's writer, write in the stack of a
	// writer's system call that writes to its connection.
	reader, writer, read, write string
	// idle is in the stack of a writer blocked for work.
	idle string
}{
	call:    "grpc.(*Server).serveStreams.func",
	handler: "etcdserverpb._",
	receive: "grpc.recvAndDecompress",
	send:    "transport.(*writeQuota).get",
	reader:  "transport.(*http2Server).HandleStreams",
	writer:  grpcWriterMark,
	read:    readMark,
	write:   writeMark,
	idle:    grpcIdleMark,
}

// etcdStack is what one stack holds of etcdMarks.
type etcdStack struct {
	method                                                 string
	call, receive, send, reader, writer, read, write, idle bool
}

// Where a call's goroutine is blocked.
const (
	blockedElsewhere = iota
	blockedReceiving
	blockedSending
)

// etcdGoroutine is one of etcd's goroutines as the trace is read.
type etcdGoroutine struct {
	state trace.GoState
	since trace.Time
	kind  string // "calls", "grpc reader", "grpc writer" or "other"
	// call is set for a call's goroutine created in the window.
	call *etcdCall
	// A reader's network says it waits for bytes, woken when it was
	// woken by them and has started no call since (0: none), reading
	// that it is in a read of its connection, readEnd when its last
	// read ended (0: none seen).
	network, reading bool
	woken, readEnd   trace.Time
	// A writer's writing says it is in a write to its connection, idle
	// that it waits for work; answers are when the calls that woke it
	// ended, since its last write ended.
	writing, idle bool
	answers       []trace.Time
}

// etcdCall is one call's time so far.
type etcdCall struct {
	method  string
	start   trace.Time
	ran     bool
	blocked int
	parts   TracedCalls
	// reader started the call; readAt is the end of its last read as
	// it did, then once the call's request was read (requestDone: it
	// first stopped in its handler, or ended).
	reader      *etcdGoroutine
	readAt      trace.Time
	requestDone bool
	// writer is the last idle writer the call woke once its request was
	// read, which sends its answer.
	writer *etcdGoroutine
}

// requestRead is called once the call's whole request has been read:
// it first stops in its handler, or ends.
func (c *etcdCall) requestRead() {
	c.requestDone = true
	if c.reader == nil {
		return
	}
	if c.reader.readEnd != c.readAt {
		c.parts.ReadBeforeHandler++
	}
	c.readAt = c.reader.readEnd
}

// sinceRead is how long before now reader r's last read ended, in
// seconds (0 if none was seen).
func sinceRead(r *etcdGoroutine, now trace.Time) float64 {
	if r.readEnd == 0 {
		return 0
	}
	return time.Duration(now - r.readEnd).Seconds()
}

// etcdSummary is an etcd trace's summary as its events are read.
type etcdSummary struct {
	out  *EtcdTrace
	gs   map[trace.GoID]*etcdGoroutine
	seen map[trace.Stack]etcdStack
}

// summariseEtcdTrace reads a Go execution trace of etcd.
func summariseEtcdTrace(ctx context.Context, r io.Reader) (*EtcdTrace, error) {
	s := newEtcdSummary()
	if err := eachEvent(ctx, r, s.event); err != nil {
		return nil, err
	}
	return s.out, nil
}

func newEtcdSummary() *etcdSummary {
	return &etcdSummary{
		out: &EtcdTrace{
			Calls: map[string]*TracedCalls{}, WaitsToRun: map[string]*TracedWaits{},
			Arrivals: &TracedWaits{}, AnswerSends: &TracedWaits{},
		},
		gs:   map[trace.GoID]*etcdGoroutine{},
		seen: map[trace.Stack]etcdStack{},
	}
}

func (s *etcdSummary) marksOf(st trace.Stack) etcdStack {
	if m, ok := s.seen[st]; ok {
		return m
	}
	var m etcdStack
	for f := range st.Frames() {
		if m.method == "" {
			m.method = handlerMethod(f.Func)
		}
		m.call = m.call || strings.Contains(f.Func, etcdMarks.call)
		m.receive = m.receive || strings.Contains(f.Func, etcdMarks.receive)
		m.send = m.send || strings.Contains(f.Func, etcdMarks.send)
		m.reader = m.reader || strings.Contains(f.Func, etcdMarks.reader)
		m.writer = m.writer || strings.Contains(f.Func, etcdMarks.writer)
		m.read = m.read || strings.Contains(f.Func, etcdMarks.read)
		m.write = m.write || strings.Contains(f.Func, etcdMarks.write)
		m.idle = m.idle || strings.Contains(f.Func, etcdMarks.idle)
	}
	s.seen[st] = m
	return m
}

// handlerMethod is the method a generated etcd handler's function name
// serves ("go.etcd.io/etcd/api/v3/etcdserverpb._KV_Txn_Handler" and its
// closures: "Txn"), or "".
func handlerMethod(fn string) string {
	_, rest, ok := strings.Cut(fn, etcdMarks.handler)
	if !ok {
		return ""
	}
	rest, _, ok = strings.Cut(rest, "_Handler")
	if !ok {
		return ""
	}
	_, method, ok := strings.Cut(rest, "_")
	if !ok {
		return ""
	}
	return method
}

func (s *etcdSummary) event(ev trace.Event) {
	s.out.Events++
	if ev.Kind() == trace.EventSync {
		clear(s.seen)
	} else if c, ok := goChangeOf(ev); ok {
		s.transition(c)
	}
}

// transition reads one goroutine's change of state.
func (s *etcdSummary) transition(c goChange) {
	now, id, from, to := c.now, c.id, c.from, c.to
	g := s.gs[id]
	if g == nil {
		g = &etcdGoroutine{state: from, since: now, kind: "other"}
		s.gs[id] = g
	}
	m := s.marksOf(c.stack)
	// A kind, once known, stays: a reader's stack can hold the call
	// mark (it runs the closures serveStreams passes it).
	if g.kind == "other" {
		switch {
		case m.reader:
			g.kind = "grpc reader"
		case m.writer:
			g.kind = "grpc writer"
		case m.call, m.method != "": // a call begun before the window too
			g.kind = "calls"
		}
	}
	if from == to {
		return // a new generation restating a state
	}
	by := s.gs[c.by]
	reader := by
	if reader != nil && reader.kind != "grpc reader" {
		reader = nil
	}
	if from == trace.GoNotExist && g.kind == "calls" {
		g.call = &etcdCall{start: now}
		if reader != nil {
			if reader.woken != 0 {
				s.out.Arrivals.add(time.Duration(now - reader.woken))
				reader.woken = 0
			}
			g.call.reader, g.call.readAt = reader, reader.readEnd
			g.call.parts.AfterReadSeconds = sinceRead(reader, now)
		}
	}
	if call := g.call; call != nil {
		call.add(g.state, time.Duration(now-g.since).Seconds())
		if from == trace.GoRunning {
			if call.method == "" {
				call.method = m.method
			}
			if m.method != "" && !call.requestDone {
				call.requestRead()
			}
			call.blocked = blockedElsewhere
			switch {
			case m.receive:
				call.blocked = blockedReceiving
			case m.send:
				call.blocked = blockedSending
			}
		}
	}
	if g.kind == "grpc writer" && g.idle && from == trace.GoWaiting {
		// Woken for work; a call hands its answer over after its
		// handler returns (before its request is read, it can only hand
		// over a window update).
		g.idle = false
		if by != nil && by.call != nil && by.call.requestDone {
			by.call.writer = g
		}
	}
	switch g.kind {
	case "grpc reader":
		switch {
		case from == trace.GoRunning && to == trace.GoSyscall:
			g.reading = m.read
		case from == trace.GoSyscall && g.reading:
			g.readEnd, g.reading = now, false
		case to == trace.GoWaiting && (from == trace.GoRunning && c.reason == "network" || from == trace.GoUndetermined):
			// A wake is counted until the reader waits for bytes again:
			// its reads, preemptions and locks keep it. One waiting as
			// the trace begins waits for bytes.
			g.network, g.woken = true, 0
		case from == trace.GoWaiting && g.network:
			g.network, g.woken = false, now
		}
	case "grpc writer":
		switch {
		case from == trace.GoRunning && to == trace.GoSyscall:
			g.writing = m.write
		case from == trace.GoSyscall && g.writing:
			g.writing = false
			for _, end := range g.answers {
				s.out.AnswerSends.add(time.Duration(now - end))
			}
			g.answers = g.answers[:0]
		case from == trace.GoRunning && to == trace.GoWaiting && m.idle && c.reason == "select":
			// It writes all it holds before it waits for more (not on
			// the buffer's lock): an answer still counted went out
			// before its call ended.
			g.idle = true
			for range g.answers {
				s.out.AnswerSends.add(0)
			}
			g.answers = g.answers[:0]
		case from == trace.GoUndetermined && to == trace.GoWaiting && m.idle:
			g.idle = true
		}
	}
	if g.state == trace.GoRunnable && to == trace.GoRunning {
		waitsOf(s.out.WaitsToRun, g.kind).add(time.Duration(now - g.since))
	}
	g.state, g.since = to, now
	if to == trace.GoNotExist {
		if call := g.call; call != nil {
			if !call.requestDone {
				call.requestRead()
			}
			if call.readAt != 0 {
				call.parts.AfterRequestReadSeconds = time.Duration(now - call.readAt).Seconds()
			}
			call.parts.Count, call.parts.Seconds = 1, time.Duration(now-call.start).Seconds()
			s.out.addCall(cmp.Or(call.method, "unknown"), call.parts)
			if w := call.writer; w != nil {
				w.answers = append(w.answers, now)
			}
		}
		delete(s.gs, id)
	}
}

// add counts d seconds the call's goroutine spent in state.
func (c *etcdCall) add(state trace.GoState, d float64) {
	switch state {
	case trace.GoRunnable:
		c.parts.WaitToRunSeconds += d
		if !c.ran {
			c.parts.FirstWaitToRunSeconds += d
		}
	case trace.GoRunning, trace.GoSyscall:
		c.ran = true
		c.parts.RunningSeconds += d
	case trace.GoWaiting:
		switch c.blocked {
		case blockedReceiving:
			c.parts.ReceivingSeconds += d
		case blockedSending:
			c.parts.SendingSeconds += d
		default:
			c.parts.BlockedSeconds += d
		}
	}
}

func (t *EtcdTrace) addCall(method string, c TracedCalls) {
	a := t.Calls[method]
	if a == nil {
		a = &TracedCalls{}
		t.Calls[method] = a
	}
	a.Count += c.Count
	a.Seconds += c.Seconds
	a.FirstWaitToRunSeconds += c.FirstWaitToRunSeconds
	a.WaitToRunSeconds += c.WaitToRunSeconds
	a.RunningSeconds += c.RunningSeconds
	a.ReceivingSeconds += c.ReceivingSeconds
	a.SendingSeconds += c.SendingSeconds
	a.BlockedSeconds += c.BlockedSeconds
	a.AfterReadSeconds += c.AfterReadSeconds
	a.AfterRequestReadSeconds += c.AfterRequestReadSeconds
	a.ReadBeforeHandler += c.ReadBeforeHandler
}

// readEtcdTrace summarises the trace in file path, then removes it.
func readEtcdTrace(ctx context.Context, path string, d time.Duration) (*EtcdTrace, error) {
	t, size, err := readTraceFile(ctx, path, summariseEtcdTrace)
	if err != nil {
		return nil, err
	}
	t.Seconds, t.Bytes = d.Seconds(), size
	return t, nil
}
