package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ArrivalsVersion is the workload file format's version; a file of
// another version is refused with what this GhostFleet reads.
const ArrivalsVersion = 1

// Limits of a workload file, said in its errors.
const (
	MaxArrivalJobs = 10000
	MaxArrivalAt   = 24 * time.Hour
	MaxJobPods     = 1000
	MaxPodGPUs     = 64
)

// Arrival is one job of a workload file: when it arrives after the
// replay starts, and its size.
type Arrival struct {
	Name       string        `json:"name"`
	At         time.Duration `json:"at"`
	Pods       int           `json:"pods"`
	GPUsPerPod int           `json:"gpusPerPod"`
	// Claim is how its pods ask for GPUs (see ParseClaim); "" as the
	// fleet offers them.
	Claim string `json:"claim,omitempty"`
}

// Arrivals is a workload file: jobs in order of arrival.
type Arrivals struct {
	Version     int       `json:"version"`
	Description string    `json:"description,omitempty"`
	Jobs        []Arrival `json:"jobs"`
}

// Pods is how many pods the jobs have in all; GPUs how many GPUs they
// ask for.
func (a Arrivals) Pods() (pods, gpus int) {
	for _, j := range a.Jobs {
		pods += j.Pods
		gpus += j.Pods * j.GPUsPerPod
	}
	return pods, gpus
}

// Span is when the last job arrives.
func (a Arrivals) Span() time.Duration {
	var d time.Duration
	for _, j := range a.Jobs {
		d = max(d, j.At)
	}
	return d
}

// ReadArrivals reads and checks a workload file (YAML, or JSON, which is
// YAML too). Its errors name the file, line and field, the value and
// what is allowed.
func ReadArrivals(path string) (Arrivals, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Arrivals{}, fmt.Errorf("workload file: %w", err)
	}
	return ParseArrivals(path, data)
}

// ParseArrivals reads a workload file's content; name prefixes errors.
// Every error in the file is reported, up to ten, one per line.
func ParseArrivals(name string, data []byte) (Arrivals, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Arrivals{}, fmt.Errorf("%s: not YAML or JSON: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p := &arrivalParser{file: name}
	a := p.document(&doc)
	if len(p.errs) > 0 {
		if len(p.errs) > 10 {
			p.errs = append(p.errs[:10], fmt.Sprintf("… and %d more", len(p.errs)-10))
		}
		return Arrivals{}, errors.New(strings.Join(p.errs, "\n"))
	}
	slices.SortStableFunc(a.Jobs, func(x, y Arrival) int { return int(x.At - y.At) })
	return a, nil
}

type arrivalParser struct {
	file string
	errs []string
}

func (p *arrivalParser) fail(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("%s:%d: %s: %s", p.file, n.Line, field, fmt.Sprintf(format, args...)))
}

func (p *arrivalParser) document(doc *yaml.Node) Arrivals {
	var a Arrivals
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.errs = append(p.errs, fmt.Sprintf("%s: empty: a workload file is `version: %d` and a list of jobs (ghostfleet workload gen writes one)", p.file, ArrivalsVersion))
		return a
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.fail(root, "top level", "is a %s: it must be a map with version and jobs", kindName(root))
		return a
	}
	var jobs *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			p.fail(k, k.Value, "given twice")
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "version":
			n, err := strconv.Atoi(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode {
				p.fail(v, "version", "%q is not a whole number: this GhostFleet reads version %d", v.Value, ArrivalsVersion)
			} else if n != ArrivalsVersion {
				p.fail(v, "version", "%d is not a version this GhostFleet reads: allowed is %d", n, ArrivalsVersion)
			}
			a.Version = n
		case "description":
			a.Description = v.Value
		case "jobs":
			jobs = v
		default:
			p.fail(k, k.Value, "unknown field: allowed are version, description, jobs")
		}
	}
	if !seen["version"] {
		p.fail(root, "version", "missing: write `version: %d` first", ArrivalsVersion)
	}
	if jobs == nil {
		p.fail(root, "jobs", "missing: a list of jobs, each with at, pods and gpusPerPod")
		return a
	}
	if jobs.Kind != yaml.SequenceNode {
		p.fail(jobs, "jobs", "is a %s: it must be a list of jobs", kindName(jobs))
		return a
	}
	switch n := len(jobs.Content); {
	case n == 0:
		p.fail(jobs, "jobs", "empty: allowed are 1-%d jobs", MaxArrivalJobs)
	case n > MaxArrivalJobs:
		p.fail(jobs, "jobs", "%d jobs: allowed are 1-%d", n, MaxArrivalJobs)
	}
	names := map[string]int{}
	for i, j := range jobs.Content {
		job := p.job(i, j)
		if prev, dup := names[job.Name]; dup && job.Name != "" {
			p.fail(j, fmt.Sprintf("jobs[%d].name", i), "%q is the name of jobs[%d] too: names must differ", job.Name, prev)
		}
		names[job.Name] = i
		a.Jobs = append(a.Jobs, job)
	}
	return a
}

