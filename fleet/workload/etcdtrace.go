package workload

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
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
	// goroutine before it blocked again, the time from the wake to the
	// first such start: the reader's wait to run and its reading of the
	// frames before the call's headers. Calls started later in the same
	// read, and bytes that started none, are not counted.
	Arrivals *TracedWaits `json:"arrivals,omitempty"`
	// AnswerSends are, each time a call's goroutine woke a connection's
	// writer blocked for work (handing it an answer or a status), the
	// time from that wake to the end of the writer's next write to its
	// connection: the writer's wait to run and its framing of what it
	// was handed (with anything handed to it meanwhile). An answer handed
	// to a writer already awake is not counted.
	AnswerSends *TracedWaits `json:"answerSends,omitempty"`
}

// TracedCalls are one method's calls in an etcd trace: how many, and
// their goroutines' time from creation to end (Seconds), split into
// waiting to run (WaitToRunSeconds, of which FirstWaitToRunSeconds from
// creation to first running), running or in a system call
// (RunningSeconds), and blocked: reading the call's request, for its
// frames to arrive (ReceivingSeconds); for flow control's quota to send
// the answer, that is for the connection's writer to send what it holds
// (SendingSeconds); on anything else (BlockedSeconds: a write's raft
// commit and apply, a linearizable read's index, a lock). The parts add
// up to Seconds.
type TracedCalls struct {
	Count                 int     `json:"count"`
	Seconds               float64 `json:"seconds"`
	FirstWaitToRunSeconds float64 `json:"firstWaitToRunSeconds"`
	WaitToRunSeconds      float64 `json:"waitToRunSeconds"`
	RunningSeconds        float64 `json:"runningSeconds"`
	ReceivingSeconds      float64 `json:"receivingSeconds"`
	SendingSeconds        float64 `json:"sendingSeconds"`
	BlockedSeconds        float64 `json:"blockedSeconds"`
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
	reader, writer, write string
}{
	call:    "grpc.(*Server).serveStreams.func",
	handler: "etcdserverpb._",
	receive: "grpc.recvAndDecompress",
	send:    "transport.(*writeQuota).get",
	reader:  "transport.(*http2Server).HandleStreams",
	writer:  "transport.(*loopyWriter).run",
	write:   "syscall.write",
}

// etcdStack is what one stack holds of etcdMarks.
type etcdStack struct {
	method                                     string
	call, receive, send, reader, writer, write bool
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
	// network says a reader or writer is blocked on its connection
	// (reader) or in a write to it (writer); woken is when a reader was
	// woken by bytes, or a writer by a call, and not yet counted (0).
	network bool
	woken   trace.Time
}

// etcdCall is one call's time so far.
type etcdCall struct {
	method  string
	start   trace.Time
	ran     bool
	blocked int
	parts   TracedCalls
}

// etcdSummary is an etcd trace's summary as its events are read.
type etcdSummary struct {
	out  *EtcdTrace
	gs   map[trace.GoID]*etcdGoroutine
	seen map[trace.Stack]etcdStack
}

// summariseEtcdTrace reads a Go execution trace of etcd.
func summariseEtcdTrace(ctx context.Context, r io.Reader) (_ *EtcdTrace, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading the trace: %v", p)
		}
	}()
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a Go execution trace: %w", err)
	}
	s := newEtcdSummary()
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the trace after %d events: %w", s.out.Events, err)
		}
		if s.out.Events%readEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.event(ev)
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
		m.write = m.write || strings.Contains(f.Func, etcdMarks.write)
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
		return
	}
	if ev.Kind() != trace.EventStateTransition {
		return
	}
	st := ev.StateTransition()
	if st.Resource.Kind != trace.ResourceGoroutine {
		return
	}
	from, to := st.Goroutine()
	s.transition(goChange{
		now: ev.Time(), by: ev.Goroutine(), id: st.Resource.Goroutine(),
		from: from, to: to, stack: st.Stack, reason: st.Reason,
	})
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
	// A reader's stack can hold the call mark: it runs the closure that
	// starts a call's goroutine.
	switch {
	case m.reader:
		g.kind = "grpc reader"
	case m.writer:
		g.kind = "grpc writer"
	case m.call:
		g.kind = "calls"
	case m.method != "" && g.kind == "other":
		g.kind = "calls" // a call begun before the window
	}
	if from == to {
		return // a new generation restating a state
	}
	by := s.gs[c.by]
	if from == trace.GoNotExist && g.kind == "calls" {
		g.call = &etcdCall{start: now}
		if by != nil && by.kind == "grpc reader" && by.woken != 0 {
			s.out.Arrivals.add(time.Duration(now - by.woken))
			by.woken = 0
		}
	}
	if call := g.call; call != nil {
		call.add(g.state, time.Duration(now-g.since).Seconds())
		if from == trace.GoRunning {
			if call.method == "" {
				call.method = m.method
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
	switch g.kind {
	case "grpc reader":
		switch {
		case from == trace.GoRunning && to == trace.GoWaiting:
			// Its reads' system calls and preemptions keep the wake.
			g.network, g.woken = c.reason == "network", 0
		case from == trace.GoWaiting && g.network:
			g.woken = now
		}
	case "grpc writer":
		switch {
		case from == trace.GoRunning:
			g.network = to == trace.GoSyscall && m.write
			if to == trace.GoWaiting && c.reason != "network" {
				g.woken = 0 // it writes all it holds before it waits for more
			}
		case from == trace.GoWaiting && by != nil && by.kind == "calls" && g.woken == 0:
			g.woken = now
		case from == trace.GoSyscall && g.network && g.woken != 0:
			s.out.AnswerSends.add(time.Duration(now - g.woken))
			g.woken = 0
		}
	}
	if g.state == trace.GoRunnable && to == trace.GoRunning {
		w := s.out.WaitsToRun[g.kind]
		if w == nil {
			w = &TracedWaits{}
			s.out.WaitsToRun[g.kind] = w
		}
		w.add(time.Duration(now - g.since))
	}
	g.state, g.since = to, now
	if to == trace.GoNotExist {
		if call := g.call; call != nil {
			call.parts.Count, call.parts.Seconds = 1, time.Duration(now-call.start).Seconds()
			s.out.addCall(cmp.Or(call.method, "unknown"), call.parts)
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
}

// readEtcdTrace summarises the trace in file path, then removes it.
func readEtcdTrace(ctx context.Context, path string, d time.Duration) (*EtcdTrace, error) {
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := summariseEtcdTrace(ctx, f)
	if err != nil {
		return nil, err
	}
	t.Seconds, t.Bytes = d.Seconds(), st.Size()
	return t, nil
}
