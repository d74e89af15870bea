package fleet

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
)

// ComponentProfile is a set of control-plane flags applied at creation.
type ComponentProfile struct {
	Name        string
	Description string
	// Args maps a component to the flags it gets on top of kwokctl's.
	Args map[string][]internalversion.ExtraArgs
}

// Component profiles. Neither uses kwokctl's --disable-qps-limits: it also
// switches API Priority and Fairness off, and APF is part of what we study.
var (
	ProfileDefault = ComponentProfile{
		Name: "default",
		Description: "upstream component defaults: scheduler client QPS 50/burst 100, " +
			"controller-manager QPS 20/burst 30, apiserver inflight 400+200; reproduces the seed's findings",
	}
	ProfileTuned = ComponentProfile{
		Name: "tuned",
		Description: "scheduler client QPS 1000/burst 2000, controller-manager QPS 500/burst 1000 with 25 " +
			"workers per workload controller, apiserver inflight 1200+600; APF stays on",
		Args: map[string][]internalversion.ExtraArgs{
			"kube-scheduler": {
				{Key: "kube-api-qps", Value: "1000"},
				{Key: "kube-api-burst", Value: "2000"},
			},
			"kube-controller-manager": {
				{Key: "kube-api-qps", Value: "500"},
				{Key: "kube-api-burst", Value: "1000"},
				{Key: "concurrent-replicaset-syncs", Value: "25"},
				{Key: "concurrent-deployment-syncs", Value: "25"},
				{Key: "concurrent-job-syncs", Value: "25"},
				{Key: "concurrent-gc-syncs", Value: "50"},
			},
			"kube-apiserver": {
				// With APF on these two add up to the server's total
				// concurrency, which APF shares out among priority levels.
				{Key: "max-requests-inflight", Value: "1200"},
				{Key: "max-mutating-requests-inflight", Value: "600"},
			},
		},
	}
	ComponentProfiles = []ComponentProfile{ProfileDefault, ProfileTuned}
)

// LookupComponentProfile returns the named profile.
func LookupComponentProfile(name string) (ComponentProfile, error) {
	for _, p := range ComponentProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(ComponentProfiles))
	for i, p := range ComponentProfiles {
		names[i] = p.Name
	}
	return ComponentProfile{}, fmt.Errorf("unknown profile %q: allowed are %s", name, strings.Join(names, ", "))
}

// patches turns the profile into kwokctl component patches.
func (p ComponentProfile) patches() []internalversion.ComponentPatches {
	var out []internalversion.ComponentPatches
	for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if args := p.Args[component]; len(args) > 0 {
			out = append(out, internalversion.ComponentPatches{Name: component, ExtraArgs: args})
		}
	}
	return out
}
