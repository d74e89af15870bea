package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// Of an attached cluster GhostFleet knows only the apiserver's URL. How
// it looks for the other components' /metrics is the attachment's
// metrics mode (attach --metrics), kept in its folder.
const (
	// MetricsProbe, the default, scrapes the scheduler, controller-manager
	// and etcd through the apiserver's proxy to their pods in kube-system
	// (kubeadm's static pods, labelled component=…), the only way to
	// them GhostFleet has with the kubeconfig alone. Where there is no
	// such pod, or the proxy is refused (403) or cannot connect, the
	// component is not available on this cluster, and says why.
	MetricsProbe = "probe"
	// MetricsAPIServerOnly declares every component but the apiserver
	// hidden: nothing else is tried.
	MetricsAPIServerOnly = "apiserver-only"
)

// MetricsModes lists the modes, for flags and help.
var MetricsModes = []string{MetricsProbe, MetricsAPIServerOnly}

// CheckMetricsMode says what is allowed when mode is not a mode.
func CheckMetricsMode(mode string) error {
	if !slices.Contains(MetricsModes, mode) {
		return fmt.Errorf("--metrics %q is not a mode: use probe (find the scheduler, controller-manager and etcd through the apiserver) or apiserver-only", mode)
	}
	return nil
}

// attachedComponents are the components probe mode looks for: their job
// name (as kwokctl's Prometheus names them), kubeadm's component label,
// and the scheme and port of their /metrics in kubeadm's manifests.
var attachedComponents = []struct {
	Job, Label, Scheme string
	Port               int
}{
	{"etcd", "etcd", "http", 2381},
	{"kube-controller-manager", "kube-controller-manager", "https", 10257},
	{"kube-scheduler", "kube-scheduler", "https", 10259},
}

type metricsModeFile struct {
	Mode string `json:"mode"`
}

func metricsModePath(server string) string { return filepath.Join(AttachDir(server), "metrics.json") }

// SaveMetricsMode records the attachment's metrics mode in its folder
// (detach removes the folder, and the mode with it).
func SaveMetricsMode(server, mode string) error {
	if err := CheckMetricsMode(mode); err != nil {
		return err
	}
	data, err := json.Marshal(metricsModeFile{Mode: mode})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(AttachDir(server), 0o700); err != nil {
		return err
	}
	return os.WriteFile(metricsModePath(server), data, 0o600)
}

// AttachedMetricsMode is the mode attach recorded for server; probe when
// none was (attached by an older GhostFleet, or not from here).
func AttachedMetricsMode(server string) string {
	var f metricsModeFile
	data, err := os.ReadFile(metricsModePath(server))
	if err != nil || json.Unmarshal(data, &f) != nil || CheckMetricsMode(f.Mode) != nil {
		return MetricsProbe
	}
	return f.Mode
}

// attachedEndpoints are an attached cluster's /metrics endpoints: the
// apiserver's through the kubeconfig, and the other components' as its
// metrics mode says — through the apiserver's pod proxy, or declared
// hidden.
func attachedEndpoints(t Target) ([]metrics.Endpoint, error) {
	cs, err := t.Clientset(false)
	if err != nil {
		return nil, err
	}
	mode := MetricsProbe
	if server, err := t.Server(); err == nil {
		mode = AttachedMetricsMode(server)
	}
	return endpointsThrough(cs, cs.Discovery().RESTClient(), mode), nil
}

// endpointsThrough builds the endpoints for mode: pods are looked up on
// cs, /metrics read with rc (the apiserver's root).
func endpointsThrough(cs kubernetes.Interface, rc rest.Interface, mode string) []metrics.Endpoint {
	out := []metrics.Endpoint{{Job: "kube-apiserver", Fetch: func(ctx context.Context) ([]byte, error) {
		return rc.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain;version=0.0.4").DoRaw(ctx)
	}}}
	for _, c := range attachedComponents {
		e := metrics.Endpoint{Job: c.Job}
		if mode == MetricsAPIServerOnly {
			e.Hidden = fmt.Sprintf("%s /metrics hidden: attached with --metrics %s", metrics.ComponentOfJob(c.Job), MetricsAPIServerOnly)
			out = append(out, e)
			continue
		}
		e.Fetch = func(ctx context.Context) ([]byte, error) {
			pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=" + c.Label, Limit: 1})
			if err != nil {
				return nil, err
			}
			if len(pods.Items) == 0 {
				return nil, &metrics.HiddenError{Reason: fmt.Sprintf("%s /metrics unreachable: no pod labelled component=%s in kube-system to reach through the apiserver (a managed or hidden control plane)", metrics.ComponentOfJob(c.Job), c.Label)}
			}
			path := fmt.Sprintf("/api/v1/namespaces/kube-system/pods/%s:%s:%d/proxy/metrics", c.Scheme, pods.Items[0].Name, c.Port)
			return rc.Get().AbsPath(path).SetHeader("Accept", "text/plain;version=0.0.4").DoRaw(ctx)
		}
		out = append(out, e)
	}
	return out
}

// ComponentMetrics is whether one component's /metrics answered a probe.
type ComponentMetrics struct {
	Component string `json:"component"`
	Available bool   `json:"available"`
	// Hidden is true when it is not there to scrape on this cluster
	// (refused, 403, 404, no pod, declared hidden), false for a scrape
	// that failed otherwise; Reason says which.
	Hidden bool   `json:"hidden,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ProbeMetrics scrapes each of the target's /metrics endpoints once and
// says which answered: what snapshots and the console will be able to
// chart there.
func ProbeMetrics(ctx context.Context, t Target) ([]ComponentMetrics, error) {
	eps, err := MetricsEndpoints(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]ComponentMetrics, len(eps))
	for i, e := range eps {
		c := ComponentMetrics{Component: metrics.ComponentOfJob(e.Job)}
		var err error
		if e.Hidden != "" {
			err = &metrics.HiddenError{Reason: e.Hidden}
		} else {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = e.Fetch(pctx)
			cancel()
		}
		switch why, hidden := metrics.Unreachable(c.Component, err); {
		case err == nil:
			c.Available = true
		case hidden:
			c.Hidden, c.Reason = true, why
		case errors.Is(err, context.Canceled):
			return nil, err
		default:
			c.Reason = c.Component + " /metrics failed: " + err.Error()
		}
		out[i] = c
	}
	return out, nil
}
