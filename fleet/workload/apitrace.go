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
	"k8s.io/client-go/rest"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// APIServerTrace is what a Go execution trace of kube-apiserver (its
// /debug/pprof/trace) shows of its requests and goroutines over a
// window: unlike its /metrics, every goroutine's every wait to run, and
// which request's goroutines waited.
type APIServerTrace struct {
	// Seconds is the window traced, from the start of the hold;
	// Bytes and Events what the trace held.
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	Events  int     `json:"events"`
	// Requests are, by verb ("delete", "create", "update", "patch",
	// "get", "list", "watch", "deletecollection", or "other" for a
	// request no resource handler served, such as discovery), the HTTP/2
	// requests the apiserver both received and answered in the window.
	Requests map[string]*TracedRequests `json:"requests,omitempty"`
	// WaitsToRun are every goroutine's waits from ready to running, by
	// kind: "requests" (a request's goroutines), "etcd client" (the
	// readers of the apiserver's connections to etcd, which hand each
	// answer to the request waiting for it) and "other".
	WaitsToRun map[string]*TracedWaits `json:"waitsToRun,omitempty"`
}

// TracedRequests are one verb's requests in a trace: how many, their
// time from the goroutine that received each starting to its end
// (Seconds), and of it the time when one of the request's goroutines
// (the HTTP/2 stream's, the timeout filter's, the one the handler runs
// the storage call in…) ran or was in a system call (RunningSeconds);
// else when one was ready to run but waited, none of the apiserver's
// GOMAXPROCS slots free (WaitToRunSeconds; a thread the kernel keeps
// from a core while it runs one counts as running); else when one
// waited for etcd, blocked in etcd's client (EtcdSeconds, which holds
// the etcd client reader's wait to run before it hands the answer
// over). The rest is waiting for anything else: a queue, a lock, the
// client. Slow… are the same for the requests of half a second or more,
// the audit log's threshold for a request's layers.
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
	// the start of an etcd connection's reader.
	etcd, reader string
}

type verbMark struct{ mark, verb string }

// apiserverMarks are kube-apiserver's (v1.36; k8s.io/apiserver's
// endpoints/handlers), checked on a traced fleet.
var apiserverMarks = traceMarks{
	request: "http2.(*serverConn).runHandler",
	verbs: []verbMark{
		{"handlers.DeleteResource.", "delete"},
		{"handlers.DeleteCollection.", "deletecollection"},
		{"handlers.CreateResource.", "create"},
		{"handlers.CreateNamedResource.", "create"},
		{"handlers.UpdateResource.", "update"},
		{"handlers.PatchResource.", "patch"},
		{"handlers.handleWatch", "watch"},
		{"handlers.ListResource.", "list"},
		{"handlers.GetResource.", "get"},
		{"handlers.getResourceHandler.", "get"},
	},
	etcd:   "go.etcd.io/etcd/client/v3",
	reader: "grpc/internal/transport.(*http2Client).reader",
}

// tracing is a trace of the apiserver being taken.
type tracing struct {
	d    time.Duration
	done chan struct{}
	path string
	err  error
}

// startAPIServerTrace starts taking a trace of d (none when d is 0).
func startAPIServerTrace(ctx context.Context, admin kubernetes.Interface, d time.Duration) *tracing {
	if d == 0 {
		return nil
	}
	t := &tracing{d: d, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.path, t.err = captureAPIServerTrace(ctx, admin.Discovery().RESTClient(), d)
	}()
	return t
}

// result waits for the trace, then reads it; nil, with a warning, if
// it could not be taken or read.
func (t *tracing) result(report progress.Func) *APIServerTrace {
	if t == nil {
		return nil
	}
	<-t.done
	if t.err != nil {
		report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("the apiserver's trace is not recorded: %v", t.err)})
		return nil
	}
	done := progress.Step(report, "apiserver trace", fmt.Sprintf("reading the apiserver's trace of the hold's first %s", t.d), 0)
	defer done()
	out, err := readAPIServerTrace(t.path, t.d)
	if err != nil {
		report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf("the apiserver's trace is not recorded: %v", err)})
	}
	return out
}

// captureAPIServerTrace asks the apiserver for an execution trace of d
// and writes it to a temporary file, returned for readAPIServerTrace
// (which removes it). It is read only after the window, so that reading
// it costs the run's CPU nothing while it is measured.
func captureAPIServerTrace(ctx context.Context, c rest.Interface, d time.Duration) (string, error) {
	body, err := c.Get().AbsPath("/debug/pprof/trace").Param("seconds", fmt.Sprint(int(d.Seconds()))).Timeout(d + time.Minute).Stream(ctx)
	if err != nil {
		return "", fmt.Errorf("GET /debug/pprof/trace: %w", err)
	}
	defer body.Close()
	f, err := os.CreateTemp("", "ghostfleet-apiserver-*.trace")
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
		return "", fmt.Errorf("reading the trace: %w", err)
	}
	return f.Name(), nil
}

