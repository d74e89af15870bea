package requests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The apiserver answers a write etcd refused for lack of space with a
// plain 500: the counter tells it from other 5xx by its message, and the
// client still reads the Status it peeked at.
func TestNoSpaceIsItsOwnKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		msg := "etcdserver: mvcc: database space exceeded"
		if r.URL.Query().Get("dryRun") != "" {
			msg = "boom"
		}
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500,"message":%q}`, msg)
	}))
	defer srv.Close()

	c, cs := countedClient(t, srv.URL)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	_, err := cs.CoreV1().ConfigMaps("ns").Create(context.Background(), cm, metav1.CreateOptions{})
	if !IsEtcdNoSpace(err.Error()) {
		t.Fatalf("err = %v, want etcd's message read back from the peeked body", err)
	}
	if got := Classify(err); got != ErrEtcdNoSpace {
		t.Errorf("Classify = %q, want %q", got, ErrEtcdNoSpace)
	}
	_, err = cs.CoreV1().ConfigMaps("ns").Create(context.Background(), cm, metav1.CreateOptions{DryRun: []string{"All"}})
	if err == nil || Classify(err) != ErrServer {
		t.Errorf("another 500: err = %v, kind %q, want %q", err, Classify(err), ErrServer)
	}
	s := c.Stats()
	if s.Errors[ErrEtcdNoSpace] != 1 || s.Errors[ErrServer] != 1 || s.Failed() != 2 {
		t.Errorf("errors = %v, want 1 %s and 1 %s", s.Errors, ErrEtcdNoSpace, ErrServer)
	}
}

func TestClassifyNoSpace(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{apierrors.NewInternalError(errors.New("etcdserver: mvcc: database space exceeded")), ErrEtcdNoSpace},
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), ErrServer},
		{errors.New("mvcc: database space exceeded"), ErrOther}, // not an API status: no verdict from text alone
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
