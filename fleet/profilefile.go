package fleet

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditpolicy "k8s.io/apiserver/pkg/audit/policy"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// builtinFiles holds the built-in component profiles and kwok stages, as
// kwok keeps its own stages and configurations: versioned YAML, read at
// start. `ghostfleet profile show` prints them.
//
//go:embed profiles/*.yaml stages/*.yaml
var builtinFiles embed.FS

// ProfileAPIVersion and ProfileKind head a component profile file.
const (
	ProfileAPIVersion = "ghostfleet.dev/v1alpha1"
	ProfileKind       = "ComponentProfile"
)

// profileFile is a ComponentProfile document. Its figures are the flags
// of the components without a configuration file; kube-scheduler's are in
// the file's KubeSchedulerConfiguration document.
type profileFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	// Base is optional, in a user's file only: the profile this one
	// changes (see resolveProfileFile), resolved before the file is read.
	Base string `json:"base,omitempty"`
	// Summary and Note go before and after the figures in the profile's
	// one-line description.
	Summary           string `json:"summary,omitempty"`
	Note              string `json:"note,omitempty"`
	ControllerManager struct {
		QPS           int `json:"qps"`
		Burst         int `json:"burst"`
		WorkloadSyncs int `json:"workloadSyncs"`
		GCSyncs       int `json:"gcSyncs"`
	} `json:"controllerManager"`
	APIServer struct {
		MaxRequestsInflight         int `json:"maxRequestsInflight"`
		MaxMutatingRequestsInflight int `json:"maxMutatingRequestsInflight"`
		// AuditPolicy is optional: an audit.k8s.io/v1 Policy, written
		// out inline; with it kube-apiserver keeps an audit log (see
		// APIServerSettings.AuditPolicy).
		AuditPolicy *auditv1.Policy `json:"auditPolicy,omitempty"`
	} `json:"apiServer"`
	// Etcd is optional: without it etcd runs with kwokctl's quota.
	Etcd struct {
		QuotaBackendBytes int64 `json:"quotaBackendBytes,omitempty"`
		UnsafeNoFsync     bool  `json:"unsafeNoFsync,omitempty"`
	} `json:"etcd,omitempty"`
	// Kwok is optional: without it kwok keeps kwokctl's settings.
	Kwok struct {
		NodeLeaseDurationSeconds int `json:"nodeLeaseDurationSeconds,omitempty"`
	} `json:"kwok,omitempty"`
	// Env is optional: environment variables by component, e.g.
	// kube-apiserver: {GOGC: "200"}.
	Env map[string]map[string]string `json:"env,omitempty"`
	// CPULimits are optional: a CPU limit in cores by component, e.g.
	// kube-scheduler: 0.2 (see limitCPU).
	CPULimits map[string]float64 `json:"cpuLimits,omitempty"`
	// FeatureGates are optional: Kubernetes feature gates, given to
	// kube-apiserver, kube-controller-manager and kube-scheduler alike
	// (--feature-gates), e.g. the gang profile's GangScheduling: true.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// RuntimeConfig is optional: API group versions kube-apiserver serves
	// or not (--runtime-config), e.g. scheduling.k8s.io/v1alpha2: true.
	RuntimeConfig map[string]bool `json:"runtimeConfig,omitempty"`
}

// profileComponents are the processes a profile may set environment
// variables and CPU limits of.
var profileComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

