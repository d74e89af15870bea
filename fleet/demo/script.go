package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/fault"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

// APIVersion and Kind head a demo script, like fleet/profiles' files.
const (
	APIVersion = "ghostfleet.dev/v1alpha1"
	Kind       = "Demo"
)

// DefaultTimeout bounds a step's `until` when the script gives none.
const DefaultTimeout = 10 * time.Minute

// Script is a demo: steps played in order.
type Script struct {
	// Name is metadata.name; Source the file it was read from.
	Name        string
	Source      string
	Description string
	Steps       []Step
}

// Step is one run with its caption, and when auto mode goes on to the
// next step: when Until holds, After this long, or (neither) when the
// run ends. Exactly one of the run fields is set, or none for a step that
// only shows its caption (it then has After or Until).
type Step struct {
	Caption string

	Nodes    *runs.NodesOptions
	Load     *runs.LoadOptions
	Churn    *runs.ChurnOptions
	Fault    *runs.FaultOptions
	Clear    *runs.ClearOptions
	Snapshot *runs.SnapshotOptions
	Report   *runs.ReportOptions
	Train    *runs.TrainOptions
	Unload   *runs.UnloadOptions
	// Rate changes the rate of the churn an earlier step started, live
	// (the RateControl the churn hands to Reporter.Live).
	Rate *float64

	Until   *Until
	After   time.Duration
	Timeout time.Duration // for Until
}

// Kind names the step's run: load, churn, rate, caption (none)…
func (s Step) Kind() string {
	switch {
	case s.Nodes != nil:
		return "nodes"
	case s.Load != nil:
		return "load"
	case s.Churn != nil:
		return s.Churn.Kind()
	case s.Fault != nil:
		return "fault"
	case s.Clear != nil:
		return "clear"
	case s.Snapshot != nil:
		return "snapshot"
	case s.Report != nil:
		return "report"
	case s.Train != nil:
		return "train"
	case s.Unload != nil:
		return "unload"
	case s.Rate != nil:
		return "rate"
	}
	return "caption"
}

// Describe names the step's run with its figures, as the console names a
// run started from a key ("load 8000×1").
func (s Step) Describe() string {
	switch {
	case s.Nodes != nil:
		return fmt.Sprintf("nodes %d", s.Nodes.Count)
	case s.Load != nil:
		return fmt.Sprintf("load %d×%d", s.Load.Pods, s.Load.GPUs)
	case s.Churn != nil:
		return fmt.Sprintf("%s %g/s", s.Churn.Kind(), s.Churn.Rate)
	case s.Fault != nil:
		if s.Fault.Kind == fault.PodExit {
			return fmt.Sprintf("fault pod-exit %d", s.Fault.ExitCode)
		}
		return fmt.Sprintf("fault %s %d", s.Fault.Kind, s.Fault.Nodes)
	case s.Clear != nil:
		return "fault clear"
	case s.Snapshot != nil:
		return "snapshot " + s.Snapshot.Since.String()
	case s.Train != nil:
		return fmt.Sprintf("train %d×%d×%d", s.Train.Jobs, s.Train.PodsPerJob, s.Train.GPUsPerPod)
	case s.Rate != nil:
		return fmt.Sprintf("churn rate → %g/s", *s.Rate)
	}
	return s.Kind()
}

// Until is a fleet condition: every figure given is reached (at least).
type Until struct {
	PodsRunning   *int   `json:"podsRunning,omitempty"`
	NodesReady    *int   `json:"nodesReady,omitempty"`
	NodesFaulted  *int   `json:"nodesFaulted,omitempty"`
	GPUsAllocated *int64 `json:"gpusAllocated,omitempty"`
}

