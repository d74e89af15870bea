package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// Verbs churn sends.
const (
	VerbCreate = "create"
	VerbDelete = "delete"
)

// ChurnOptions configures a churn run.
type ChurnOptions struct {
	RunID     string        `json:"runId"`
	Namespace string        `json:"namespace"`
	Rate      float64       `json:"rate"`     // pods created (and deleted) per second
	Duration  time.Duration `json:"duration"` // how long pods are created
	Lifetime  time.Duration `json:"lifetime"` // each pod is deleted this long after its create was due
	GPUs      int           `json:"gpusPerPod"`
	// Limited bounds the requests in flight to Concurrency; a request
	// whose slot comes when all are busy is shed (not sent), and each
	// request gives up after RequestTimeout.
	Limited        bool          `json:"limited"`
	Concurrency    int           `json:"concurrency,omitempty"`
	RequestTimeout time.Duration `json:"requestTimeout,omitempty"`
	Report         progress.Func `json:"-"`
	Clock          clock.Clock   `json:"-"`
	// Requests, when set, is the counter on the load client's transport;
	// its figures go into the result.
	Requests *requests.Counter `json:"-"`
}

// Validate checks the options and fills defaults.
func (o *ChurnOptions) Validate() error {
	if o.Rate <= 0 || o.Rate > 5000 {
		return fmt.Errorf("rate %g is out of range: allowed are more than 0 and at most 5000 pods/s", o.Rate)
	}
	if o.Duration <= 0 {
		return fmt.Errorf("duration %s is out of range: it must be more than 0 (e.g. 60s, 10m)", o.Duration)
	}
	if o.Lifetime == 0 {
		o.Lifetime = min(10*time.Second, o.Duration/2)
	}
	if o.Lifetime < 0 || o.Lifetime >= o.Duration {
		return fmt.Errorf("lifetime %s is out of range: it must be more than 0 and less than the duration %s", o.Lifetime, o.Duration)
	}
	if o.GPUs < 0 {
		return fmt.Errorf("GPUs per pod %d is out of range: allowed are 0 or more", o.GPUs)
	}
	if o.Limited {
		if o.Concurrency < 1 {
			return fmt.Errorf("concurrency %d is out of range: allowed are 1 or more", o.Concurrency)
		}
		if o.RequestTimeout <= 0 {
			return fmt.Errorf("request timeout %s is out of range: it must be more than 0", o.RequestTimeout)
		}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// ChurnSecond is one second of a churn run.
type ChurnSecond struct {
	Second  int     `json:"second"`
	Target  float64 `json:"targetRate"`
	Created int     `json:"created"`
	Deleted int     `json:"deleted"`
	Errors  int     `json:"errors"`
	Shed    int     `json:"shed,omitempty"`
}

// RateChange records a rate changed while the run went on.
type RateChange struct {
	AtSeconds float64 `json:"atSeconds"`
	Rate      float64 `json:"rate"`
}

// ChurnResult is what a churn run measured.
type ChurnResult struct {
	TargetRate         float64        `json:"targetRate"`
	DurationSeconds    float64        `json:"durationSeconds"`
	LifetimeSeconds    float64        `json:"lifetimeSeconds"`
	AchievedCreateRate float64        `json:"achievedCreateRate"`
	AchievedDeleteRate float64        `json:"achievedDeleteRate"`
	CreateRatio        float64        `json:"createRatio"` // creates that succeeded / create slots
	Attempted          map[string]int `json:"attempted"`
	Created            int            `json:"created"`
	Deleted            int            `json:"deleted"`
	// Errors counts failed requests by kind (429, 4xx, 5xx, timeout,
	// connection, other); ErrorsByVerb splits them per verb.
	Errors       map[string]int            `json:"errors"`
	ErrorsByVerb map[string]map[string]int `json:"errorsByVerb"`
	// Shed counts requests not sent because every slot was busy
	// (churn-limited only).
	Shed           map[string]int         `json:"shed,omitempty"`
	Latency        map[string]Percentiles `json:"latency"`
	PerSecond      []ChurnSecond          `json:"perSecond"`
	RateChanges    []RateChange           `json:"rateChanges,omitempty"`
	Limited        bool                   `json:"limited"`
	Concurrency    int                    `json:"concurrency,omitempty"`
	RequestTimeout float64                `json:"requestTimeoutSeconds,omitempty"`
	Interrupted    bool                   `json:"interrupted,omitempty"`
	// Requests is what the transport counted, the same way as for every
	// other run; Errors above is what the churn's own calls returned.
	Requests *requests.Stats `json:"requests,omitempty"`
}

// PodAPI is what churn sends: single creates and deletes, never retried
// (a retry would hide the 429 we want to count).
type PodAPI interface {
	Create(ctx context.Context, pod *corev1.Pod) error
	Delete(ctx context.Context, name string) error
}

// restPods sends through the REST client so that retries can be turned off.
type restPods struct {
	cs        kubernetes.Interface
	namespace string
}

// NewPodAPI returns the PodAPI of namespace ns through cs.
func NewPodAPI(cs kubernetes.Interface, ns string) PodAPI { return restPods{cs, ns} }

func (r restPods) Create(ctx context.Context, pod *corev1.Pod) error {
	return r.cs.CoreV1().RESTClient().Post().Namespace(r.namespace).Resource("pods").
		MaxRetries(0).Body(pod).Do(ctx).Error()
}

func (r restPods) Delete(ctx context.Context, name string) error {
	return r.cs.CoreV1().RESTClient().Delete().Namespace(r.namespace).Resource("pods").Name(name).
		MaxRetries(0).Body(&metav1.DeleteOptions{}).Do(ctx).Error()
}

// ErrorsByVerbTotal is how many requests of verb failed.
func (r ChurnResult) ErrorsByVerbTotal(verb string) int {
	n := 0
	for _, c := range r.ErrorsByVerb[verb] {
		n += c
	}
	return n
}

// Churn is an open-loop create/delete load whose rate can change while it
// runs.
type Churn struct {
	opts  ChurnOptions
	api   PodAPI
	pacer *Pacer

	mu        sync.Mutex
	start     time.Time
	seconds   []ChurnSecond
	latencies map[string][]time.Duration
	errors    map[string]map[string]int
	attempted map[string]int
	shed      map[string]int
	changes   []RateChange
	failed    map[int]bool // pods whose create failed: their delete is not sent
}

// NewChurn prepares a churn run sending through api (as the load identity).
func NewChurn(api PodAPI, opts ChurnOptions) (*Churn, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Churn{
		opts: opts, api: api, pacer: NewPacer(opts.Clock, opts.Rate),
		latencies: map[string][]time.Duration{},
		errors:    map[string]map[string]int{VerbCreate: {}, VerbDelete: {}},
		attempted: map[string]int{},
		shed:      map[string]int{},
		failed:    map[int]bool{},
	}, nil
}

// SetRate changes the churn rate while it runs (the console's +/- keys).
func (c *Churn) SetRate(rate float64) error {
	if rate <= 0 || rate > 5000 {
		return fmt.Errorf("rate %g is out of range: allowed are more than 0 and at most 5000 pods/s", rate)
	}
	c.pacer.SetRate(rate)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.start.IsZero() {
		c.changes = append(c.changes, RateChange{AtSeconds: c.opts.Clock.Since(c.start).Seconds(), Rate: rate})
	}
	return nil
}

// Rate is the current target rate.
func (c *Churn) Rate() float64 { return c.pacer.Rate() }

func (c *Churn) podName(i int) string { return fmt.Sprintf("%s-%d", c.opts.RunID, i) }

func (c *Churn) pod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   c.podName(i),
			Labels: map[string]string{LabelRun: c.opts.RunID, LabelKind: "churn"},
		},
		Spec: PodSpec(c.opts.GPUs),
	}
}