var namePattern = "lower-case letters, digits and '-', at most 40, starting with a letter"

func validJobName(s string) bool {
	if s == "" || len(s) > 40 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func (p *arrivalParser) job(i int, n *yaml.Node) Arrival {
	j := Arrival{Name: fmt.Sprintf("job-%04d", i)}
	at := func(field string) string { return fmt.Sprintf("jobs[%d].%s", i, field) }
	if n.Kind != yaml.MappingNode {
		p.fail(n, fmt.Sprintf("jobs[%d]", i), "is a %s: each job is a map with at, pods and gpusPerPod", kindName(n))
		return j
	}
	seen := map[string]bool{}
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, v := n.Content[k], n.Content[k+1]
		if seen[key.Value] {
			p.fail(key, at(key.Value), "given twice")
			continue
		}
		seen[key.Value] = true
		switch key.Value {
		case "name":
			if !validJobName(v.Value) {
				p.fail(v, at("name"), "%q is not allowed: %s", v.Value, namePattern)
			}
			j.Name = v.Value
		case "at":
			d, err := parseOffset(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode {
				p.fail(v, at("at"), "%q is not an arrival offset: use seconds (12.5) or Go form (90s, 2m)", v.Value)
			} else if d < 0 || d > MaxArrivalAt {
				p.fail(v, at("at"), "%s is out of range: allowed are 0-%s after the replay starts", d, MaxArrivalAt)
			}
			j.At = d
		case "pods":
			j.Pods = p.count(v, at("pods"), 1, MaxJobPods)
		case "gpusPerPod":
			j.GPUsPerPod = p.count(v, at("gpusPerPod"), 1, MaxPodGPUs)
		case "claim":
			if _, err := ParseClaim(v.Value); err != nil {
				p.fail(v, at("claim"), "%s", strings.TrimPrefix(err.Error(), "--claim "))
			}
			j.Claim = v.Value
		default:
			p.fail(key, at(key.Value), "unknown field: allowed are name, at, pods, gpusPerPod, claim")
		}
	}
	for _, f := range []string{"at", "pods", "gpusPerPod"} {
		if !seen[f] {
			p.fail(n, at(f), "missing")
		}
	}
	return j
}

func (p *arrivalParser) count(v *yaml.Node, field string, lo, hi int) int {
	n, err := strconv.Atoi(v.Value)
	switch {
	case err != nil || v.Kind != yaml.ScalarNode:
		p.fail(v, field, "%q is not a whole number: allowed are %d-%d", v.Value, lo, hi)
	case n < lo || n > hi:
		p.fail(v, field, "%d is out of range: allowed are %d-%d", n, lo, hi)
	}
	return n
}

// parseOffset reads seconds (12, 12.5) or a Go duration (90s).
func parseOffset(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > MaxArrivalAt.Seconds()*2 {
			return 0, fmt.Errorf("not a finite offset")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "map"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value (%q)", n.Value)
	}
	return "nothing"
}

// Marshal writes the workload file: one job a line, so a diff of two
// files reads job by job.
func (a Arrivals) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("# GhostFleet workload: jobs that arrive `at` after the replay starts (ghostfleet ab --workload)\n")
	fmt.Fprintf(&b, "version: %d\n", ArrivalsVersion)
	if a.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", strconv.Quote(a.Description))
	}
	b.WriteString("jobs:\n")
	for _, j := range a.Jobs {
		fmt.Fprintf(&b, "- {name: %s, at: %s, pods: %d, gpusPerPod: %d", j.Name, formatOffset(j.At), j.Pods, j.GPUsPerPod)
		if j.Claim != "" {
			fmt.Fprintf(&b, ", claim: %s", strconv.Quote(j.Claim))
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}

func formatOffset(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// WriteArrivals writes the workload file at path.
func WriteArrivals(path string, a Arrivals) error {
	if err := os.WriteFile(path, a.Marshal(), 0o644); err != nil {
		return fmt.Errorf("writing the workload file: %w", err)
	}
	return nil
}

// GenerateOptions make a seeded workload: Jobs jobs whose arrivals are a
// Poisson process of mean gap Gap (the first at 0), each of a pod count
// drawn evenly from Pods, with GPUsPerPod GPUs per pod.
type GenerateOptions struct {
	Seed       uint64        `json:"seed"`
	Jobs       int           `json:"jobs"`
	Pods       []int         `json:"pods"`
	GPUsPerPod int           `json:"gpusPerPod"`
	Gap        time.Duration `json:"gap"`
	Claim      string        `json:"claim,omitempty"`
}

// Check checks the options, each error naming the value and what is
// allowed.
func (o GenerateOptions) Check() error {
	switch {
	case o.Jobs < 1 || o.Jobs > MaxArrivalJobs:
		return fmt.Errorf("--jobs %d is out of range: allowed are 1-%d", o.Jobs, MaxArrivalJobs)
	case len(o.Pods) == 0:
		return fmt.Errorf("--pods is empty: give the pod counts jobs are drawn from, like 1,2,4")
	case o.GPUsPerPod < 1 || o.GPUsPerPod > MaxPodGPUs:
		return fmt.Errorf("--gpus-per-pod %d is out of range: allowed are 1-%d", o.GPUsPerPod, MaxPodGPUs)
	case o.Gap < 0 || o.Gap*time.Duration(o.Jobs) > MaxArrivalAt:
		return fmt.Errorf("--gap %s is out of range: allowed are 0 (all at once) up to %s over the jobs", o.Gap, MaxArrivalAt)
	}
	for _, n := range o.Pods {
		if n < 1 || n > MaxJobPods {
			return fmt.Errorf("--pods %d is out of range: allowed are 1-%d", n, MaxJobPods)
		}
	}
	if _, err := ParseClaim(o.Claim); err != nil {
		return err
	}
	return nil
}

// Generate makes the workload; the same options make the same file.
func Generate(o GenerateOptions) (Arrivals, error) {
	if err := o.Check(); err != nil {
		return Arrivals{}, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x67686f7374666c74)) // "ghostflt"
	pods := make([]string, len(o.Pods))
	for i, n := range o.Pods {
		pods[i] = strconv.Itoa(n)
	}
	a := Arrivals{Version: ArrivalsVersion, Description: fmt.Sprintf("ghostfleet workload gen --seed %d --jobs %d --pods %s --gpus-per-pod %d --gap %s",
		o.Seed, o.Jobs, strings.Join(pods, ","), o.GPUsPerPod, o.Gap)}
	var at time.Duration
	for i := 0; i < o.Jobs; i++ {
		if i > 0 && o.Gap > 0 {
			at += time.Duration(r.ExpFloat64() * float64(o.Gap)).Round(100 * time.Millisecond)
		}
		a.Jobs = append(a.Jobs, Arrival{Name: fmt.Sprintf("job-%04d", i), At: at, Pods: o.Pods[r.IntN(len(o.Pods))], GPUsPerPod: o.GPUsPerPod, Claim: o.Claim})
	}
	return a, nil
}

// TrainArrivals is the workload a train run submits: every job at once.
func TrainArrivals(o TrainOptions) Arrivals {
	a := Arrivals{Version: ArrivalsVersion, Description: fmt.Sprintf("ghostfleet train --jobs %d --pods-per-job %d --gpus-per-pod %d", o.Jobs, o.PodsPerJob, o.GPUsPerPod)}
	for i := 0; i < o.Jobs; i++ {
		a.Jobs = append(a.Jobs, Arrival{Name: fmt.Sprintf("job-%04d", i), Pods: o.PodsPerJob, GPUsPerPod: o.GPUsPerPod, Claim: o.Claim})
	}
	return a
}
