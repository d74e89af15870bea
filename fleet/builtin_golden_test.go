package fleet

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites the file under
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fleet -run %s -update to write it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code renders now; diff it against:\n%s", path, got)
	}
}

// The goldens were written by the Go code that built the stages and
// profiles before they moved to embedded YAML: the YAML must render the
// very same kwok stages and component settings.

func TestStagesGolden(t *testing.T) {
	for _, tt := range []struct {
		file      string
		heartbeat int64
	}{
		{"stages.golden.yaml", 1200000},
		{"stages-no-heartbeat.golden.yaml", 0},
	} {
		t.Run(tt.file, func(t *testing.T) {
			stages, err := Stages(tt.heartbeat)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, s := range stages {
				data, err := yaml.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString("---\n")
				b.Write(data)
			}
			golden(t, tt.file, b.Bytes())
		})
	}
}

func TestProfilesGolden(t *testing.T) {
	type rendered struct {
		Name              string                             `json:"name"`
		Description       string                             `json:"description"`
		Scheduler         SchedulerSettings                  `json:"scheduler"`
		ControllerManager ControllerManagerSettings          `json:"controllerManager"`
		APIServer         APIServerSettings                  `json:"apiServer"`
		Patches           []internalversion.ComponentPatches `json:"patches"`
		SchedulerConfig   string                             `json:"schedulerConfig"`
	}
	var b bytes.Buffer
	for _, p := range ComponentProfiles {
		data, err := yaml.Marshal(rendered{p.Name, p.Description, p.Scheduler, p.ControllerManager, p.APIServer, p.patches(), string(p.schedulerConfig)})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	golden(t, "profiles.golden.yaml", b.Bytes())
}