type deletion struct {
	due time.Time
	i   int
}

// Run sends creates at the pacer's rate for the duration and deletes each
// pod its lifetime after its create was due; it then waits for requests
// in flight and returns what it measured. Pods left at the end are not its
// business: the caller removes them (see Cleanup).
func (c *Churn) Run(ctx context.Context) (ChurnResult, error) {
	clk := c.opts.Clock
	c.mu.Lock()
	c.start = clk.Now()
	c.mu.Unlock()
	end := c.start.Add(c.opts.Duration)
	c.pacer.StartAt(c.start) // slots are due from the window's start, not from the first Next

	var inflight sync.WaitGroup
	var slots chan struct{}
	if c.opts.Limited {
		slots = make(chan struct{}, c.opts.Concurrency)
	}
	send := func(verb string, due time.Time, i int, call func(context.Context) error) {
		sec := int(due.Sub(c.start) / time.Second)
		c.mu.Lock()
		c.attempted[verb]++
		c.mu.Unlock()
		if slots != nil {
			select {
			case slots <- struct{}{}:
			default:
				c.record(sec, verb, i, 0, nil, true)
				return
			}
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			rctx := context.WithoutCancel(ctx) // a sent request runs to its end
			if c.opts.RequestTimeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, c.opts.RequestTimeout)
				defer cancel()
			}
			began := clk.Now()
			err := call(rctx)
			c.record(sec, verb, i, clk.Since(began), err, false)
		}()
	}

	// Deletions are due in creation order, one lifetime after each create.
	deletions := make(chan deletion, 1<<16)
	var deleter sync.WaitGroup
	deleter.Add(1)
	go func() {
		defer deleter.Done()
		for d := range deletions {
			if !d.due.Before(end) {
				continue // after the window: left to Cleanup
			}
			if wait := d.due.Sub(clk.Now()); wait > 0 {
				t := clk.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					continue
				case <-t.C():
				}
			}
			if ctx.Err() != nil {
				continue
			}
			c.mu.Lock()
			skip := c.failed[d.i]
			c.mu.Unlock()
			if skip {
				continue
			}
			name := c.podName(d.i)
			send(VerbDelete, d.due, d.i, func(rctx context.Context) error { return c.api.Delete(rctx, name) })
		}
	}()

	stopProgress := c.reportProgress(ctx, end)
	for i := 0; ; i++ {
		due, err := c.pacer.Next(ctx)
		if err != nil || !due.Before(end) {
			break
		}
		pod := c.pod(i)
		send(VerbCreate, due, i, func(rctx context.Context) error { return c.api.Create(rctx, pod) })
		deletions <- deletion{due: due.Add(c.opts.Lifetime), i: i}
	}
	close(deletions)
	deleter.Wait()
	inflight.Wait()
	stopProgress()
	res := c.result()
	res.Interrupted = ctx.Err() != nil
	if c.opts.Requests != nil {
		st := c.opts.Requests.Stats()
		res.Requests = &st
	}
	return res, nil
}

