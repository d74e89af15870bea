package fleet

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// An attached cluster's endpoints: apiserver-only declares the others
// hidden; probe finds no control plane pod on a managed cluster and says
// so, as a hidden component rather than a failed scrape.
func TestAttachedEndpoints(t *testing.T) {
	cs := fake.NewClientset()
	for _, tt := range []struct {
		mode string
		want string
	}{
		{MetricsAPIServerOnly, "scheduler /metrics hidden: attached with --metrics apiserver-only"},
		{MetricsProbe, "scheduler /metrics unreachable: no pod labelled component=kube-scheduler in kube-system"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			eps := endpointsThrough(cs, nil, tt.mode)
			jobs := map[string]metrics.Endpoint{}
			for _, e := range eps {
				jobs[e.Job] = e
			}
			if len(eps) != 4 || jobs["kube-apiserver"].Hidden != "" {
				t.Fatalf("endpoints %+v: want the apiserver and three others", eps)
			}
			sched := jobs["kube-scheduler"]
			var err error
			if sched.Hidden != "" {
				err = &metrics.HiddenError{Reason: sched.Hidden}
			} else {
				_, err = sched.Fetch(context.Background())
			}
			why, hidden := metrics.Unreachable(metrics.ComponentScheduler, err)
			if !hidden || !strings.HasPrefix(why, tt.want) {
				t.Errorf("scheduler: %q (hidden %v), want %q…", why, hidden, tt.want)
			}
		})
	}
}

// With a kubeadm-style scheduler pod the probe reads its /metrics
// through the apiserver's pod proxy; the proxy's 403 (the scheduler does
// not let the apiserver's anonymous request in) makes it not available.
func TestProbeGoesThroughThePodProxy(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler-cp1", Namespace: "kube-system", Labels: map[string]string{"component": "kube-scheduler"}}})
	var asked string
	rc := &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			asked = req.URL.Path
			return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("forbidden"))}, nil
		}),
	}
	for _, e := range endpointsThrough(cs, rc, MetricsProbe) {
		if e.Job != "kube-scheduler" {
			continue
		}
		_, err := e.Fetch(context.Background())
		if want := "/api/v1/namespaces/kube-system/pods/https:kube-scheduler-cp1:10259/proxy/metrics"; asked != want {
			t.Errorf("asked %q, want %q", asked, want)
		}
		if why, hidden := metrics.Unreachable(metrics.ComponentScheduler, err); !hidden || why != "scheduler /metrics unreachable: 403 Forbidden" {
			t.Errorf("%v: %q (hidden %v)", err, why, hidden)
		}
	}
}

func TestMetricsModeIsRecorded(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	server := "https://127.0.0.1:6443"
	if got := AttachedMetricsMode(server); got != MetricsProbe {
		t.Errorf("default %q, want probe", got)
	}
	if err := SaveMetricsMode(server, MetricsAPIServerOnly); err != nil {
		t.Fatal(err)
	}
	if got := AttachedMetricsMode(server); got != MetricsAPIServerOnly {
		t.Errorf("recorded %q", got)
	}
	if err := SaveMetricsMode(server, "none"); err == nil || !strings.Contains(err.Error(), "apiserver-only") {
		t.Errorf("bad mode: %v", err)
	}
}
