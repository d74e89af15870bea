package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

func TestProbeOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		o    ProbeOptions
		want string
	}{
		{NewProbeOptions(), ""},
		{ProbeOptions{Trials: 1000, CPU: 1023}, ""},
		{ProbeOptions{Trials: 0, CPU: -1}, "--trials 0 is out of range: allowed are 1-1000"},
		{ProbeOptions{Trials: 1001, CPU: -1}, "--trials 1001 is out of range"},
		{ProbeOptions{Trials: 7, CPU: -2}, "--cpu -2 is out of range: allowed are -1 (any) and 0-"},
		{ProbeOptions{Trials: 7, CPU: 1024}, "--cpu 1024 is out of range: allowed are -1 (any) and 0-1023, a CPU this process may run on"},
		{ProbeOptions{Trials: 7, CPU: -1, Note: "a shell loop on CPU 1"}, ""},
		{ProbeOptions{Trials: 7, CPU: -1, Note: "two\nlines"}, `--note "two\nlines": allowed is one line of at most 200 printable bytes`},
		{ProbeOptions{Trials: 7, CPU: -1, Note: strings.Repeat("x", 201)}, "at most 200 printable bytes"},
	} {
		err := tt.o.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v; want %q", tt.o, err, tt.want)
		}
	}
}

// A probe needs no cluster: its record holds the trials asked for, the
// CPUs allowed and the machine's CPU time over it, which counts at
// least the probe's own.
func TestProbeRecord(t *testing.T) {
	dir := t.TempDir()
	allowed, err := fleet.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Probe(context.Background(), Env{ResultsDir: dir}, ProbeOptions{Trials: 2, CPU: allowed[0], Note: "nothing"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(res.Dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		record.Record
		Result ProbeFigures `json:"result"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != "probe" || rec.Outcome != Completed || filepath.Dir(res.Dir) != dir || rec.ID != filepath.Base(res.Dir) || res.ID != rec.ID {
		t.Errorf("record %s in %s: kind %q, outcome %q; want a completed probe", rec.ID, res.Dir, rec.Kind, rec.Outcome)
	}
	if params, _ := json.Marshal(rec.Params); string(params) != fmt.Sprintf(`{"cpu":%d,"note":"nothing","trials":2}`, allowed[0]) {
		t.Errorf("params %s; want the options asked for, the note among them", params)
	}
	f := rec.Result
	if f.Probe.Trials != 2 || f.Probe.Cache.CPUMsMin <= 0 || f.CPUs < len(allowed) || f.AllowedCPUs != fleet.CPUList(allowed) {
		t.Errorf("figures %+v; want 2 trials timed, on a machine of at least the %d CPUs allowed (%s)", f, len(allowed), fleet.CPUList(allowed))
	}
	busy := f.CPUSeconds["user"] + f.CPUSeconds["system"]
	if own := 2 * f.Probe.Cache.CPUMsMin / 1000; busy < own {
		t.Errorf("the machine's busy time %.3f s is under the probe's own cache trials' %.3f s", busy, own)
	}
}

// A CPU the process may not run on is refused before anything is
// written, naming those it may.
func TestProbeRefusesCPU(t *testing.T) {
	allowed, err := fleet.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed[len(allowed)-1] + 1
	if cpu >= maxCPU {
		t.Skipf("this process may run on CPU %d, the last the mask holds", cpu-1)
	}
	dir := t.TempDir()
	_, err = Probe(context.Background(), Env{ResultsDir: dir}, ProbeOptions{Trials: 1, CPU: cpu})
	want := fmt.Sprintf("--cpu %d is not a CPU this process may run on: allowed are %s, or -1 for any", cpu, fleet.CPUList(allowed))
	if err == nil || err.Error() != want {
		t.Errorf("error %v; want %q", err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %d entries in the results folder; want none", len(entries))
	}
}