func (c *Churn) record(sec int, verb string, i int, latency time.Duration, err error, shed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.seconds) <= sec {
		c.seconds = append(c.seconds, ChurnSecond{Second: len(c.seconds), Target: c.pacer.Rate()})
	}
	s := &c.seconds[sec]
	switch {
	case shed:
		c.shed[verb]++
		s.Shed++
		if verb == VerbCreate {
			c.failed[i] = true
		}
		return
	case err != nil:
		c.errors[verb][requests.Classify(err)]++
		s.Errors++
		if verb == VerbCreate {
			c.failed[i] = true
		}
	case verb == VerbCreate:
		s.Created++
	default:
		s.Deleted++
	}
	c.latencies[verb] = append(c.latencies[verb], latency)
}

func (c *Churn) reportProgress(ctx context.Context, end time.Time) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	total := int(c.opts.Duration / time.Second)
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				elapsed := int(c.opts.Clock.Since(c.start) / time.Second)
				c.mu.Lock()
				created, errs := 0, 0
				for _, s := range c.seconds {
					created += s.Created
					errs += s.Errors
				}
				c.mu.Unlock()
				c.opts.Report(progress.Event{Kind: progress.Update, Step: "churn", Done: min(elapsed, total), Total: total,
					Message: fmt.Sprintf("%.0f pods/s target, %d created, %d errors", c.pacer.Rate(), created, errs)})
			}
		}
	}()
	return func() { close(stop); <-done }
}

func (c *Churn) result() ChurnResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	dur := c.opts.Duration.Seconds()
	res := ChurnResult{
		TargetRate: c.opts.Rate, DurationSeconds: dur, LifetimeSeconds: c.opts.Lifetime.Seconds(),
		Attempted: c.attempted, Errors: map[string]int{}, ErrorsByVerb: c.errors,
		Latency: map[string]Percentiles{}, RateChanges: c.changes,
		Limited: c.opts.Limited,
	}
	if c.opts.Limited {
		res.Shed = c.shed
		res.Concurrency = c.opts.Concurrency
		res.RequestTimeout = c.opts.RequestTimeout.Seconds()
	}
	n := int(c.opts.Duration / time.Second)
	for len(c.seconds) < n {
		c.seconds = append(c.seconds, ChurnSecond{Second: len(c.seconds), Target: c.pacer.Rate()})
	}
	res.PerSecond = c.seconds
	for _, s := range c.seconds {
		res.Created += s.Created
		res.Deleted += s.Deleted
	}
	for _, byKind := range c.errors {
		for kind, count := range byKind {
			res.Errors[kind] += count
		}
	}
	for verb, lat := range c.latencies {
		res.Latency[verb] = Summarise(lat)
	}
	res.AchievedCreateRate = float64(res.Created) / dur
	if w := dur - c.opts.Lifetime.Seconds(); w > 0 {
		res.AchievedDeleteRate = float64(res.Deleted) / w
	}
	// Against the slots the pacer handed out, so that live rate changes
	// are accounted for.
	if slots := c.attempted[VerbCreate]; slots > 0 {
		res.CreateRatio = float64(res.Created) / float64(slots)
	}
	return res
}

// Cleanup's attempts go on for cleanupPatience, cleanupPause apart.
var cleanupPatience, cleanupPause = 5 * time.Minute, 2 * time.Second

// Cleanup removes the run's remaining pods (not measured). On a loaded
// fleet one DeleteCollection of thousands of pods outlasts the apiserver's
// 60 s request timeout and stops part-way (seen after churn at 100/s on
// 8,000 running pods: 7,010 pods left), so Cleanup asks again, with the
// admin identity that APF exempts, while the error is a timeout or a 429
// and for up to cleanupPatience. This is clean-up, not load: the retries
// are not counted in any figure.
func Cleanup(ctx context.Context, admin kubernetes.Interface, ns, runID string) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cleanupPatience)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + runID}
	attempts := 0
	var err error
	_ = wait.PollUntilContextCancel(ctx, cleanupPause, true, func(ctx context.Context) (bool, error) {
		attempts++
		err = admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		return err == nil || !transient(err), nil
	})
	if err != nil {
		return fmt.Errorf("%w (%d attempts in %s)", err, attempts, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// transient says a request may succeed when sent again: it timed out, or
// the server was too busy.
func transient(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		errors.Is(err, context.DeadlineExceeded) || utilnet.IsTimeout(err)
}
