package fleet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"sort"

	"github.com/ghostfleet/ghostfleet/metrics"
)

// scrapedComponents are the components whose /metrics the catalog reads.
var scrapedComponents = map[string]bool{"etcd": true, "kube-apiserver": true, "kube-scheduler": true, "kube-controller-manager": true}

// MetricsEndpoints returns the control plane's /metrics endpoints for the
// direct scrape source. For GhostFleet's own cluster they are the ones
// kwokctl configured its Prometheus with (the same URLs and client
// certificates, from the cluster's kwok configuration); for an attached
// cluster only the apiserver's, through the kubeconfig's credentials.
func MetricsEndpoints(ctx context.Context, t Target) ([]metrics.Endpoint, error) {
	if t.Attached() {
		cs, err := t.Clientset(false)
		if err != nil {
			return nil, err
		}
		rc := cs.Discovery().RESTClient()
		return []metrics.Endpoint{{Job: "kube-apiserver", Fetch: func(ctx context.Context) ([]byte, error) {
			return rc.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain;version=0.0.4").DoRaw(ctx)
		}}}, nil
	}
	rt, err := loadRuntime(ctx, t.Name)
	if err != nil {
		return nil, fmt.Errorf("%s is not up (%v): run `ghostfleet up`", t, err)
	}
	components, err := rt.ListComponents(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the components of %s: %w", t, err)
	}
	var out []metrics.Endpoint
	for _, c := range components {
		m := c.Metric
		if !scrapedComponents[c.Name] || m == nil {
			continue
		}
		u := url.URL{Scheme: m.Scheme, Host: m.Host, Path: m.Path}
		var tlsConfig *tls.Config
		if m.Scheme == "https" {
			cert, err := tls.LoadX509KeyPair(m.CertPath, m.KeyPath)
			if err != nil {
				return nil, fmt.Errorf("client certificate for %s's /metrics: %w", c.Name, err)
			}
			// kwokctl's Prometheus skips verification too: the scheduler
			// and controller-manager serve self-signed certificates, and
			// every endpoint is on 127.0.0.1.
			tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec
		}
		out = append(out, metrics.HTTPEndpoint(c.Name, u.String(), tlsConfig))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no component with a /metrics endpoint", t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}