// readAPIServerTrace summarises the trace in file path, then removes it.
func readAPIServerTrace(path string, d time.Duration) (*APIServerTrace, error) {
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
	t, err := summariseTrace(f, apiserverMarks)
	if err != nil {
		return nil, err
	}
	t.Seconds, t.Bytes = d.Seconds(), st.Size()
	return t, nil
}

// tracedGoroutine is one goroutine's state as the trace is read.
type tracedGoroutine struct {
	state    trace.GoState
	since    trace.Time
	etcdWait bool // waiting, blocked in etcd's client
	reader   bool
	req      *tracedRequest // the request it serves, if any
	root     bool           // it received req
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

// summariseTrace reads a Go execution trace: each request's time by what
// its goroutines did (a goroutine created by one of a request's
// goroutines while the request lasts serves it too), and every
// goroutine's waits to run by kind. A request that began before the
// trace is left out, as is one not answered by its end.
func summariseTrace(r io.Reader, marks traceMarks) (*APIServerTrace, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a Go execution trace: %w", err)
	}
	out := &APIServerTrace{Requests: map[string]*TracedRequests{}, WaitsToRun: map[string]*TracedWaits{}}
	gs := map[trace.GoID]*tracedGoroutine{}
	// What a stack holds, once per stack: stacks repeat.
	type stackMarks struct {
		verb                  string
		request, reader, etcd bool
	}
	seen := map[trace.Stack]stackMarks{}
	marksOf := func(s trace.Stack) stackMarks {
		if m, ok := seen[s]; ok {
			return m
		}
		var m stackMarks
		for f := range s.Frames() {
			if m.verb == "" {
				if i := slices.IndexFunc(marks.verbs, func(v verbMark) bool { return strings.Contains(f.Func, v.mark) }); i >= 0 {
					m.verb = marks.verbs[i].verb
				}
			}
			m.request = m.request || strings.HasSuffix(f.Func, marks.request)
			m.reader = m.reader || strings.Contains(f.Func, marks.reader)
			m.etcd = m.etcd || strings.Contains(f.Func, marks.etcd)
		}
		seen[s] = m
		return m
	}
	waits := func(kind string) *TracedWaits {
		w := out.WaitsToRun[kind]
		if w == nil {
			w = &TracedWaits{}
			out.WaitsToRun[kind] = w
		}
		return w
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the trace after %d events: %w", out.Events, err)
		}
		out.Events++
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id, now := st.Resource.Goroutine(), ev.Time()
		from, to := st.Goroutine()
		g := gs[id]
		if g == nil {
			g = &tracedGoroutine{state: from, since: now}
			gs[id] = g
		}
		if from == trace.GoNotExist {
			// Created: the new goroutine's stack is where it starts.
			if marksOf(st.Stack).request {
				g.req, g.root = &tracedRequest{start: now, last: now}, true
			} else if p := gs[ev.Goroutine()]; p != nil && p.req != nil && !p.req.done {
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
			case g.req != nil:
				kind = "requests"
			case g.reader:
				kind = "etcd client"
			}
			waits(kind).add(time.Duration(now - g.since))
		}
		// Leaving running, the event is the goroutine's own and its
		// stack is where it stopped. (An etcd client reader is known by
		// that stack, so its first wait in the trace may count as
		// other.)
		if from == trace.GoRunning {
			m := marksOf(cmp.Or(st.Stack, ev.Stack()))
			g.etcdWait = to == trace.GoWaiting && m.etcd
			g.reader = g.reader || m.reader
			if g.req != nil && g.req.verb == "" && m.verb != "" {
				g.req.verb = m.verb
			}
		}
		g.state, g.since = to, now
		if req != nil {
			req.count(to, g.etcdWait, 1)
		}
		if to == trace.GoNotExist {
			if g.root {
				g.req.done = true
				out.add(g.req, now)
			}
			delete(gs, id)
		}
	}
	return out, nil
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
	if life >= slowRequest {
		r.Slow++
		r.SlowSeconds += life.Seconds()
		r.SlowWaitToRun += req.waitToRun.Seconds()
		r.SlowRunning += req.run.Seconds()
		r.SlowEtcd += req.etcdT.Seconds()
	}
}