// The file's shape. Durations are written as Go durations (30s, 5m).
type (
	scriptFile struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Description string            `json:"description,omitempty"`
		Steps       []json.RawMessage `json:"steps"`
	}
	stepFile struct {
		Caption  string        `json:"caption"`
		Nodes    *nodesFile    `json:"nodes,omitempty"`
		Load     *loadFile     `json:"load,omitempty"`
		Churn    *churnFile    `json:"churn,omitempty"`
		Fault    *faultFile    `json:"fault,omitempty"`
		Clear    *clearFile    `json:"clear,omitempty"`
		Snapshot *snapshotFile `json:"snapshot,omitempty"`
		Report   *reportFile   `json:"report,omitempty"`
		Train    *trainFile    `json:"train,omitempty"`
		Unload   *struct{}     `json:"unload,omitempty"`
		Rate     *float64      `json:"rate,omitempty"`

		Until   *Until           `json:"until,omitempty"`
		After   *metav1.Duration `json:"after,omitempty"`
		Timeout *metav1.Duration `json:"timeout,omitempty"`
	}
	nodesFile struct {
		Count      int    `json:"count"`
		GPUProfile string `json:"gpuProfile,omitempty"`
	}
	loadFile struct {
		Pods       int              `json:"pods"`
		GPUsPerPod *int             `json:"gpusPerPod,omitempty"`
		Mode       string           `json:"mode,omitempty"`
		Rate       float64          `json:"rate,omitempty"`
		Namespace  string           `json:"namespace,omitempty"`
		Timeout    *metav1.Duration `json:"timeout,omitempty"`
	}
	churnFile struct {
		Rate        float64          `json:"rate"`
		Duration    metav1.Duration  `json:"duration"`
		Lifetime    *metav1.Duration `json:"lifetime,omitempty"`
		GPUsPerPod  *int             `json:"gpusPerPod,omitempty"`
		Namespace   string           `json:"namespace,omitempty"`
		Limited     bool             `json:"limited,omitempty"`
		Concurrency *int             `json:"concurrency,omitempty"`
	}
	faultFile struct {
		Kind      string           `json:"kind"`
		Nodes     *int             `json:"nodes,omitempty"`
		Xid       *int             `json:"xid,omitempty"`
		Random    bool             `json:"random,omitempty"`
		Seed      int64            `json:"seed,omitempty"`
		ExitCode  *int             `json:"exitCode,omitempty"`
		Namespace string           `json:"namespace,omitempty"`
		Delay     *metav1.Duration `json:"delay,omitempty"`
		Jitter    *metav1.Duration `json:"jitter,omitempty"`
	}
	clearFile struct {
		Kinds []fault.Kind `json:"kinds,omitempty"`
	}
	snapshotFile struct {
		Since *metav1.Duration `json:"since,omitempty"`
	}
	reportFile struct {
		Snapshot string `json:"snapshot,omitempty"`
	}
	trainFile struct {
		Jobs       int  `json:"jobs"`
		PodsPerJob *int `json:"podsPerJob,omitempty"`
		GPUsPerPod *int `json:"gpusPerPod,omitempty"`
	}
)

// Load reads a demo script file strictly: every error is one line naming
// the file, the step and the field.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", path, pe.Err)
		}
		return nil, err
	}
	return Parse(path, data)
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Parse reads a demo script; source names it in errors.
func Parse(source string, data []byte) (*Script, error) {
	fail := func(format string, args ...any) (*Script, error) {
		return nil, fmt.Errorf("%s: %s", source, fmt.Sprintf(format, args...))
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return fail("%s", fleet.OneLine(err))
	}
	if head.Kind != Kind || head.APIVersion != APIVersion {
		return fail("apiVersion %q kind %q: a demo script is a %s %s", head.APIVersion, head.Kind, APIVersion, Kind)
	}
	var f scriptFile
	if err := fleet.StrictYAML(data, &f); err != nil {
		return fail("%s", err)
	}
	if n := f.Metadata.Name; !nameRE.MatchString(n) || len(n) > 63 {
		return fail("metadata.name %q: a demo's name is lower-case letters, digits and '-' (at most 63)", n)
	}
	if len(f.Steps) == 0 {
		return fail("steps: a demo has at least one step")
	}
	s := &Script{Name: f.Metadata.Name, Source: source, Description: f.Description}
	churning := false // a rate step needs a churn before it
	for i, raw := range f.Steps {
		step, err := parseStep(raw)
		if err != nil {
			return fail("step %d: %s", i+1, err)
		}
		if step.Churn != nil {
			churning = true
		}
		if step.Rate != nil && !churning {
			return fail("step %d: rate: changes a running churn's rate, and no step before it starts a churn", i+1)
		}
		s.Steps = append(s.Steps, step)
	}
	return s, nil
}

