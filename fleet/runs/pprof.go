package runs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/metrics"
)

// PprofOptions ask for a CPU profile of every component at once.
type PprofOptions struct {
	// Duration is how long the profiles sample.
	Duration time.Duration `json:"duration"`
	// Top is how many functions per component the result lists.
	Top int `json:"top"`
}

// NewPprofOptions are the defaults: 30 s, the top 15 functions.
func NewPprofOptions() PprofOptions { return PprofOptions{Duration: 30 * time.Second, Top: 15} }

// Validate names what is out of range.
func (o PprofOptions) Validate() error {
	switch {
	case o.Duration < time.Second || o.Duration > 10*time.Minute:
		return fmt.Errorf("--duration %s is out of range: allowed are 1s-10m", o.Duration)
	case o.Top < 1 || o.Top > 200:
		return fmt.Errorf("--top %d is out of range: allowed are 1-200", o.Top)
	}
	return nil
}

// ComponentProfile is what one component's CPU profile says.
type ComponentProfile struct {
	Component string `json:"component"`
	// File is the profile in the run folder (pprof's format: `go tool
	// pprof FILE` reads it); empty when the component served none.
	File string `json:"file,omitempty"`
	// CPUSeconds is the CPU time the profile sampled, and Cores the same
	// over the capture's wall time.
	CPUSeconds float64 `json:"cpuSeconds"`
	Cores      float64 `json:"cores"`
	// CPUMsPerPod is CPUSeconds in milliseconds per pod the scheduler
	// bound during the capture (PprofFigures.PodsScheduled), when any was.
	CPUMsPerPod float64 `json:"cpuMsPerPod,omitempty"`
	// Top are the functions with the most CPU time of their own (flat).
	Top []Frame `json:"top,omitempty"`
	// SchedulerPlugins is, for kube-scheduler, the CPU-seconds of the
	// samples with a scheduling framework plugin's code on the stack, by
	// plugin package (noderesources, dynamicresources, …): cumulative,
	// so what a plugin calls, such as the DRA allocator, counts for it.
	SchedulerPlugins map[string]float64 `json:"schedulerPluginCpuSeconds,omitempty"`
	Error            string             `json:"error,omitempty"`
}

