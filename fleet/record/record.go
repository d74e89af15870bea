package record

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// KindCL2 is the record kind of a ClusterLoader2 run.
const KindCL2 = "cl2"

// RootEnv names the environment variable that sets where runs go.
const RootEnv = "GHOSTFLEET_RESULTS"

// DefaultRoot is where runs go unless --results-dir says otherwise:
// $GHOSTFLEET_RESULTS; else the results/ folder of the GhostFleet
// checkout the working directory is in (runs are committed there); else
// the per-user data folder, $XDG_DATA_HOME/ghostfleet/results
// (~/.local/share/ghostfleet/results). It never depends on which
// folder of a checkout a command runs in.
func DefaultRoot() string {
	if dir := os.Getenv(RootEnv); dir != "" {
		return dir
	}
	if wd, err := os.Getwd(); err == nil {
		if top, ok := checkout(wd); ok {
			return filepath.Join(top, "results")
		}
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "results" // no home: the working directory, as a last resort
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "ghostfleet", "results")
}

// module is the first line of GhostFleet's go.mod.
const module = "module github.com/ghostfleet/ghostfleet\n"

// checkout finds the GhostFleet checkout holding dir: the nearest folder
// upward whose go.mod is GhostFleet's.
func checkout(dir string) (string, bool) {
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), module) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// CheckRoot checks, before a run starts, that runs can be written under
// root: it creates root when missing and writes and removes a temporary
// file in it. A run that could not record itself fails here, before it
// touches a cluster, not after ten minutes of load.
func CheckRoot(root string) error {
	fix := "set --results-dir or " + RootEnv + " to a folder you can write"
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		return fmt.Errorf("results folder %s is a file, not a folder: %s", root, fix)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("results folder %s cannot be created (%v): %s", root, pathErr(err), fix)
	}
	f, err := os.CreateTemp(root, ".writable-*.tmp")
	if err != nil {
		return fmt.Errorf("results folder %s is not writable (%v): %s", root, pathErr(err), fix)
	}
	f.Close()
	return os.Remove(f.Name())
}

// pathErr is err without the path a *PathError repeats.
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// NewRunDir creates a new folder <root>/<kind>-<UTC time>, adding -2, -3…
// when a run of the same kind started in the same second. An existing
// folder is never reused.
func NewRunDir(root, kind string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	stamp := now.UTC().Format("20060102-150405")
	dir := filepath.Join(root, kind+"-"+stamp)
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", err
		}
		dir = filepath.Join(root, fmt.Sprintf("%s-%s-%d", kind, stamp, i))
	}
}

// WriteJSON writes v to dir/name through a temporary file and a rename.
func WriteJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(dir, name, append(data, '\n'))
}

// WriteFile writes dir/name through a temporary file and a rename, so a
// reader never sees half a file.
func WriteFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		_ = os.Remove(tmp) // a full disk leaves no half a temporary file either
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Phase is a named time window of a run, for charts and reports.
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Record is what a run leaves behind: what was asked, when each phase
// ran, and what came out. Snapshots and reports read these.
type Record struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Cluster string `json:"cluster"`
	Profile string `json:"profile,omitempty"`
	// ProfileSettings are that profile's settings in one line, as the
	// fleet ran them ("scheduler client QPS 50/burst 850 …"), so that a
	// record says them without the profile's file (an A/B's: both sides',
	// A's "vs" B's, as its Profile); empty on an attached cluster.
	ProfileSettings string    `json:"profileSettings,omitempty"`
	Started         time.Time `json:"started"`
	Ended           time.Time `json:"ended"`
	// Outcome is "completed", "timed out", "interrupted" or "failed: …".
	Outcome string  `json:"outcome"`
	Params  any     `json:"params"`
	Phases  []Phase `json:"phases"`
	Result  any     `json:"result"`
	// Host is the machine the run ran on, over the run; nil when it
	// could not be read, and on runs written before GhostFleet read it.
	Host *Host `json:"host,omitempty"`
	// Warnings are what the run met that its figures alone would not
	// say, such as etcd refusing writes (NOSPACE), with what to do.
	Warnings []string `json:"warnings,omitempty"`
}