// parseStep reads one step; errors name the field, not the file.
func parseStep(raw json.RawMessage) (Step, error) {
	var f stepFile
	if err := fleet.StrictJSON(raw, &f); err != nil {
		return Step{}, err
	}
	st := Step{Caption: strings.TrimSpace(f.Caption), Rate: f.Rate, Until: f.Until, Timeout: DefaultTimeout}
	if st.Caption == "" || strings.Contains(st.Caption, "\n") {
		return st, errors.New("caption: every step has a caption of one line")
	}
	var err error
	n := 0 // runs named
	field := func(name string, set bool, parse func() error) {
		if !set || err != nil {
			return
		}
		n++
		if e := parse(); e != nil {
			err = fmt.Errorf("%s: %w", name, e)
		}
	}
	field("nodes", f.Nodes != nil, func() (e error) { st.Nodes, e = f.Nodes.options(); return })
	field("load", f.Load != nil, func() (e error) { st.Load, e = f.Load.options(); return })
	field("churn", f.Churn != nil, func() (e error) { st.Churn, e = f.Churn.options(); return })
	field("fault", f.Fault != nil, func() (e error) { st.Fault, e = f.Fault.options(); return })
	field("clear", f.Clear != nil, func() error {
		st.Clear = &runs.ClearOptions{All: len(f.Clear.Kinds) == 0, Kinds: f.Clear.Kinds}
		return st.Clear.Validate()
	})
	field("snapshot", f.Snapshot != nil, func() error {
		o := runs.NewSnapshotOptions()
		if f.Snapshot.Since != nil {
			o.Since = f.Snapshot.Since.Duration
		}
		st.Snapshot = &o
		return o.Validate()
	})
	field("report", f.Report != nil, func() error { st.Report = &runs.ReportOptions{Snapshot: f.Report.Snapshot}; return nil })
	field("train", f.Train != nil, func() (e error) { st.Train, e = f.Train.options(); return })
	field("unload", f.Unload != nil, func() error { st.Unload = &runs.UnloadOptions{}; return nil })
	field("rate", f.Rate != nil, func() error {
		if *f.Rate <= 0 || *f.Rate > 5000 {
			return fmt.Errorf("%g is out of range: allowed are more than 0 and at most 5000 pods/s", *f.Rate)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if n > 1 {
		return st, errors.New("a step runs one thing: nodes, load, churn, rate, fault, clear, snapshot, report, train or unload")
	}
	if f.After != nil {
		if st.After = f.After.Duration; st.After <= 0 {
			return st, fmt.Errorf("after: %s is out of range: more than 0", st.After)
		}
	}
	if f.Timeout != nil {
		if f.Until == nil {
			return st, errors.New("timeout: bounds the wait of until, and this step has none")
		}
		if st.Timeout = f.Timeout.Duration; st.Timeout <= 0 {
			return st, fmt.Errorf("timeout: %s is out of range: more than 0", st.Timeout)
		}
	}
	switch {
	case f.Until != nil && f.After != nil:
		return st, errors.New("until and after: auto mode goes on one way per step (neither: when the step's run ends)")
	case f.Until != nil && f.Until.empty():
		return st, errors.New("until: names no figure (podsRunning, nodesReady, nodesFaulted, gpusAllocated)")
	case n == 0 && f.Until == nil && f.After == nil:
		return st, errors.New("a step without a run (only a caption) needs after or until: how long auto mode shows it")
	}
	return st, nil
}

func (f *nodesFile) options() (*runs.NodesOptions, error) {
	o := runs.NewNodesOptions()
	o.Count = f.Count
	if f.GPUProfile != "" {
		o.GPUProfile = f.GPUProfile
	}
	return &o, o.Validate()
}

func (f *loadFile) options() (*runs.LoadOptions, error) {
	o := runs.NewLoadOptions()
	o.Pods, o.Rate = f.Pods, f.Rate
	setInt(&o.GPUs, f.GPUsPerPod)
	setString(&o.Mode, f.Mode)
	setString(&o.Namespace, f.Namespace)
	setDuration(&o.Timeout, f.Timeout)
	return &o, o.Check()
}

func (f *churnFile) options() (*runs.ChurnOptions, error) {
	o := runs.NewChurnOptions(f.Limited)
	o.Rate, o.Duration = f.Rate, f.Duration.Duration
	setDuration(&o.Lifetime, f.Lifetime)
	setInt(&o.GPUs, f.GPUsPerPod)
	setString(&o.Namespace, f.Namespace)
	if f.Concurrency != nil && !f.Limited {
		return nil, errors.New("concurrency: only a limited churn (limited: true) bounds its requests in flight")
	}
	setInt(&o.Concurrency, f.Concurrency)
	return &o, o.Validate()
}

func (f *faultFile) options() (*runs.FaultOptions, error) {
	if _, err := fault.LookupKind(f.Kind); err != nil {
		return nil, fmt.Errorf("kind: %w", err)
	}
	o := runs.NewFaultOptions(fault.Kind(f.Kind))
	setInt(&o.Nodes, f.Nodes)
	setInt(&o.Xid, f.Xid)
	setInt(&o.ExitCode, f.ExitCode)
	setString(&o.Namespace, f.Namespace)
	setDuration(&o.Delay, f.Delay)
	setDuration(&o.Jitter, f.Jitter)
	o.Random, o.Seed = f.Random, f.Seed
	if o.Kind == fault.PodExit && f.ExitCode == nil {
		return nil, errors.New("exitCode: pod-exit needs the code the containers exit with, 0-255 (NCCL test failure: 3)")
	}
	return &o, o.Validate()
}

func (f *trainFile) options() (*runs.TrainOptions, error) {
	o := runs.NewTrainOptions()
	o.Jobs = f.Jobs
	setInt(&o.PodsPerJob, f.PodsPerJob)
	setInt(&o.GPUsPerPod, f.GPUsPerPod)
	return &o, o.Check()
}

func setInt(to *int, v *int) {
	if v != nil {
		*to = *v
	}
}

func setString(to *string, v string) {
	if v != "" {
		*to = v
	}
}

func setDuration(to *time.Duration, v *metav1.Duration) {
	if v != nil {
		*to = v.Duration
	}
}

func (u *Until) empty() bool {
	return u.PodsRunning == nil && u.NodesReady == nil && u.NodesFaulted == nil && u.GPUsAllocated == nil
}
