package fleet

import (
	"strconv"
	"strings"
	"testing"
)

func TestComponentProfiles(t *testing.T) {
	tests := []struct {
		profile ComponentProfile
		sched   SchedulerSettings
		cm      ControllerManagerSettings
		api     APIServerSettings
	}{
		{ProfileDefault, SchedulerSettings{QPS: 50, Burst: 100},
			ControllerManagerSettings{QPS: 20, Burst: 30, WorkloadSyncs: 5, GCSyncs: 20},
			APIServerSettings{MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}},
		{ProfileTuned, SchedulerSettings{QPS: 1000, Burst: 2000, PercentageOfNodesToScore: 10},
			ControllerManagerSettings{QPS: 500, Burst: 1000, WorkloadSyncs: 25, GCSyncs: 50},
			APIServerSettings{MaxRequestsInflight: 1200, MaxMutatingRequestsInflight: 600}},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Name, func(t *testing.T) {
			p := tt.profile
			if s := p.Scheduler; s.QPS != tt.sched.QPS || s.Burst != tt.sched.Burst ||
				s.PercentageOfNodesToScore != tt.sched.PercentageOfNodesToScore || len(s.ScoreWeights) != 0 {
				t.Errorf("scheduler %+v, want %+v", s, tt.sched)
			}
			if p.ControllerManager != tt.cm {
				t.Errorf("controller-manager %+v, want %+v", p.ControllerManager, tt.cm)
			}
			if p.APIServer != tt.api {
				t.Errorf("apiserver %+v, want %+v", p.APIServer, tt.api)
			}

			args := map[string]string{}
			for _, patch := range p.patches() {
				for _, a := range patch.ExtraArgs {
					args[patch.Name+" --"+a.Key] = a.Value
				}
			}
			for flag := range args {
				// The scheduler's settings are in its file; flags next
				// to it would be deprecated and ignored.
				if strings.HasPrefix(flag, "kube-scheduler ") {
					t.Errorf("profile passes %s", flag)
				}
			}
			if _, ok := args["kube-apiserver --enable-priority-and-fairness"]; ok {
				t.Error("profile must leave APF on")
			}
			if got := args["kube-controller-manager --kube-api-qps"]; got != strconv.Itoa(tt.cm.QPS) {
				t.Errorf("controller-manager --kube-api-qps=%s, want %d", got, tt.cm.QPS)
			}
			if got := args["kube-apiserver --max-requests-inflight"]; got != strconv.Itoa(tt.api.MaxRequestsInflight) {
				t.Errorf("apiserver --max-requests-inflight=%s, want %d", got, tt.api.MaxRequestsInflight)
			}

			// The description is made from the figures above.
			for _, want := range []string{
				"scheduler client QPS " + strconv.Itoa(tt.sched.QPS) + "/burst " + strconv.Itoa(tt.sched.Burst),
				"scoring " + p.Scheduler.NodesToScore(),
				"controller-manager QPS " + strconv.Itoa(tt.cm.QPS) + "/burst " + strconv.Itoa(tt.cm.Burst),
				"apiserver inflight " + strconv.Itoa(tt.api.MaxRequestsInflight) + "+" + strconv.Itoa(tt.api.MaxMutatingRequestsInflight),
			} {
				if !strings.Contains(p.Description, want) {
					t.Errorf("description %q lacks %q", p.Description, want)
				}
			}
			// Its settings are the same figures, without the summary.
			if s := p.Settings(); !strings.HasPrefix(s, "scheduler client QPS "+strconv.Itoa(tt.sched.QPS)+"/") || !strings.Contains(p.Description, s) {
				t.Errorf("settings %q: want the figures of the description %q", s, p.Description)
			}
			if got, err := LookupComponentProfile(p.Name); err != nil || got.Name != p.Name {
				t.Errorf("LookupComponentProfile(%q) = %q, %v", p.Name, got.Name, err)
			}
		})
	}
	if _, err := LookupComponentProfile("turbo"); err == nil || !strings.Contains(err.Error(), "default, tuned, fast") {
		t.Errorf("unknown profile error = %v", err)
	}
}

func TestNodesToScore(t *testing.T) {
	if got := (SchedulerSettings{}).NodesToScore(); got != "an adaptive share of nodes" {
		t.Errorf("unset: %q", got)
	}
	if got := (SchedulerSettings{PercentageOfNodesToScore: 10}).NodesToScore(); got != "10% of nodes" {
		t.Errorf("10: %q", got)
	}
}
