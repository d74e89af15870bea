package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/consts"
	"sigs.k8s.io/yaml"
)

// schedulerConfigName is where Up writes the profile's scheduler
// configuration in the cluster's folder, for kwokctl to read at creation.
// kwokctl copies it next to it as scheduler.yaml, with the kubeconfig of
// the scheduler's client filled in, and runs kube-scheduler
// --config=<that copy>; the file stays for the cluster's life.
const schedulerConfigName = "ghostfleet-scheduler.yaml"

// schedulerConfigFile is the part of a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) that GhostFleet reads back as
// SchedulerSettings; kube-scheduler itself decodes the whole file, strictly.
type schedulerConfigFile struct {
	APIVersion       string `json:"apiVersion"`
	Kind             string `json:"kind"`
	ClientConnection struct {
		Kubeconfig string `json:"kubeconfig"`
		QPS        int    `json:"qps"`
		Burst      int    `json:"burst"`
	} `json:"clientConnection"`
	PercentageOfNodesToScore *int `json:"percentageOfNodesToScore"`
	Profiles                 []struct {
		SchedulerName            string `json:"schedulerName"`
		PercentageOfNodesToScore *int   `json:"percentageOfNodesToScore"`
		Plugins                  struct {
			Score struct {
				Enabled []struct {
					Name   string `json:"name"`
					Weight int    `json:"weight"`
				} `json:"enabled"`
			} `json:"score"`
			MultiPoint struct {
				Disabled []struct {
					Name string `json:"name"`
				} `json:"disabled"`
			} `json:"multiPoint"`
		} `json:"plugins"`
		PluginConfig []struct {
			Name string `json:"name"`
			Args struct {
				ScoringStrategy struct {
					Type string `json:"type"`
				} `json:"scoringStrategy"`
			} `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
}

// parseSchedulerConfig reads the settings a profile's scheduler
// configuration sets. The client limits must be written out: a report
// quoting them must not rely on the binary's defaults.
func parseSchedulerConfig(data []byte) (SchedulerSettings, error) {
	var f schedulerConfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return SchedulerSettings{}, err
	}
	if f.APIVersion != "kubescheduler.config.k8s.io/v1" || f.Kind != "KubeSchedulerConfiguration" {
		return SchedulerSettings{}, fmt.Errorf("%s %s: kwokctl takes kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration only", f.APIVersion, f.Kind)
	}
	if f.ClientConnection.Kubeconfig != "" {
		return SchedulerSettings{}, errors.New("clientConnection.kubeconfig is kwokctl's to set")
	}
	s := SchedulerSettings{QPS: f.ClientConnection.QPS, Burst: f.ClientConnection.Burst}
	if s.QPS <= 0 || s.Burst <= 0 {
		return SchedulerSettings{}, fmt.Errorf("clientConnection qps %d, burst %d: both must be set and positive", s.QPS, s.Burst)
	}
	if p := f.PercentageOfNodesToScore; p != nil {
		if *p < 0 || *p > 100 {
			return SchedulerSettings{}, fmt.Errorf("percentageOfNodesToScore %d: allowed are 0-100", *p)
		}
		s.PercentageOfNodesToScore = *p
	}
	// One scheduler profile at most, so that "the scheduler's settings"
	// mean one thing.
	if len(f.Profiles) > 1 {
		return SchedulerSettings{}, fmt.Errorf("%d scheduler profiles: GhostFleet runs one", len(f.Profiles))
	}
	for _, prof := range f.Profiles {
		if prof.PercentageOfNodesToScore != nil {
			return SchedulerSettings{}, errors.New("set percentageOfNodesToScore at the top level, not in profiles")
		}
		for _, pl := range prof.Plugins.Score.Enabled {
			if pl.Weight == 0 {
				continue
			}
			if s.ScoreWeights == nil {
				s.ScoreWeights = map[string]int{}
			}
			s.ScoreWeights[pl.Name] = pl.Weight
		}
		for _, pl := range prof.Plugins.MultiPoint.Disabled {
			s.Disabled = append(s.Disabled, pl.Name)
		}
		for _, pc := range prof.PluginConfig {
			if pc.Name == "NodeResourcesFit" {
				s.FitScoring = pc.Args.ScoringStrategy.Type
			}
		}
	}
	return s, nil
}

// writeSchedulerConfig writes the profile's scheduler configuration where
// kwokctl will read it when it creates the cluster called name, and
// returns the path.
func writeSchedulerConfig(name string, p ComponentProfile) (string, error) {
	dir := clusterWorkdir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := singleScheduler(p.schedulerConfig)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, schedulerConfigName)
	return path, os.WriteFile(path, data, 0o644)
}

// singleScheduler turns leader election off in a scheduler configuration
// unless it says otherwise: a fleet runs one scheduler, and with leader
// election on it exits whenever it cannot renew its lease in time (the
// apiserver down or slow on a busy machine), and nothing starts it again.
func singleScheduler(config []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, err
	}
	le, _ := doc["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	if _, set := le["leaderElect"]; set {
		return config, nil
	}
	le["leaderElect"] = false
	doc["leaderElection"] = le
	return yaml.Marshal(doc)
}

// recordProfile keeps a user's profile file in the cluster's folder, where
// ClusterProfile finds it, and returns its path; built-in profiles need
// no copy ("").
func recordProfile(name string, p ComponentProfile) (string, error) {
	if p.file == nil {
		return "", nil
	}
	path := filepath.Join(clusterWorkdir(name), recordedProfileName)
	return path, os.WriteFile(path, p.file, 0o644)
}

// kwokConfigPath is the user's kwok configuration, which kwokctl loads
// into every call (see kwokctl).
func kwokConfigPath() string { return filepath.Join(config.WorkDir, consts.ConfigName) }

// schedulerFlagsIgnoredUnderConfig are kube-scheduler's deprecated flags,
// which it ignores once it reads a --config file, as it does under every
// profile.
var schedulerFlagsIgnoredUnderConfig = []string{
	"kubeconfig", "kube-api-qps", "kube-api-burst", "kube-api-content-type", "profiling", "contention-profiling",
}

// checkKwokctlConfig reports a setting in the user's kwok configuration
// (read from source) that would replace the profile's or be silently
// dropped because of it. Other settings, e.g. kube-scheduler --v, pass.
func checkKwokctlConfig(conf *internalversion.KwokctlConfiguration, p ComponentProfile, source string) error {
	if path := conf.Options.KubeSchedulerConfig; path != "" {
		return fmt.Errorf("%s sets options.kubeSchedulerConfig (%s), which would replace the kube-scheduler configuration of profile %s: remove that field; GhostFleet gives the scheduler its profile's configuration (%s)",
			source, path, p.Name, p.Source)
	}
	if path := conf.Options.KubeAuditPolicy; path != "" && p.APIServer.AuditPolicy != nil {
		return fmt.Errorf("%s sets options.kubeAuditPolicy (%s), and profile %s has its own apiServer.auditPolicy, which would replace it: remove one of them",
			source, path, p.Name)
	}
	if conf.Options.DisableQPSLimits {
		return fmt.Errorf("%s sets options.disableQPSLimits, which switches API Priority and Fairness off and asks for client limits that profile %s replaces: remove that field; --profile tuned raises the limits with APF on",
			source, p.Name)
	}
	own := map[string]string{}
	for _, patch := range p.patches() {
		for _, a := range patch.ExtraArgs {
			own[patch.Name+" --"+a.Key] = a.Value
		}
	}
	for _, patch := range conf.ComponentsPatches {
		for _, a := range patch.ExtraArgs {
			flag := patch.Name + " --" + a.Key
			switch {
			case patch.Name == consts.ComponentKubeScheduler && a.Key == "config":
				return fmt.Errorf("%s sets %s in componentsPatches, which would replace the kube-scheduler configuration of profile %s: remove it; GhostFleet gives the scheduler its profile's configuration (%s)",
					source, flag, p.Name, p.Source)
			case patch.Name == consts.ComponentKubeScheduler && slices.Contains(schedulerFlagsIgnoredUnderConfig, a.Key):
				return fmt.Errorf("%s sets %s in componentsPatches, which kube-scheduler ignores next to the --config file every profile gives it: remove it; the scheduler's settings come from %s",
					source, flag, p.Source)
			case own[flag] != "":
				return fmt.Errorf("%s sets %s=%s in componentsPatches, where profile %s sets %s: remove it; GhostFleet takes these settings from its profiles only",
					source, flag, a.Value, p.Name, own[flag])
			}
		}
	}
	return nil
}
