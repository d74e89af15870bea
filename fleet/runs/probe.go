package runs

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// ProbeOptions ask for the machine's speed alone: the speed probe every
// run records at its ends (fleet.SpeedProbe), with more trials, on one
// logical CPU or any.
type ProbeOptions struct {
	// Trials is how many times each work is done.
	Trials int `json:"trials"`
	// CPU is the logical CPU the probe's thread is held to; -1 for any.
	CPU int `json:"cpu"`
	// Note says what ran beside the probe (a load on the other CPU, or
	// nothing), kept in its record to tell a sitting's arms apart.
	Note string `json:"note,omitempty"`
}

// NewProbeOptions are the defaults: a run's own probe (7 trials), on any
// CPU.
func NewProbeOptions() ProbeOptions { return ProbeOptions{Trials: 7, CPU: -1} }

// maxProbeTrials bounds a probe to about a minute (a round of the three
// works takes 50-70 ms here).
const maxProbeTrials = 1000

// maxCPU bounds --cpu: the kernel's CPU mask that GhostFleet reads holds
// 1,024.
const maxCPU = 1024

// maxNote bounds a probe's note.
const maxNote = 200

// Validate names what is out of range.
func (o ProbeOptions) Validate() error {
	switch {
	case o.Trials < 1 || o.Trials > maxProbeTrials:
		return fmt.Errorf("--trials %d is out of range: allowed are 1-%d", o.Trials, maxProbeTrials)
	case o.CPU < -1 || o.CPU >= maxCPU:
		return fmt.Errorf("--cpu %d is out of range: allowed are -1 (any) and 0-%d, a CPU this process may run on", o.CPU, maxCPU-1)
	case len(o.Note) > maxNote || strings.ContainsFunc(o.Note, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("--note %q: allowed is one line of at most %d printable bytes", o.Note, maxNote)
	}
	return nil
}

// ProbeFigures are what a probe measured: its record's result.
type ProbeFigures struct {
	// Probe is the works' times (record.Probe): the fastest trial, the
	// median and the wall median, per work.
	Probe record.Probe `json:"probe"`
	// AllowedCPUs are the logical CPUs the process could run on (its
	// affinity, as `taskset -c` sets it), comma-separated.
	AllowedCPUs string `json:"allowedCpus"`
	// CPUs are the machine's logical CPUs, and CPUSeconds their time by
	// state over the probe (/proc/stat), the probe's own included: the
	// rest is what else ran beside it.
	CPUs       int                `json:"cpus"`
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
}

// ProbeResult is a probe's figures and its run folder.
type ProbeResult struct {
	Run
	ProbeFigures
}

// Summary gives the cache work's fastest and median trial.
func (r ProbeResult) Summary() string {
	return fmt.Sprintf("cache work %.2f ms fastest, %.2f median, of %d trials", r.Probe.Cache.CPUMsMin, r.Probe.Cache.CPUMsMedian, r.Probe.Trials)
}

// Probe times the speed probe's works o.Trials times each and records
// them in a new run folder probe-<time>/. It needs no cluster: it is the
// machine's speed now, and beside a known load on the other CPUs (`taskset
// -c 1 …`), how much that load slows this one. An interrupted probe
// records the rounds it did.
func Probe(ctx context.Context, env Env, o ProbeOptions) (ProbeResult, error) {
	if err := o.Validate(); err != nil {
		return ProbeResult{}, err
	}
	allowed, err := fleet.AllowedCPUs()
	if err != nil {
		return ProbeResult{}, err
	}
	if o.CPU >= 0 && !slices.Contains(allowed, o.CPU) {
		return ProbeResult{}, fmt.Errorf("--cpu %d is not a CPU this process may run on: allowed are %s, or -1 for any", o.CPU, fleet.CPUList(allowed))
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return ProbeResult{}, err
	}
	rec := record.Record{Kind: "probe", Params: o, Started: time.Now().UTC()}
	done := progress.Step(env.reporter().Report, "probe", fmt.Sprintf("timing the speed probe's works %d times each", o.Trials), time.Duration(o.Trials)*60*time.Millisecond)
	before, cpus, err := fleet.HostCPU()
	if err != nil {
		done()
		return ProbeResult{}, err
	}
	probe, err := fleet.ProbeOn(ctx, o.Trials, o.CPU)
	after, _, cerr := fleet.HostCPU()
	done()
	if err = cmp.Or(err, cerr); err != nil {
		return ProbeResult{}, err
	}
	if probe.Trials == 0 {
		return ProbeResult{}, fmt.Errorf("the probe was interrupted before its first round: nothing recorded")
	}
	res := ProbeResult{ProbeFigures: ProbeFigures{Probe: probe, AllowedCPUs: fleet.CPUList(allowed), CPUs: cpus, CPUSeconds: fleet.CPUSecondsBetween(before, after)}}
	rec.Ended, rec.Outcome = time.Now().UTC(), Completed
	if probe.Trials < o.Trials {
		rec.Outcome = Interrupted
		rec.Warnings = []string{fmt.Sprintf("interrupted after %d of %d rounds; the record holds those", probe.Trials, o.Trials)}
	}
	rec.Phases = []record.Phase{{Name: "probe", Start: rec.Started, End: rec.Ended}}
	rec.Result = res.ProbeFigures
	res.Run = Run{Kind: rec.Kind, Outcome: rec.Outcome, Warning: strings.Join(rec.Warnings, "; ")}
	dir, err := record.WriteRecord(env.ResultsDir, rec) // it names the record after its folder
	if err != nil {
		return res, fmt.Errorf("writing the run record: %w", err)
	}
	res.ID, res.Dir = filepath.Base(dir), dir
	return res, nil
}
