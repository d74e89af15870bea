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
// cluster the apiserver's, through the kubeconfig's credentials, and the
// others as the attachment's metrics mode says (hiddenmetrics.go).
func MetricsEndpoints(ctx context.Context, t Target) ([]metrics.Endpoint, error) {
	if t.Attached() {
		return attachedEndpoints(t) // hiddenmetrics.go
	}
	served, err := servingComponents(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	var out []metrics.Endpoint
	for _, c := range served {
		if scrapedComponents[c.Name] {
			out = append(out, metrics.HTTPEndpoint(c.Name, c.URL(c.MetricsPath), c.TLS))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no component with a /metrics endpoint", t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}

// servingComponent is one component of GhostFleet's fleet that serves
// HTTP: where, and with which client certificate.
type servingComponent struct {
	Name        string
	Scheme      string
	Host        string
	MetricsPath string
	TLS         *tls.Config
}

// URL is the component's address for path (with its query, if any).
func (c servingComponent) URL(path string) string {
	u := url.URL{Scheme: c.Scheme, Host: c.Host}
	return u.String() + path
}

// servingComponents lists the components of fleet name that serve
// /metrics, as kwokctl configured its Prometheus to scrape them: the same
// addresses and client certificates, from the cluster's kwok
// configuration.
func servingComponents(ctx context.Context, name string) ([]servingComponent, error) {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cluster %q is not up (%v): run `ghostfleet up`", name, err)
	}
	components, err := rt.ListComponents(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the components of %q: %w", name, err)
	}
	var out []servingComponent
	for _, c := range components {
		m := c.Metric
		if m == nil {
			continue
		}
		sc := servingComponent{Name: c.Name, Scheme: m.Scheme, Host: m.Host, MetricsPath: m.Path}
		if m.Scheme == "https" {
			cert, err := tls.LoadX509KeyPair(m.CertPath, m.KeyPath)
			if err != nil {
				return nil, fmt.Errorf("client certificate for %s's /metrics: %w", c.Name, err)
			}
			// kwokctl's Prometheus skips verification too: the scheduler
			// and controller-manager serve self-signed certificates, and
			// every endpoint is on 127.0.0.1.
			sc.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec
		}
		out = append(out, sc)
	}
	return out, nil
}
