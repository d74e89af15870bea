package fleet

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ghostfleet/ghostfleet/fleet/requests"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// DefaultClusterName is the kwok cluster GhostFleet creates and targets.
const DefaultClusterName = "ghostfleet"

// Target is the cluster a command talks to. By default it is GhostFleet's
// own cluster; it never falls back to $KUBECONFIG or ~/.kube/config, so a
// load test cannot land on whatever cluster the user's shell points at.
type Target struct {
	Name       string // kwok cluster name; empty when attached
	Kubeconfig string
	Context    string
}

// Own returns the target for GhostFleet's own cluster called name.
func Own(name string) Target {
	return Target{Name: name, Kubeconfig: filepath.Join(clusterWorkdir(name), "kubeconfig.yaml")}
}

// Attach returns a target for an explicit kubeconfig and context.
func Attach(kubeconfig, context string) Target {
	return Target{Kubeconfig: kubeconfig, Context: context}
}

// Attached reports whether the target is a cluster GhostFleet did not create.
func (t Target) Attached() bool { return t.Name == "" }

// String names the target for messages.
func (t Target) String() string {
	if t.Attached() {
		if t.Context != "" {
			return fmt.Sprintf("context %q of %s", t.Context, t.Kubeconfig)
		}
		return t.Kubeconfig
	}
	return fmt.Sprintf("fleet %q", t.Name)
}

// RESTConfig loads the target's kubeconfig. Only the explicit path is read.
func (t Target) RESTConfig() (*rest.Config, error) {
	if _, err := os.Stat(t.Kubeconfig); err != nil {
		if t.Attached() {
			return nil, fmt.Errorf("kubeconfig %s: %w", t.Kubeconfig, err)
		}
		return nil, fmt.Errorf("%s is not up (no kubeconfig at %s): run `ghostfleet up` first", t, t.Kubeconfig)
	}
	loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: t.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: t.Context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", t, err)
	}
	// Inline the certificate files: client-go caches TLS transports by
	// file path, so a cluster recreated under the same name in the same
	// process (the benchmark does that) would be dialled with the old CA.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("loading %s: %w", t, err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	cfg.UserAgent = "ghostfleet"
	return cfg, nil
}

// Clientset returns a client for the target. Unthrottled clients have no
// client-side rate limiter: bulk work (creating 1,000 nodes) would
// otherwise crawl at client-go's default 5 QPS, the seed's
// "kubectl apply crawls" problem.
func (t Target) Clientset(unthrottled bool) (kubernetes.Interface, error) {
	return t.CountedClientset(unthrottled, nil)
}

// CountedClientset is Clientset whose requests, when counter is set, are
// counted on it and never retried.
func (t Target) CountedClientset(unthrottled bool, counter *requests.Counter) (kubernetes.Interface, error) {
	cfg, err := t.RESTConfig()
	if err != nil {
		return nil, err
	}
	if counter != nil {
		counter.Configure(cfg)
	}
	if unthrottled {
		cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	} else {
		cfg.QPS, cfg.Burst = 50, 100
	}
	useProtobuf(cfg)
	return kubernetes.NewForConfig(cfg)
}

// useProtobuf makes a client of built-in types speak protobuf, as the
// scheduler, the controllers and kubelets do: the apiserver decodes and
// encodes it for less CPU than JSON. Custom resources (kwok's Stages)
// have no protobuf form, so only the built-in clientset gets it.
// GHOSTFLEET_CLIENT_CONTENT_TYPE=json keeps JSON (to measure the
// difference).
func useProtobuf(cfg *rest.Config) {
	if os.Getenv("GHOSTFLEET_CLIENT_CONTENT_TYPE") == "json" {
		return
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
}