var (
	envNameRE      = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	featureGateRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	groupVersionRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// BuiltinProfilePath is where the built-in profile called name lives in
// GhostFleet's source (and, embedded, in the binary).
func BuiltinProfilePath(name string) string { return "fleet/profiles/" + name + ".yaml" }

// builtinProfile reads a profile shipped with GhostFleet. A bad embedded
// file is a programming error the package's tests catch.
func builtinProfile(name string) ComponentProfile {
	data, err := builtinFiles.ReadFile("profiles/" + name + ".yaml")
	if err != nil {
		panic(err)
	}
	p, err := parseComponentProfile(BuiltinProfilePath(name), data)
	if err != nil {
		panic(err)
	}
	if p.Name != name {
		panic(fmt.Sprintf("%s names its profile %q", p.Source, p.Name))
	}
	return p
}

// BuiltinFile returns a built-in file by its path under fleet/ (e.g.
// profiles/tuned.yaml).
func BuiltinFile(path string) ([]byte, error) { return builtinFiles.ReadFile(path) }

// LoadComponentProfile reads a user's component profile file, in the
// format of the built-in ones, or only what it changes of a base profile
// (see resolveProfileFile). Its name must be its own: a report quoting
// profile "tuned" must mean the built-in one.
func LoadComponentProfile(path string) (ComponentProfile, error) {
	data, _, err := resolveProfileFile(path, nil)
	if err != nil {
		return ComponentProfile{}, err
	}
	p, err := parseComponentProfile(path, data)
	if err != nil {
		return ComponentProfile{}, err
	}
	if _, err := LookupComponentProfile(p.Name); err == nil {
		return ComponentProfile{}, fmt.Errorf("%s: metadata.name %q is a built-in profile's: give yours a name of its own", path, p.Name)
	}
	p.file = data
	return p, nil
}

// recordedProfileName is where Up keeps a user's profile file in the
// cluster's folder, so that later commands know the profile it runs.
const recordedProfileName = "ghostfleet-profile.yaml"

// ClusterProfile returns the profile the cluster called name was created
// with, recorded in its state as recorded: a built-in one, or the user's
// file Up kept in the cluster's folder.
func ClusterProfile(name, recorded string) (ComponentProfile, error) {
	if p, err := LookupComponentProfile(recorded); err == nil {
		return p, nil
	}
	path := filepath.Join(clusterWorkdir(name), recordedProfileName)
	p, err := LoadComponentProfile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ComponentProfile{}, fmt.Errorf("fleet %s runs profile %q, which is not built in and whose file is not in the cluster's folder (%s)", name, recorded, path)
	}
	if err == nil && p.Name != recorded {
		err = fmt.Errorf("%s names profile %q, but fleet %s was created with %q", path, p.Name, name, recorded)
	}
	return p, err
}

// readFile reads a user's file; an error names it once (path: reason).
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: %w", path, pe.Err)
	}
	return data, err
}

var profileNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// parseComponentProfile reads a profile file: a ComponentProfile document
// and a KubeSchedulerConfiguration document, in either order. Errors are
// one line that starts with source.
func parseComponentProfile(source string, data []byte) (ComponentProfile, error) {
	fail := func(format string, args ...any) (ComponentProfile, error) {
		return ComponentProfile{}, fmt.Errorf("%s: %s", source, fmt.Sprintf(format, args...))
	}
	profileDoc, schedulerConfig, err := profileDocuments(data)
	if err != nil {
		return fail("%v", err)
	}
	var pf profileFile
	if err := StrictYAML(profileDoc, &pf); err != nil {
		return fail("%v", err)
	}
	if pf.Base != "" {
		return fail("base %q: only a user's profile file may have a base; a built-in profile is written out whole", pf.Base)
	}
	if schedulerConfig == nil {
		return fail("no KubeSchedulerConfiguration document: kube-scheduler's settings are given in its own configuration, after a --- line")
	}
	sched, err := parseSchedulerConfig(schedulerConfig)
	if err != nil {
		return fail("KubeSchedulerConfiguration: %v", OneLine(err))
	}
	if n := pf.Metadata.Name; !profileNameRE.MatchString(n) || len(n) > 63 {
		return fail("metadata.name %q: a profile's name is lower-case letters, digits and '-' (at most 63)", n)
	}
	for _, f := range []struct {
		field string
		value int
	}{
		{"controllerManager.qps", pf.ControllerManager.QPS},
		{"controllerManager.burst", pf.ControllerManager.Burst},
		{"controllerManager.workloadSyncs", pf.ControllerManager.WorkloadSyncs},
		{"controllerManager.gcSyncs", pf.ControllerManager.GCSyncs},
		{"apiServer.maxRequestsInflight", pf.APIServer.MaxRequestsInflight},
		{"apiServer.maxMutatingRequestsInflight", pf.APIServer.MaxMutatingRequestsInflight},
	} {
		// Every figure written out: a report quoting it must not rely on
		// the binary's default.
		if f.value <= 0 {
			return fail("%s is %d: it must be set, and more than 0", f.field, f.value)
		}
	}
	if q := pf.Etcd.QuotaBackendBytes; q != 0 && (q < minEtcdQuota || q > maxEtcdQuota) {
		return fail("etcd.quotaBackendBytes is %d: allowed are %d (%s) to %d (%s), or leave it out for kwokctl's 8 GiB", q, minEtcdQuota, MiB(minEtcdQuota), int64(maxEtcdQuota), MiB(maxEtcdQuota))
	}
	if d := pf.Kwok.NodeLeaseDurationSeconds; d != 0 && (d < 40 || d > 3600) {
		return fail("kwok.nodeLeaseDurationSeconds is %d: allowed are 40 (kubelet's) to 3600, or leave it out for 40", d)
	}
	for component, env := range pf.Env {
		if !slices.Contains(profileComponents, component) {
			return fail("env.%s: not a component: allowed are %s", component, strings.Join(profileComponents, ", "))
		}
		for k := range env {
			if !envNameRE.MatchString(k) {
				return fail("env.%s.%s: not an environment variable's name (upper-case letters, digits and '_')", component, k)
			}
		}
	}
	for component, cores := range pf.CPULimits {
		if !slices.Contains(profileComponents, component) {
			return fail("cpuLimits.%s: not a component: allowed are %s", component, strings.Join(profileComponents, ", "))
		}
		if !(cores >= minCPULimit && cores <= maxCPULimit) {
			return fail("cpuLimits.%s is %g: allowed are %g to %g cores (0.5 is half a core), or leave it out for no limit", component, cores, minCPULimit, float64(maxCPULimit))
		}
	}
	if err := checkAuditPolicy(pf.APIServer.AuditPolicy); err != nil {
		return fail("apiServer.auditPolicy: %v", err)
	}
	for g := range pf.FeatureGates {
		if !featureGateRE.MatchString(g) {
			return fail("featureGates.%s: not a feature gate's name (e.g. GangScheduling)", g)
		}
	}
	for gv := range pf.RuntimeConfig {
		if !groupVersionRE.MatchString(gv) {
			return fail("runtimeConfig.%s: not an API group version (e.g. scheduling.k8s.io/v1alpha2)", gv)
		}
	}
	c, a := pf.ControllerManager, pf.APIServer
	p := ComponentProfile{
		Name:      pf.Metadata.Name,
		Scheduler: sched,
		ControllerManager: ControllerManagerSettings{
			QPS: c.QPS, Burst: c.Burst, WorkloadSyncs: c.WorkloadSyncs, GCSyncs: c.GCSyncs,
		},
		APIServer: APIServerSettings{
			MaxRequestsInflight: a.MaxRequestsInflight, MaxMutatingRequestsInflight: a.MaxMutatingRequestsInflight,
			AuditPolicy: a.AuditPolicy,
		},
		Etcd:            EtcdSettings{QuotaBackendBytes: pf.Etcd.QuotaBackendBytes, UnsafeNoFsync: pf.Etcd.UnsafeNoFsync},
		Env:             pf.Env,
		CPULimits:       pf.CPULimits,
		Kwok:            KwokSettings{NodeLeaseDurationSeconds: pf.Kwok.NodeLeaseDurationSeconds},
		FeatureGates:    pf.FeatureGates,
		RuntimeConfig:   pf.RuntimeConfig,
		Source:          source,
		schedulerConfig: schedulerConfig,
		summary:         pf.Summary,
		note:            pf.Note,
	}
	p.Description = p.describe(pf.Summary, pf.Note)
	return p, nil
}