// Host is the machine GhostFleet ran a run on (on an attached cluster the
// load generator's, not the control plane's), over the run
// (fleet.ReadHost):
//   - CPUs, its logical CPUs, and CPUSeconds, their time by state summed
//     over them from /proc/stat (user, nice, system, idle, iowait, irq,
//     softirq, steal, the time its hypervisor ran something else when a
//     core had work);
//   - ProbeStart and ProbeEnd, fixed works (Probe) timed just before
//     the run and just after it: how fast one core, and the caches and
//     memory it shares, were. A busy host can slow its guest's cores
//     without counting steal, and then the same work costs every
//     process more CPU seconds.
type Host struct {
	CPUs       int                `json:"cpus"`
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	ProbeStart Probe              `json:"probeStart"`
	ProbeEnd   Probe              `json:"probeEnd"`
}

// Probe is three fixed works done Trials times each on one thread
// (fleet.SpeedProbe): one within a core's own caches (Cache), one that
// spills into the cache the cores share (Memory), and a chase through
// memory (DRAM; absent from runs before it was added).
type Probe struct {
	Trials int        `json:"trials"`
	Cache  ProbeTimes `json:"cache"`
	Memory ProbeTimes `json:"memory"`
	DRAM   ProbeTimes `json:"dram"`
}

// ProbeTimes are the thread's CPU milliseconds on a work's fastest trial,
// the median of its trials' CPU milliseconds, and the median of their
// wall milliseconds (above the CPU median when the thread waited for a
// core).
type ProbeTimes struct {
	CPUMsMin     float64 `json:"cpuMsMin"`
	CPUMsMedian  float64 `json:"cpuMsMedian"`
	WallMsMedian float64 `json:"wallMsMedian"`
}

// Outcome names how a run that returned err ended: "completed",
// "interrupted" when ctx was cancelled, or "failed: …".
func Outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "completed"
	case ctx.Err() != nil:
		return "interrupted"
	default:
		return "failed: " + err.Error()
	}
}

// WriteRecord writes the record as run.json into a new run folder named
// after its kind and start, and returns the folder. A record without an
// ID is given the folder's name.
func WriteRecord(root string, r Record) (string, error) {
	dir, err := NewRunDir(root, r.Kind, r.Started)
	if err != nil {
		return "", err
	}
	if r.ID == "" {
		r.ID = filepath.Base(dir)
	}
	return dir, WriteJSON(dir, "run.json", r)
}

// RunsIn reads the run records under root whose time overlaps start…end,
// oldest first. Snapshots are not runs and are skipped.
func RunsIn(root string, start, end time.Time) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", "run.json"))
	if err != nil {
		return nil, err
	}
	runs := []Record{}
	for _, f := range files {
		r, ok, err := readRecord(f)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // a snapshot's run.json, or not a record at all
		}
		if r.Started.Before(end) && r.Ended.After(start) {
			runs = append(runs, r)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	return runs, nil
}

// readRecord reads a run record from file; ok is false for a file that
// holds none (a snapshot's run.json).
func readRecord(file string) (r Record, ok bool, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Record{}, false, err
	}
	if json.Unmarshal(data, &r) != nil || r.Kind == "" {
		return Record{}, false, nil
	}
	return r, true, nil
}

// FindRun returns the record of the run under root whose ID is id, else
// of the run in folder id. The folder is what `ls` and a run's "run
// record:" line show; the ID, which names the run's objects in the
// cluster, is taken before the run starts and so can differ from its
// folder's name by a second, or by the -2 of a second run started in
// the same second.
func FindRun(root, id string) (Record, error) {
	runs, err := RunsIn(root, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return Record{}, err
	}
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
	}
	// No run has that ID (one run's ID can be another's folder name, a
	// second apart): the run in that folder.
	if id != "" && id == filepath.Base(id) && id != "." && id != ".." {
		if r, ok, err := readRecord(filepath.Join(root, id, "run.json")); err == nil && ok {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("no run with ID or folder %q under %s: `ls %s` lists the runs", id, root, root)
}
