package workload

import (
	"strings"
	"testing"
	"time"
)

func TestParseArrivalsNamesLineFieldAndWhatIsAllowed(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // every one must be in the error
	}{
		{"empty", "", []string{"w.yaml: empty"}},
		{"not yaml", "version: [1", []string{"w.yaml: not YAML or JSON"}},
		{"a list at the top", "- 1\n", []string{"w.yaml:1: top level: is a list"}},
		{"no version", "jobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n", []string{"w.yaml:1: version: missing"}},
		{"another version", "version: 2\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n", []string{"w.yaml:1: version: 2 is not a version this GhostFleet reads: allowed is 1"}},
		{"no jobs", "version: 1\n", []string{"jobs: missing"}},
		{"empty jobs", "version: 1\njobs: []\n", []string{"w.yaml:2: jobs: empty: allowed are 1-10000"}},
		{"unknown top field", "version: 1\nsize: 3\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n", []string{"w.yaml:2: size: unknown field: allowed are version, description, jobs"}},
		{"zero pods", "version: 1\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8}\n- {at: 1, pods: 0, gpusPerPod: 8}\n", []string{"w.yaml:4: jobs[1].pods: 0 is out of range: allowed are 1-1000"}},
		{"pods not a number", "version: 1\njobs:\n- at: 0\n  pods: four\n  gpusPerPod: 8\n", []string{"w.yaml:4: jobs[0].pods: \"four\" is not a whole number: allowed are 1-1000"}},
		{"too many GPUs", "version: 1\njobs:\n- {at: 0, pods: 1, gpusPerPod: 100}\n", []string{"jobs[0].gpusPerPod: 100 is out of range: allowed are 1-64"}},
		{"bad offset", "version: 1\njobs:\n- {at: soon, pods: 1, gpusPerPod: 8}\n", []string{"w.yaml:3: jobs[0].at: \"soon\" is not an arrival offset"}},
		{"negative offset", "version: 1\njobs:\n- {at: -5s, pods: 1, gpusPerPod: 8}\n", []string{"jobs[0].at: -5s is out of range: allowed are 0-24h0m0s"}},
		{"missing field", "version: 1\njobs:\n- {at: 0, pods: 1}\n", []string{"w.yaml:3: jobs[0].gpusPerPod: missing"}},
		{"unknown job field", "version: 1\njobs:\n- {at: 0, pods: 1, gpus: 8, gpusPerPod: 8}\n", []string{"jobs[0].gpus: unknown field: allowed are name, at, pods, gpusPerPod, claim"}},
		{"bad claim", "version: 1\njobs:\n- {at: 0, pods: 1, gpusPerPod: 8, claim: some}\n", []string{"jobs[0].claim: \"some\" is not a claim mode: allowed are"}},
		{"bad name", "version: 1\njobs:\n- {name: Big_Job, at: 0, pods: 1, gpusPerPod: 8}\n", []string{"jobs[0].name: \"Big_Job\" is not allowed"}},
		{"same name twice", "version: 1\njobs:\n- {name: a, at: 0, pods: 1, gpusPerPod: 8}\n- {name: a, at: 0, pods: 1, gpusPerPod: 8}\n", []string{"w.yaml:4: jobs[1].name: \"a\" is the name of jobs[0] too"}},
		{"a job that is a number", "version: 1\njobs:\n- 3\n", []string{"w.yaml:3: jobs[0]: is a value (\"3\")"}},
		{"every error at once", "version: 1\njobs:\n- {at: x, pods: 0, gpusPerPod: 0}\n", []string{"jobs[0].at", "jobs[0].pods", "jobs[0].gpusPerPod"}},
		{"JSON too", `{"version": 1, "jobs": [{"at": 0, "pods": 0, "gpusPerPod": 8}]}`, []string{"w.yaml:1: jobs[0].pods: 0 is out of range"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseArrivals("w.yaml", []byte(tt.file))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseArrivalsReadsAndOrdersJobs(t *testing.T) {
	a, err := ParseArrivals("w.yaml", []byte("version: 1\njobs:\n- {at: 2m, pods: 4, gpusPerPod: 8, claim: count}\n- {name: first, at: 1.5, pods: 1, gpusPerPod: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) != 2 || a.Jobs[0].Name != "first" || a.Jobs[0].At != 1500*time.Millisecond || a.Jobs[1].Name != "job-0000" || a.Jobs[1].At != 2*time.Minute || a.Jobs[1].Claim != "count" {
		t.Fatalf("jobs %+v", a.Jobs)
	}
	if pods, gpus := a.Pods(); pods != 5 || gpus != 34 || a.Span() != 2*time.Minute {
		t.Fatalf("pods %d gpus %d span %s", pods, gpus, a.Span())
	}
}

func TestGenerateIsSeededAndReadsBack(t *testing.T) {
	o := GenerateOptions{Seed: 7, Jobs: 50, Pods: []int{1, 2, 4}, GPUsPerPod: 8, Gap: 2 * time.Second}
	a, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(o)
	if string(a.Marshal()) != string(b.Marshal()) {
		t.Fatal("the same seed wrote two files")
	}
	o.Seed = 8
	if c, _ := Generate(o); string(c.Marshal()) == string(a.Marshal()) {
		t.Fatal("another seed wrote the same file")
	}
	back, err := ParseArrivals("gen.yaml", a.Marshal())
	if err != nil {
		t.Fatalf("the generated file does not read back: %v\n%s", err, a.Marshal())
	}
	if len(back.Jobs) != 50 || back.Jobs[0].At != 0 || back.Span() != a.Span() {
		t.Fatalf("read back %d jobs over %s, want 50 over %s", len(back.Jobs), back.Span(), a.Span())
	}
	for i, j := range back.Jobs {
		if j != a.Jobs[i] {
			t.Fatalf("job %d: %+v read back as %+v", i, a.Jobs[i], j)
		}
	}
}

func TestGenerateRefusesBadOptions(t *testing.T) {
	ok := GenerateOptions{Seed: 1, Jobs: 3, Pods: []int{1}, GPUsPerPod: 8, Gap: time.Second}
	tests := []struct {
		name string
		edit func(*GenerateOptions)
		want string
	}{
		{"no jobs", func(o *GenerateOptions) { o.Jobs = 0 }, "--jobs 0 is out of range: allowed are 1-10000"},
		{"no pods", func(o *GenerateOptions) { o.Pods = nil }, "--pods is empty"},
		{"zero pods", func(o *GenerateOptions) { o.Pods = []int{2, 0} }, "--pods 0 is out of range: allowed are 1-1000"},
		{"GPUs", func(o *GenerateOptions) { o.GPUsPerPod = 0 }, "--gpus-per-pod 0 is out of range"},
		{"gap", func(o *GenerateOptions) { o.Gap = -time.Second }, "--gap -1s is out of range"},
		{"claim", func(o *GenerateOptions) { o.Claim = "many" }, `--claim "many" is not a claim mode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			if _, err := Generate(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTrainArrivalsAreTrainsJobsAtOnce(t *testing.T) {
	a := TrainArrivals(TrainOptions{Jobs: 3, PodsPerJob: 4, GPUsPerPod: 8})
	back, err := ParseArrivals("train.yaml", a.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if pods, gpus := back.Pods(); len(back.Jobs) != 3 || pods != 12 || gpus != 96 || back.Span() != 0 {
		t.Fatalf("%d jobs, %d pods, %d GPUs over %s", len(back.Jobs), pods, gpus, back.Span())
	}
}