// profileDocuments returns a profile file's ComponentProfile document
// and its KubeSchedulerConfiguration document (nil when there is none),
// which may come in either order.
func profileDocuments(data []byte) (profile, scheduler []byte, err error) {
	docs, err := splitYAML(data)
	if err != nil {
		return nil, nil, err
	}
	var profileN, schedulerN int
	for i, doc := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, nil, fmt.Errorf("document %d: %v", i+1, OneLine(err))
		}
		switch {
		case head.Kind == ProfileKind:
			if profile != nil {
				return nil, nil, fmt.Errorf("documents %d and %d are both a %s: a file holds one profile", profileN, i+1, ProfileKind)
			}
			if head.APIVersion != ProfileAPIVersion {
				return nil, nil, fmt.Errorf("apiVersion %q: this GhostFleet reads %s %s", head.APIVersion, ProfileAPIVersion, ProfileKind)
			}
			profile, profileN = doc, i+1
		case head.Kind == "KubeSchedulerConfiguration":
			if scheduler != nil {
				return nil, nil, fmt.Errorf("documents %d and %d are both a KubeSchedulerConfiguration: kube-scheduler reads one", schedulerN, i+1)
			}
			scheduler, schedulerN = doc, i+1
		default:
			return nil, nil, fmt.Errorf("document %d is a %q %q: a profile file holds a %s %s and a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration",
				i+1, head.APIVersion, head.Kind, ProfileAPIVersion, ProfileKind)
		}
	}
	if profile == nil {
		return nil, nil, fmt.Errorf("no %s %s document", ProfileAPIVersion, ProfileKind)
	}
	return profile, scheduler, nil
}

// etcd's quota bounds: under 8 MiB a fleet's own objects fill it before
// any load; etcd itself warns above 8 GiB.
const (
	minEtcdQuota = 8 << 20
	maxEtcdQuota = 8 << 30
)

// splitYAML returns the documents of a YAML stream as written, without
// the ones that hold nothing but comments.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %v", len(docs)+1, OneLine(err))
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "" {
			continue
		}
		docs = append(docs, doc)
	}
}

// StrictYAML decodes a YAML document into v, failing on unknown or
// duplicate fields with their path (e.g. controllerManager.qpss), in one
// line: how every file a user hands GhostFleet is read.
func StrictYAML(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return errors.New(OneLine(err))
	}
	return StrictJSON(j, v)
}

// StrictJSON is StrictYAML for a document already in JSON.
func StrictJSON(j []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return errors.New(OneLine(err))
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// OneLine folds a multi-line YAML or JSON error and drops the decoders'
// own prefixes, which say nothing to someone editing a file.
func OneLine(err error) string {
	s := err.Error()
	for _, prefix := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		s = strings.ReplaceAll(s, prefix, "")
	}
	return strings.Join(strings.Fields(s), " ")
}

// checkAuditPolicy checks an audit policy as kube-apiserver does at its
// start (its own reader), so that `up` refuses it before creating anything.
func checkAuditPolicy(p *auditv1.Policy) error {
	if p == nil {
		return nil
	}
	if v := p.APIVersion; v != "" && v != auditv1.SchemeGroupVersion.String() {
		return fmt.Errorf("apiVersion %q: allowed is %s (or leave it out)", v, auditv1.SchemeGroupVersion)
	}
	if k := p.Kind; k != "" && k != "Policy" {
		return fmt.Errorf("kind %q: allowed is Policy (or leave it out)", k)
	}
	if len(p.Rules) == 0 {
		return errors.New("no rules: a policy logs what its first matching rule says (e.g. level: Metadata for verbs: [delete])")
	}
	data, err := auditPolicyYAML(p)
	if err != nil {
		return err
	}
	_, err = auditpolicy.LoadPolicyFromBytes(data)
	return err
}
