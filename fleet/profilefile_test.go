package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	kwokfake "sigs.k8s.io/kwok/pkg/client/clientset/versioned/fake"
	"sigs.k8s.io/kwok/pkg/config"
)

const schedulerDoc = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 200, burst: 400}
`

const profileDoc = `apiVersion: ghostfleet.dev/v1alpha1
kind: ComponentProfile
metadata:
  name: mine
summary: my own
controllerManager: {qps: 100, burst: 200, workloadSyncs: 10, gcSyncs: 30}
apiServer: {maxRequestsInflight: 800, maxMutatingRequestsInflight: 400}
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadComponentProfile(t *testing.T) {
	p, err := LoadComponentProfile(writeFile(t, "mine.yaml", "# mine\n"+profileDoc+"---\n"+schedulerDoc))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "mine" || p.Scheduler.QPS != 200 || p.ControllerManager != (ControllerManagerSettings{QPS: 100, Burst: 200, WorkloadSyncs: 10, GCSyncs: 30}) ||
		p.APIServer.MaxRequestsInflight != 800 || !strings.HasPrefix(p.Description, "my own: scheduler client QPS 200/burst 400") ||
		string(p.schedulerConfig) != schedulerDoc || !strings.HasSuffix(p.Source, "mine.yaml") || p.file == nil {
		t.Errorf("profile %+v", p)
	}
	// The documents may come in either order.
	if p, err := LoadComponentProfile(writeFile(t, "r.yaml", schedulerDoc+"---\n"+profileDoc)); err != nil || p.Scheduler.Burst != 400 {
		t.Errorf("scheduler first: %+v, %v", p, err)
	}

	tests := []struct {
		name, text string
		want       string
	}{
		{"unknown field", strings.Replace(profileDoc, "gcSyncs", "gcSync", 1) + "---\n" + schedulerDoc, `unknown field "controllerManager.gcSync"`},
		{"figure left out", strings.Replace(profileDoc, "qps: 100, ", "", 1) + "---\n" + schedulerDoc, "controllerManager.qps is 0: it must be set"},
		{"wrong type", strings.Replace(profileDoc, "burst: 200", "burst: lots", 1) + "---\n" + schedulerDoc, "controllerManager.burst"},
		{"api version", strings.Replace(profileDoc, "v1alpha1", "v2", 1) + "---\n" + schedulerDoc, `apiVersion "ghostfleet.dev/v2": this GhostFleet reads ghostfleet.dev/v1alpha1 ComponentProfile`},
		{"no scheduler", profileDoc, "no KubeSchedulerConfiguration document"},
		{"no profile", schedulerDoc, "no ghostfleet.dev/v1alpha1 ComponentProfile document"},
		{"two profiles", profileDoc + "---\n" + profileDoc + "---\n" + schedulerDoc, "documents 1 and 2 are both a ComponentProfile"},
		{"other kind", profileDoc + "---\n" + schedulerDoc + "---\napiVersion: v1\nkind: Pod\n", `document 3 is a "v1" "Pod"`},
		{"bad scheduler config", profileDoc + "---\n" + strings.Replace(schedulerDoc, "qps: 200, ", "", 1), "KubeSchedulerConfiguration: clientConnection qps 0, burst 400: both must be set"},
		{"built-in name", strings.Replace(profileDoc, "name: mine", "name: tuned", 1) + "---\n" + schedulerDoc, `metadata.name "tuned" is a built-in profile's`},
		{"bad name", strings.Replace(profileDoc, "name: mine", "name: My_Profile", 1) + "---\n" + schedulerDoc, `metadata.name "My_Profile"`},
		{"not YAML", "apiVersion: [\n", "document 1"},
		{"env of no component", profileDoc + "env: {kubelet: {GOGC: \"200\"}}\n---\n" + schedulerDoc, "env.kubelet: not a component: allowed are etcd, kube-apiserver"},
		{"lease too short", profileDoc + "kwok: {nodeLeaseDurationSeconds: 10}\n---\n" + schedulerDoc, "kwok.nodeLeaseDurationSeconds is 10: allowed are 40"},
		{"env name", profileDoc + "env: {etcd: {gogc: \"200\"}}\n---\n" + schedulerDoc, "env.etcd.gogc: not an environment variable's name"},
		{"CPU limit of no component", profileDoc + "cpuLimits: {kubelet: 1}\n---\n" + schedulerDoc, "cpuLimits.kubelet: not a component: allowed are etcd, kube-apiserver"},
		{"CPU limit of nothing", profileDoc + "cpuLimits: {kube-scheduler: 0}\n---\n" + schedulerDoc, "cpuLimits.kube-scheduler is 0: allowed are 0.01 to 1024 cores"},
		{"CPU limit below the kernel's", profileDoc + "cpuLimits: {etcd: 0.001}\n---\n" + schedulerDoc, "cpuLimits.etcd is 0.001: allowed are 0.01"},
		{"CPU limit not a number", profileDoc + "cpuLimits: {etcd: half}\n---\n" + schedulerDoc, "cpuLimits of type float64"},
		{"audit policy without rules", auditDoc("{}"), "apiServer.auditPolicy: no rules"},
		{"audit policy's level", auditDoc("{rules: [{level: Everything}]}"), `apiServer.auditPolicy: rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata"`},
		{"audit policy's stage", auditDoc("{omitStages: [Started], rules: [{level: None}]}"), `apiServer.auditPolicy: omitStages[0]: Invalid value: "Started": allowed stages are RequestReceived`},
		{"audit policy's kind", auditDoc("{kind: Rules, rules: [{level: None}]}"), `apiServer.auditPolicy: kind "Rules": allowed is Policy`},
		{"audit policy's non-resource URL", auditDoc("{rules: [{level: None, nonResourceURLs: [metrics]}]}"), `apiServer.auditPolicy: rules[0].nonResourceURLs[0]: Invalid value: "metrics": non-resource URL rules must begin with a '/' character`},
		{"audit policy's field", auditDoc("{rules: [{level: None, verb: [get]}]}"), `unknown field "apiServer.auditPolicy.rules[0].verb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "bad.yaml", tt.text)
			_, err := LoadComponentProfile(path)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting with the file and saying %q", err, tt.want)
			}
		})
	}
	if _, err := LoadComponentProfile(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// Environment variables and etcd's fsync reach the components as kwokctl
// patches, and a profile without fsync says so in its description.
func TestProfileEnvAndNoFsync(t *testing.T) {
	doc := profileDoc + "kwok: {nodeLeaseDurationSeconds: 200}\netcd: {unsafeNoFsync: true}\ncpuLimits: {kube-scheduler: 0.2}\nenv:\n  kube-scheduler: {GOGC: \"300\"}\n  kube-apiserver: {GOGC: \"200\", GOMEMLIMIT: 4GiB}\n"
	p, err := LoadComponentProfile(writeFile(t, "fast.yaml", doc+"---\n"+schedulerDoc))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Description, "kube-apiserver GOGC=200, kube-apiserver GOMEMLIMIT=4GiB, kube-scheduler GOGC=300") ||
		!strings.Contains(p.Description, "NOT DURABLE") || !strings.Contains(p.Description, "kube-scheduler CPU limited to 0.2 cores") || !strings.Contains(p.Description, "node leases 200 s (renewed every 50 s)") {
		t.Errorf("description %q", p.Description)
	}
	got := map[string]string{}
	for _, patch := range p.patches() {
		for _, e := range patch.ExtraEnvs {
			got[patch.Name+" "+e.Name] = e.Value
		}
		for _, a := range patch.ExtraArgs {
			got[patch.Name+" --"+a.Key] = a.Value
		}
	}
	for k, v := range map[string]string{"kube-scheduler GOGC": "300", "kube-apiserver GOGC": "200", "kube-apiserver GOMEMLIMIT": "4GiB", "etcd --unsafe-no-fsync": "true"} {
		if got[k] != v {
			t.Errorf("patch %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// Every built-in file is what its reader takes, and `profile show` can
// print it.
func TestBuiltinFilesRoundTrip(t *testing.T) {
	for _, p := range ComponentProfiles {
		data, err := BuiltinFile("profiles/" + p.Name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseComponentProfile(p.Source, data)
		if err != nil || again.Description != p.Description || p.Source != BuiltinProfilePath(p.Name) {
			t.Errorf("%s: %+v, %v", p.Name, again, err)
		}
		// A copy under another name is a valid user profile.
		path := writeFile(t, "copy.yaml", strings.Replace(string(data), "name: "+p.Name, "name: my-"+p.Name, 1))
		if c, err := LoadComponentProfile(path); err != nil || c.Scheduler.QPS != p.Scheduler.QPS || c.ControllerManager != p.ControllerManager {
			t.Errorf("a copy of %s: %+v, %v", p.Name, c, err)
		}
	}
	all, err := Stages(0)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, f := range stageFiles {
		data, err := BuiltinFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(data)
	}
	path := writeFile(t, "all.yaml", text.String())
	user, err := LoadStageFile(path)
	if err != nil || len(user) != len(all) {
		t.Fatalf("the built-in stages as a stage file: %d stages, %v", len(user), err)
	}
}

const stageDoc = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Pending]}
  delay: {durationMilliseconds: 5000}
  next:
    statusTemplate: |
      phase: Running
`

func TestLoadStageFile(t *testing.T) {
	extra := strings.Replace(stageDoc, "name: pod-ready", "name: my-stage", 1)
	path := writeFile(t, "stages.yaml", "# mine\n---\n"+stageDoc+"---\n"+extra)
	stages, err := LoadStageFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || stages[0].Annotations[AnnotationStageFile] != path || *stages[0].Spec.Delay.DurationMilliseconds != 5000 {
		t.Fatalf("stages %+v", stages)
	}

	tests := []struct {
		name, text string
		want       string
	}{
		{"unknown field", strings.Replace(stageDoc, "next:", "nxt:", 1), `document 1: unknown field "spec.nxt"`},
		{"kind", strings.Replace(stageDoc, "kind: Stage", "kind: Stages", 1), `apiVersion "kwok.x-k8s.io/v1alpha1", kind "Stages"`},
		{"no name", strings.Replace(stageDoc, "name: pod-ready", "labels: {a: b}", 1), "metadata.name is not set"},
		{"no selector", strings.Replace(stageDoc, "  selector:\n    matchExpressions:\n    - {key: .status.phase, operator: In, values: [Pending]}\n", "", 1), "spec.selector is not set"},
		{"operator", strings.Replace(stageDoc, "operator: In", "operator: Is", 1), `matchExpressions[0].operator "Is"`},
		{"second document", stageDoc + "---\n" + strings.Replace(extra, "kind: Pod", "knd: Pod", 1), `document 2: unknown field "spec.resourceRef.knd"`},
		{"empty", "# nothing\n", "no kwok Stage in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "bad.yaml", tt.text)
			_, err := LoadStageFile(path)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting with the file and saying %q", err, tt.want)
			}
		})
	}
}

func TestMergeStages(t *testing.T) {
	base, err := Stages(0)
	if err != nil {
		t.Fatal(err)
	}
	user, err := LoadStageFile(writeFile(t, "s.yaml", stageDoc+"---\n"+strings.Replace(stageDoc, "name: pod-ready", "name: my-stage", 1)))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergeStages(base, user)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged) != len(base)+1 || merged[len(merged)-1].Name != "my-stage" {
		t.Errorf("%d stages, last %s: want the new one added at the end", len(merged), merged[len(merged)-1].Name)
	}
	for i, s := range base {
		if s.Name == "pod-ready" && merged[i] != user[0] {
			t.Errorf("pod-ready not replaced in place")
		}
		if s.Name != "pod-ready" && merged[i] != s {
			t.Errorf("stage %s changed", s.Name)
		}
	}
	if _, err := MergeStages(base, append(user, user[0])); err == nil || !strings.Contains(err.Error(), "pod-ready is given twice") {
		t.Errorf("a name given twice: %v", err)
	}
}

