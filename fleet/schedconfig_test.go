package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/yaml"
)

// TestSchedulerConfigFiles reads each profile's file as plain YAML, the
// way kwokctl does before it hands it on, and checks the figures in it.
func TestSchedulerConfigFiles(t *testing.T) {
	tests := []struct {
		profile     ComponentProfile
		qps, burst  float64
		percentage  any // nil: left to upstream's adaptive default
		profilesSet bool
	}{
		{ProfileDefault, 50, 100, nil, false},
		{ProfileTuned, 1000, 2000, float64(10), false},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Name, func(t *testing.T) {
			var raw map[string]any
			if err := yaml.Unmarshal(tt.profile.schedulerConfig, &raw); err != nil {
				t.Fatal(err)
			}
			if raw["apiVersion"] != "kubescheduler.config.k8s.io/v1" || raw["kind"] != "KubeSchedulerConfiguration" {
				t.Errorf("apiVersion %v, kind %v", raw["apiVersion"], raw["kind"])
			}
			cc, _ := raw["clientConnection"].(map[string]any)
			if cc["qps"] != tt.qps || cc["burst"] != tt.burst {
				t.Errorf("clientConnection %v, want qps %v burst %v", cc, tt.qps, tt.burst)
			}
			if _, ok := cc["kubeconfig"]; ok {
				t.Error("clientConnection.kubeconfig is kwokctl's to set")
			}
			if raw["percentageOfNodesToScore"] != tt.percentage {
				t.Errorf("percentageOfNodesToScore %v, want %v", raw["percentageOfNodesToScore"], tt.percentage)
			}
			if _, ok := raw["profiles"]; ok != tt.profilesSet {
				t.Errorf("profiles set: %v, want %v", ok, tt.profilesSet)
			}
		})
	}
}

func TestParseSchedulerConfig(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	tests := []struct {
		name    string
		yaml    string
		want    SchedulerSettings
		wantErr string
	}{
		{name: "limits and percentage",
			yaml: head + "clientConnection: {qps: 200, burst: 400}\npercentageOfNodesToScore: 30\n",
			want: SchedulerSettings{QPS: 200, Burst: 400, PercentageOfNodesToScore: 30}},
		{name: "score weights",
			yaml: head + `clientConnection: {qps: 50, burst: 100}
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - {name: NodeResourcesFit, weight: 5}
      - {name: ImageLocality}
`,
			want: SchedulerSettings{QPS: 50, Burst: 100, ScoreWeights: map[string]int{"NodeResourcesFit": 5}}},
		{name: "old api version",
			yaml:    "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\nclientConnection: {qps: 50, burst: 100}\n",
			wantErr: "kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration only"},
		{name: "limits left to the binary",
			yaml:    head + "percentageOfNodesToScore: 30\n",
			wantErr: "both must be set"},
		{name: "kubeconfig",
			yaml:    head + "clientConnection: {qps: 50, burst: 100, kubeconfig: /tmp/k}\n",
			wantErr: "kwokctl's to set"},
		{name: "percentage out of range",
			yaml:    head + "clientConnection: {qps: 50, burst: 100}\npercentageOfNodesToScore: 150\n",
			wantErr: "allowed are 0-100"},
		{name: "two profiles",
			yaml:    head + "clientConnection: {qps: 50, burst: 100}\nprofiles: [{schedulerName: a}, {schedulerName: b}]\n",
			wantErr: "GhostFleet runs one"},
		{name: "percentage per profile",
			yaml:    head + "clientConnection: {qps: 50, burst: 100}\nprofiles: [{schedulerName: a, percentageOfNodesToScore: 20}]\n",
			wantErr: "at the top level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSchedulerConfig([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.QPS != tt.want.QPS || got.Burst != tt.want.Burst || got.PercentageOfNodesToScore != tt.want.PercentageOfNodesToScore ||
				len(got.ScoreWeights) != len(tt.want.ScoreWeights) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for k, v := range tt.want.ScoreWeights {
				if got.ScoreWeights[k] != v {
					t.Errorf("weight %s = %d, want %d", k, got.ScoreWeights[k], v)
				}
			}
		})
	}
}

// TestCheckKwokctlConfig loads kwok.yaml texts the way kwokctl does and
// checks that what would replace a profile's settings, or be dropped next
// to them, stops up with the file and the field named.
func TestCheckKwokctlConfig(t *testing.T) {
	const head = "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n"
	tests := []struct {
		name    string
		yaml    string
		wantErr []string
	}{
		{name: "no kwokctl configuration", yaml: "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\n"},
		{name: "other settings pass",
			yaml: head + `options:
  kubeApiserverPort: 32766
componentsPatches:
- name: kube-scheduler
  extraArgs:
  - {key: v, value: "4"}
- name: kube-controller-manager
  extraArgs:
  - {key: node-monitor-grace-period, value: 1m}
`},
		{name: "scheduler config file",
			yaml:    head + "options:\n  kubeSchedulerConfig: /home/me/sched.yaml\n",
			wantErr: []string{"options.kubeSchedulerConfig (/home/me/sched.yaml)", "remove that field", "fleet/profiles/tuned.yaml"}},
		{name: "no QPS limits",
			yaml:    head + "options:\n  disableQPSLimits: true\n",
			wantErr: []string{"options.disableQPSLimits", "API Priority and Fairness off", "remove that field"}},
		{name: "scheduler QPS flag",
			yaml:    head + "componentsPatches:\n- name: kube-scheduler\n  extraArgs:\n  - {key: kube-api-qps, value: \"300\"}\n",
			wantErr: []string{"sets kube-scheduler --kube-api-qps in componentsPatches", "ignores next to the --config file", "remove it"}},
		{name: "scheduler config flag",
			yaml:    head + "componentsPatches:\n- name: kube-scheduler\n  extraArgs:\n  - {key: config, value: /x.yaml}\n",
			wantErr: []string{"sets kube-scheduler --config in componentsPatches", "would replace", "remove it"}},
		{name: "controller-manager QPS flag",
			yaml:    head + "componentsPatches:\n- name: kube-controller-manager\n  extraArgs:\n  - {key: kube-api-qps, value: \"100\"}\n",
			wantErr: []string{"sets kube-controller-manager --kube-api-qps=100 in componentsPatches, where profile tuned sets 500", "remove it"}},
		{name: "apiserver inflight flag",
			yaml:    head + "componentsPatches:\n- name: kube-apiserver\n  extraArgs:\n  - {key: max-requests-inflight, value: \"3000\"}\n",
			wantErr: []string{"kube-apiserver --max-requests-inflight=3000", "sets 1200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kwok.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := config.Load(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			conf := &internalversion.KwokctlConfiguration{}
			if confs := config.FilterWithType[*internalversion.KwokctlConfiguration](objs); len(confs) > 0 {
				conf = confs[0]
			}
			err = checkKwokctlConfig(conf, ProfileTuned, path)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path+" sets ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line starting with the file", msg)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
		})
	}
}

// The fleet's one scheduler runs without leader election unless its
// configuration asks for it.
func TestSingleSchedulerTurnsLeaderElectionOff(t *testing.T) {
	out, err := singleScheduler([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection: {qps: 50, burst: 100}\n"))
	if err != nil || !strings.Contains(string(out), "leaderElect: false") || !strings.Contains(string(out), "qps: 50") {
		t.Errorf("got %s, %v", out, err)
	}
	mine := []byte("kind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: true\n")
	if out, err := singleScheduler(mine); err != nil || string(out) != string(mine) {
		t.Errorf("a configuration that sets leaderElect was changed: %s, %v", out, err)
	}
}