// Frame is one function's share of a profile.
type Frame struct {
	Function   string  `json:"function"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Share      float64 `json:"share"` // of the component's sampled CPU time
}

// PprofFigures are what a capture measured: its record's result.
type PprofFigures struct {
	// PodsScheduled are the pods kube-scheduler bound during the capture:
	// its scheduler_schedule_attempts_total{result="scheduled"} read from
	// its /metrics just before and just after. PodsUncounted says why
	// they are not, when they could not be read.
	PodsScheduled float64 `json:"podsScheduled"`
	PodsUncounted string  `json:"podsUncounted,omitempty"`
	// Components are the profiles, busiest first.
	Components []ComponentProfile `json:"components"`
}

// PprofResult is a capture's figures and its run folder.
type PprofResult struct {
	Run
	Seconds float64 `json:"seconds"`
	PprofFigures
}

// Summary names the busiest components and their cores.
func (r PprofResult) Summary() string {
	var parts []string
	for _, c := range r.Components {
		if c.Error == "" && len(parts) < 4 {
			parts = append(parts, fmt.Sprintf("%s %.2f", c.Component, c.Cores))
		}
	}
	return fmt.Sprintf("cores over %.0fs: %s", r.Seconds, strings.Join(parts, ", "))
}

// Pprof captures a CPU profile of every component of GhostFleet's own
// fleet over o.Duration, all at once, into a new run folder
// pprof-<time>/ (one <component>.pprof each) with the top functions per
// component in its record. Run it while a load runs to see where that
// load's CPU goes.
func Pprof(ctx context.Context, env Env, o PprofOptions) (PprofResult, error) {
	if err := o.Validate(); err != nil {
		return PprofResult{}, err
	}
	if env.Target.Attached() {
		return PprofResult{}, fmt.Errorf("pprof reads the components of GhostFleet's own fleet; an attached cluster's components are not reachable from here")
	}
	s, err := open(env)
	if err != nil {
		return PprofResult{}, err
	}
	rec := record.Record{ID: NewID("pprof"), Kind: "pprof", Params: o, Started: time.Now().UTC()}
	done := progress.Step(env.reporter().Report, "pprof", fmt.Sprintf("profiling every component for %s", o.Duration), o.Duration)
	scheduled := countScheduled(ctx, env.Target)
	profiles, err := fleet.CaptureCPUProfiles(ctx, env.Target.Name, o.Duration)
	pods, uncounted := scheduled()
	done()
	if err != nil {
		return PprofResult{}, err
	}
	rec.Ended = time.Now().UTC()
	rec.Outcome = record.Outcome(ctx, ctx.Err())
	rec.Phases = []record.Phase{{Name: "pprof", Start: rec.Started, End: rec.Ended}}
	res := PprofResult{Seconds: rec.Ended.Sub(rec.Started).Seconds(), PprofFigures: PprofFigures{PodsScheduled: pods, PodsUncounted: uncounted}}
	dir, err := record.NewRunDir(env.ResultsDir, rec.Kind, rec.Started)
	if err != nil {
		return res, err
	}
	for _, p := range profiles {
		c := ComponentProfile{Component: p.Component}
		if p.Err == nil {
			c.File = p.Component + ".pprof"
			if err := record.WriteFile(dir, c.File, p.Data); err != nil {
				_ = os.RemoveAll(dir)
				return res, err
			}
			var sum profileSum
			sum, p.Err = summarise(p.Data, o.Top)
			c.CPUSeconds, c.Top, c.SchedulerPlugins = sum.cpuSeconds, sum.top, sum.plugins
			c.Cores = c.CPUSeconds / o.Duration.Seconds()
			if pods > 0 {
				c.CPUMsPerPod = 1000 * c.CPUSeconds / pods
			}
		}
		if p.Err != nil {
			c.Error = p.Err.Error()
		}
		res.Components = append(res.Components, c)
	}
	sort.SliceStable(res.Components, func(i, j int) bool { return res.Components[i].CPUSeconds > res.Components[j].CPUSeconds })
	rec.Result = res.PprofFigures
	s.complete(&rec)
	if err := record.WriteJSON(dir, "run.json", rec); err != nil {
		_ = os.RemoveAll(dir)
		return res, fmt.Errorf("writing the run record: %w", err)
	}
	res.Run = Run{ID: rec.ID, Kind: rec.Kind, Dir: dir, Outcome: rec.Outcome, Warning: strings.Join(rec.Warnings, "; ")}
	return res, nil
}

// countScheduled reads kube-scheduler's count of pods bound now, and
// returns a function that reads it again and gives the difference, or
// why there is none.
func countScheduled(ctx context.Context, t fleet.Target) func() (float64, string) {
	const counter = "scheduler_schedule_attempts_total"
	scheduled := map[string]string{"result": "scheduled"}
	var scheduler *metrics.Endpoint
	endpoints, err := fleet.MetricsEndpoints(ctx, t)
	for i, e := range endpoints {
		if e.Job == "kube-scheduler" {
			scheduler = &endpoints[i]
		}
	}
	if err == nil && scheduler == nil {
		err = fmt.Errorf("the fleet's kube-scheduler serves no /metrics")
	}
	var before float64
	if err == nil {
		before, err = metrics.CounterSum(ctx, *scheduler, counter, scheduled)
	}
	return func() (float64, string) {
		if err != nil {
			return 0, err.Error()
		}
		after, err := metrics.CounterSum(ctx, *scheduler, counter, scheduled)
		switch {
		case err != nil:
			return 0, err.Error()
		case after < before:
			return 0, "kube-scheduler restarted during the capture"
		}
		return after - before, ""
	}
}

// profileSum is what summarise reads from a CPU profile.
type profileSum struct {
	cpuSeconds float64
	top        []Frame
	plugins    map[string]float64
}

// schedulerPlugin finds a scheduling framework plugin's package in a
// function's name.
var schedulerPlugin = regexp.MustCompile(`/pkg/scheduler/framework/plugins/([a-z0-9]+)[./]`)

// summarise sums a CPU profile's samples, the n functions with the most
// CPU time of their own (the innermost frame of each sample, inlined
// functions included), and the CPU time of the samples with each
// scheduling framework plugin anywhere on their stack (each sample counted
// once per plugin).
func summarise(data []byte, n int) (profileSum, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return profileSum{}, fmt.Errorf("reading the profile: %w", err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return profileSum{}, fmt.Errorf("not a CPU profile (no cpu/nanoseconds samples)")
	}
	flat := map[string]int64{}
	plugins := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		name := "?"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			name = s.Location[0].Line[0].Function.Name
		}
		flat[name] += v
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				if m := schedulerPlugin.FindStringSubmatch(line.Function.Name); m != nil && !seen[m[1]] {
					seen[m[1]] = true
					plugins[m[1]] += v
				}
			}
		}
	}
	frames := make([]Frame, 0, len(flat))
	for name, v := range flat {
		frames = append(frames, Frame{Function: name, CPUSeconds: float64(v) / 1e9, Share: float64(v) / float64(max(total, 1))})
	}
	sort.Slice(frames, func(i, j int) bool { return frames[i].CPUSeconds > frames[j].CPUSeconds })
	sum := profileSum{cpuSeconds: float64(total) / 1e9, top: frames[:min(n, len(frames))]}
	if len(plugins) > 0 {
		sum.plugins = map[string]float64{}
		for name, v := range plugins {
			sum.plugins[name] = float64(v) / 1e9
		}
	}
	return sum, nil
}