// A user's replacement of a built-in stage survives GhostFleet's own
// installs (as fault commands make), and yields to the user's next file.
func TestEnsureStagesKeepsTheUsersReplacement(t *testing.T) {
	ctx := context.Background()
	cs := kwokfake.NewSimpleClientset()
	base, err := Stages(0)
	if err != nil {
		t.Fatal(err)
	}
	user, err := LoadStageFile(writeFile(t, "s.yaml", stageDoc))
	if err != nil {
		t.Fatal(err)
	}
	merged, _ := MergeStages(base, user)
	if n, err := EnsureStages(ctx, cs, merged); err != nil || n != len(base) {
		t.Fatalf("first install changed %d, %v", n, err)
	}
	installed := func() *v1alpha1.Stage {
		s, err := cs.KwokV1alpha1().Stages().Get(ctx, "pod-ready", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if n, err := EnsureStages(ctx, cs, base); err != nil || n != 0 || installed().Annotations[AnnotationStageFile] == "" {
		t.Errorf("the built-in set changed %d stages (%v) and left pod-ready from %q", n, err, installed().Annotations[AnnotationStageFile])
	}
	user[0].Spec.Delay.DurationMilliseconds = nil
	if n, err := EnsureStages(ctx, cs, user); err != nil || n != 1 || installed().Spec.Delay.DurationMilliseconds != nil {
		t.Errorf("the user's next file changed %d, %v", n, err)
	}
}

// A fleet made from a user's profile finds it again in its folder; one
// made from a built-in profile needs no file.
func TestClusterProfile(t *testing.T) {
	old := config.ClustersDir
	config.ClustersDir = t.TempDir()
	t.Cleanup(func() { config.ClustersDir = old })

	if p, err := ClusterProfile("a", "tuned"); err != nil || p.Source != BuiltinProfilePath("tuned") {
		t.Errorf("built-in: %+v, %v", p, err)
	}
	if _, err := ClusterProfile("a", "mine"); err == nil || !strings.Contains(err.Error(), `runs profile "mine", which is not built in`) {
		t.Errorf("no file: %v", err)
	}
	mine, err := LoadComponentProfile(writeFile(t, "mine.yaml", profileDoc+"---\n"+schedulerDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(clusterWorkdir("a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if path, err := recordProfile("a", ProfileTuned); err != nil || path != "" {
		t.Errorf("a built-in profile is recorded at %q, %v", path, err)
	}
	if _, err := recordProfile("a", mine); err != nil {
		t.Fatal(err)
	}
	p, err := ClusterProfile("a", "mine")
	if err != nil || p.Description != mine.Description || string(p.schedulerConfig) != string(mine.schedulerConfig) {
		t.Errorf("recorded: %+v, %v", p, err)
	}
	if _, err := ClusterProfile("a", "other"); err == nil || !strings.Contains(err.Error(), `names profile "mine", but fleet a was created with "other"`) {
		t.Errorf("renamed: %v", err)
	}
}

// The lever profiles in scenarios/profiles (issue #12's benches) load,
// and those named for gang scheduling (-gang.yaml) turn it on (train's
// --gang auto reads it from the fleet's profile).
func TestScenarioProfilesLoad(t *testing.T) {
	files, _ := filepath.Glob("../scenarios/profiles/*.yaml")
	if len(files) == 0 {
		t.Fatal("no profiles in scenarios/profiles")
	}
	for _, f := range files {
		p, err := LoadComponentProfile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if gang := strings.HasSuffix(f, "-gang.yaml"); p.GangScheduling() != gang {
			t.Errorf("%s: gang scheduling %v, want %v", f, p.GangScheduling(), gang)
		}
	}
}

// auditDoc is profileDoc whose apiserver has policy (YAML in flow style)
// as its audit policy, with the scheduler's document.
func auditDoc(policy string) string {
	return strings.Replace(profileDoc, "maxMutatingRequestsInflight: 400}", "maxMutatingRequestsInflight: 400, auditPolicy: "+policy+"}", 1) + "---\n" + schedulerDoc
}

// An audit policy is said in the description and written out whole, as
// an audit.k8s.io/v1 Policy, where kwokctl reads it.
func TestProfileAuditPolicy(t *testing.T) {
	old := config.ClustersDir
	config.ClustersDir = t.TempDir()
	t.Cleanup(func() { config.ClustersDir = old })
	p, err := LoadComponentProfile(writeFile(t, "audit.yaml", auditDoc("{omitStages: [RequestReceived], rules: [{level: None, verbs: [watch]}, {level: Metadata}]}")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Description, "apiserver audit log (2 rules)") {
		t.Errorf("description %q", p.Description)
	}
	if a := p.patches()[0]; a.Name != "kube-apiserver" || !slices.Contains(a.ExtraArgs, internalversion.ExtraArgs{Key: "audit-log-maxsize", Value: "0"}) {
		t.Errorf("the apiserver's log may rotate: %+v", a)
	}
	path, err := writeAuditPolicy("a", p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var written auditv1.Policy
	if err := StrictYAML(data, &written); err != nil {
		t.Fatal(err)
	}
	if written.APIVersion != "audit.k8s.io/v1" || written.Kind != "Policy" || len(written.Rules) != 2 || written.Rules[0].Verbs[0] != "watch" ||
		written.Rules[1].Level != auditv1.LevelMetadata || written.OmitStages[0] != auditv1.StageRequestReceived {
		t.Errorf("written %s", data)
	}
	if path, err := writeAuditPolicy("b", ProfileTuned); path != "" || err != nil {
		t.Errorf("a profile without a policy wrote %q, %v", path, err)
	}
	// A kwok.yaml's own policy beside the profile's is refused; alone it
	// stands.
	conf := &internalversion.KwokctlConfiguration{}
	conf.Options.KubeAuditPolicy = "/etc/mine.yaml"
	if err := checkKwokctlConfig(conf, p, "kwok.yaml"); err == nil || !strings.Contains(err.Error(), "kwok.yaml sets options.kubeAuditPolicy (/etc/mine.yaml), and profile mine has its own apiServer.auditPolicy") {
		t.Errorf("both policies: %v", err)
	}
	if err := checkKwokctlConfig(conf, ProfileTuned, "kwok.yaml"); err != nil {
		t.Errorf("a kwok.yaml's policy alone: %v", err)
	}
	if got := AuditLogPath("a"); got != "" {
		t.Errorf("a fleet whose apiserver has not logged has an audit log %q", got)
	}
}
