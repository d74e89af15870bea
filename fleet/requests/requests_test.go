package requests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A server that rejects every create the way APF does (429 with
// Retry-After) must see each create once, and the counter must count it
// as a rejection: a typed client left alone re-sends it up to ten times.
func TestRejectionIsCountedNotRetried(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "unexpected", http.StatusMethodNotAllowed)
			return
		}
		posts.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"message":"too many requests, please try again later"}`)
	}))
	defer srv.Close()

	c, cs := countedClient(t, srv.URL)
	for i := range 3 {
		_, err := cs.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i)}}, metav1.CreateOptions{})
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("create %d: err = %v, want the 429", i, err)
		}
	}
	if got := posts.Load(); got != 3 {
		t.Errorf("server saw %d POSTs for 3 creates: the client retried", got)
	}
	s := c.Stats()
	if s.Sent["POST"] != 3 || s.Rejected != 3 || s.Errors[ErrTooManyRequests] != 3 || s.ErrorsByVerb["POST"][ErrTooManyRequests] != 3 || s.Succeeded != 0 {
		t.Errorf("stats = %+v, want 3 POSTs sent, 3 rejected", s)
	}
}

// Without the counter the same client does retry: the test above would
// pass for the wrong reason if it did not.
func TestTypedClientRetriesWithoutCounter(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if posts.Add(1) < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if got := posts.Load(); got != 3 {
		t.Errorf("server saw %d POSTs, want 3 (two retried 429s and a success)", got)
	}
}

func TestCounterKinds(t *testing.T) {
	codes := map[string]int{"/ok": 201, "/conflict": 409, "/boom": 500, "/slow": 504}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(codes[r.URL.Path])
	}))
	defer srv.Close()
	c := NewCounter()
	client := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	for _, path := range []string{"/ok", "/ok", "/conflict", "/boom", "/slow"} {
		resp, err := client.Post(srv.URL+path, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, srv.URL+"/ok", nil)
	if _, err := client.Do(req); err == nil {
		t.Fatal("a cancelled request succeeded")
	}
	s := c.Stats()
	want := Stats{Sent: map[string]int{"POST": 5, "DELETE": 1}, Succeeded: 2, Errors: map[string]int{ErrClient: 1, ErrServer: 1, ErrTimeout: 1}, Cancelled: 1}
	if s.Succeeded != want.Succeeded || s.Cancelled != 1 || s.Sent["POST"] != 5 || s.Sent["DELETE"] != 1 ||
		s.Errors[ErrClient] != 1 || s.Errors[ErrServer] != 1 || s.Errors[ErrTimeout] != 1 || s.Failed() != 3 {
		t.Errorf("stats = %+v, want %+v", s, want)
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want string
	}{
		{apierrors.NewTooManyRequests("slow down", 1), ErrTooManyRequests},
		{apierrors.NewNotFound(gr, "x"), ErrClient},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), ErrClient},
		{apierrors.NewInternalError(errors.New("boom")), ErrServer},
		{apierrors.NewServiceUnavailable("down"), ErrServer},
		{apierrors.NewTimeoutError("slow", 1), ErrTimeout},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), ErrTimeout},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ErrConnection},
		{errors.New("mystery"), ErrOther},
	}
	for _, tt := range tests {
		t.Run(tt.want+"/"+tt.err.Error(), func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

// countedClient is a clientset for url whose requests c counts.
func countedClient(t *testing.T, url string) (*Counter, kubernetes.Interface) {
	t.Helper()
	c := NewCounter()
	cfg := &rest.Config{Host: url}
	c.Configure(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}
