package demo

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The shipped scripts parse, with the steps the talk promises.
func TestShippedScripts(t *testing.T) {
	for _, tc := range []struct {
		file  string
		kinds []string
	}{
		{"talk-5min.yaml", []string{"nodes", "load", "fault", "churn", "rate", "snapshot", "report"}},
		{"teaser-60s.yaml", []string{"load", "fault", "churn", "rate", "snapshot"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Load(filepath.Join("..", "..", "scenarios", "demo", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, st := range s.Steps {
				kinds = append(kinds, st.Kind())
			}
			if strings.Join(kinds, " ") != strings.Join(tc.kinds, " ") {
				t.Errorf("steps %v, want %v", kinds, tc.kinds)
			}
			if s.Name+".yaml" != tc.file {
				t.Errorf("metadata.name %q in %s", s.Name, tc.file)
			}
		})
	}
}

const head = "apiVersion: ghostfleet.dev/v1alpha1\nkind: Demo\nmetadata: {name: t}\n"

func TestParse(t *testing.T) {
	s, err := Parse("t.yaml", []byte(head+`steps:
- caption: load
  load: {pods: 40, gpusPerPod: 2, timeout: 2m}
  until: {podsRunning: 40, gpusAllocated: 80}
  timeout: 90s
- caption: churn
  churn: {rate: 10, duration: 30s}
  after: 5s
- caption: faster
  rate: 20
- caption: pods fail
  fault: {kind: pod-exit, exitCode: 3, namespace: gf-load}
- caption: just words
  after: 3s
`))
	if err != nil {
		t.Fatal(err)
	}
	load, churn := s.Steps[0], s.Steps[1]
	if load.Load.Pods != 40 || load.Load.GPUs != 2 || load.Load.Timeout != 2*time.Minute || load.Load.Mode != "pods" ||
		*load.Until.PodsRunning != 40 || *load.Until.GPUsAllocated != 80 || load.Timeout != 90*time.Second {
		t.Errorf("load step: %+v %+v", load.Load, load.Until)
	}
	if churn.Churn.Rate != 10 || churn.Churn.Lifetime != 10*time.Second || churn.After != 5*time.Second || churn.Timeout != DefaultTimeout {
		t.Errorf("churn step: %+v after %s", churn.Churn, churn.After)
	}
	if *s.Steps[2].Rate != 20 || s.Steps[3].Fault.ExitCode != 3 || s.Steps[4].Kind() != "caption" {
		t.Errorf("steps: %+v", s.Steps)
	}
	if got := load.Describe(); got != "load 40×2" {
		t.Errorf("Describe = %q", got)
	}
}

// Every bad file is refused with one line naming the file, the step and
// the field.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"kind", "apiVersion: ghostfleet.dev/v1alpha1\nkind: Demos\nsteps: []", `t.yaml: apiVersion "ghostfleet.dev/v1alpha1" kind "Demos": a demo script is a ghostfleet.dev/v1alpha1 Demo`},
		{"version", "apiVersion: v1\nkind: Demo\n", `t.yaml: apiVersion "v1" kind "Demo"`},
		{"no steps", head, "t.yaml: steps: a demo has at least one step"},
		{"name", "apiVersion: ghostfleet.dev/v1alpha1\nkind: Demo\nmetadata: {name: My Demo}\nsteps: []", `t.yaml: metadata.name "My Demo"`},
		{"unknown top field", head + "stepz: []\n", `t.yaml: unknown field "stepz"`},
		{"unknown step field", head + "steps:\n- caption: a\n  lod: {pods: 1}\n", `t.yaml: step 1: unknown field "lod"`},
		{"unknown run field", head + "steps:\n- caption: a\n  load: {pods: 1, gpus: 1}\n", `t.yaml: step 1: unknown field "load.gpus"`},
		{"no caption", head + "steps:\n- load: {pods: 1}\n", "t.yaml: step 1: caption: every step has a caption of one line"},
		{"two runs", head + "steps:\n- caption: a\n  load: {pods: 1}\n  unload: {}\n", "t.yaml: step 1: a step runs one thing"},
		{"bad value", head + "steps:\n- caption: a\n  load: {pods: 0}\n", "t.yaml: step 1: load: pod count 0 is out of range: allowed are 1-100000"},
		{"bad type", head + "steps:\n- caption: a\n  load: {pods: many}\n", `t.yaml: step 1: `},
		{"bad duration", head + "steps:\n- caption: a\n  churn: {rate: 5, duration: soon}\n", `t.yaml: step 1: `},
		{"churn range", head + "steps:\n- caption: a\n  churn: {rate: 5, duration: 10s, lifetime: 20s}\n", "t.yaml: step 1: churn: lifetime 20s is out of range"},
		{"fault kind", head + "steps:\n- caption: a\n  fault: {kind: gpu-melt}\n", `t.yaml: step 1: fault: kind: unknown fault "gpu-melt"`},
		{"pod-exit code", head + "steps:\n- caption: a\n  fault: {kind: pod-exit}\n", "t.yaml: step 1: fault: exitCode: pod-exit needs"},
		{"rate first", head + "steps:\n- caption: a\n  rate: 10\n", "t.yaml: step 1: rate: changes a running churn's rate, and no step before it starts a churn"},
		{"rate range", head + "steps:\n- caption: c\n  churn: {rate: 5, duration: 1m}\n- caption: a\n  rate: -1\n", "t.yaml: step 2: rate: -1 is out of range"},
		{"until and after", head + "steps:\n- caption: a\n  load: {pods: 1}\n  until: {podsRunning: 1}\n  after: 3s\n", "t.yaml: step 1: until and after"},
		{"empty until", head + "steps:\n- caption: a\n  load: {pods: 1}\n  until: {}\n", "t.yaml: step 1: until: names no figure"},
		{"unknown until", head + "steps:\n- caption: a\n  load: {pods: 1}\n  until: {podsReady: 1}\n", `t.yaml: step 1: unknown field "until.podsReady"`},
		{"timeout alone", head + "steps:\n- caption: a\n  load: {pods: 1}\n  timeout: 1m\n", "t.yaml: step 1: timeout: bounds the wait of until"},
		{"caption only", head + "steps:\n- caption: a\n", "t.yaml: step 1: a step without a run (only a caption) needs after or until"},
		{"duplicate", head + "steps:\n- caption: a\n  caption: b\n  after: 1s\n", `t.yaml: yaml: unmarshal errors: line 6: key "caption" already set in map`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error\n  %s\nwant one line starting\n  %s", msg, tc.want)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load("no/such.yaml")
	if err == nil || err.Error() != "no/such.yaml: no such file or directory" {
		t.Errorf("Load: %v", err)
	}
}
