package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CL2Result is what a ClusterLoader2 run's report folder says, read back
// from the files CL2 writes (its own formats, not ours), so that reports
// show CL2's figures beside GhostFleet's.
type CL2Result struct {
	// ReportDir is CL2's --report-dir, relative to the run folder.
	ReportDir string `json:"reportDir"`
	// ExitCode is the clusterloader process's exit code (-1: killed).
	ExitCode int `json:"exitCode"`
	// NamespacePrefix is the prefix of the namespaces CL2 created
	// (test-xxxxxx), from its log; an interrupted run may leave them.
	NamespacePrefix string `json:"namespacePrefix,omitempty"`
	// Artifacts are the files found in the report folder.
	Artifacts            []string        `json:"artifacts"`
	PodStartupLatency    []CL2Latency    `json:"podStartupLatency"`
	SchedulingThroughput []CL2Throughput `json:"schedulingThroughput"`
	APIResponsiveness    []CL2APILatency `json:"apiResponsiveness"`
	JUnit                *CL2JUnit       `json:"junit,omitempty"`
	// Problems are artifacts that could not be read.
	Problems []string `json:"problems,omitempty"`
}

// CL2Latency is one latency line of a perfdata artifact
// (PodStartupLatency_<identifier>_<test>_<time>.json): CL2's percentiles
// in its unit (ms).
type CL2Latency struct {
	File string `json:"file"`
	// Measurement is the measurement's identifier in the test config
	// (e.g. SaturationPodStartupLatency).
	Measurement string `json:"measurement"`
	// Metric is CL2's transition: create_to_schedule, schedule_to_run,
	// run_to_watch, schedule_to_watch or pod_startup.
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
}

// CL2Throughput is a SchedulingThroughput_<test>_<time>.json artifact:
// pods scheduled per second, sampled every 5s by CL2.
type CL2Throughput struct {
	File   string  `json:"file"`
	Perc50 float64 `json:"perc50"`
	Perc90 float64 `json:"perc90"`
	Perc99 float64 `json:"perc99"`
	Max    float64 `json:"max"`
}

// CL2APILatency is one resource/verb/scope line of an
// APIResponsivenessPrometheus artifact.
type CL2APILatency struct {
	File        string  `json:"file"`
	Summary     string  `json:"summary"` // file name without test and time
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Verb        string  `json:"verb"`
	Scope       string  `json:"scope"`
	Count       int     `json:"count"`
	SlowCount   int     `json:"slowCount"`
	Unit        string  `json:"unit"`
	P50         float64 `json:"p50"`
	P90         float64 `json:"p90"`
	P99         float64 `json:"p99"`
}

// CL2JUnit is junit.xml: one test case for the whole test and one per
// step and measurement; CL2 exits non-zero when any failed.
type CL2JUnit struct {
	Tests    int              `json:"tests"`
	Failures int              `json:"failures"`
	Errors   int              `json:"errors"`
	Seconds  float64          `json:"seconds"`
	Failed   []CL2TestFailure `json:"failed,omitempty"`
}

// CL2TestFailure is a failed junit test case.
type CL2TestFailure struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Passed reports whether junit.xml was read and lists no failure.
func (j *CL2JUnit) Passed() bool { return j != nil && j.Failures == 0 && j.Errors == 0 }

// perfData is CL2's perfdata format (pkg/measurement/util PerfData).
type perfData struct {
	Version   string `json:"version"`
	DataItems []struct {
		Data   map[string]float64 `json:"data"`
		Unit   string             `json:"unit"`
		Labels map[string]string  `json:"labels"`
	} `json:"dataItems"`
}

// ParseCL2Report reads the artifacts of a CL2 report folder. A missing or
// unreadable artifact is a Problem, not an error: an interrupted or failed
// run leaves some files and not others, and what is there still counts.
// The error is only for a folder that cannot be listed.
func ParseCL2Report(dir string) (CL2Result, error) {
	res := CL2Result{Artifacts: []string{}, PodStartupLatency: []CL2Latency{}, SchedulingThroughput: []CL2Throughput{}, APIResponsiveness: []CL2APILatency{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return res, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		res.Artifacts = append(res.Artifacts, name)
		path := filepath.Join(dir, name)
		var perr error
		switch {
		case name == "junit.xml":
			res.JUnit, perr = parseJUnit(path)
		case !strings.HasSuffix(name, ".json"):
		case strings.HasPrefix(name, "PodStartupLatency_"):
			var ls []CL2Latency
			ls, perr = parsePodStartup(path)
			res.PodStartupLatency = append(res.PodStartupLatency, ls...)
		case strings.HasPrefix(name, "SchedulingThroughput_"):
			var t CL2Throughput
			t, perr = parseThroughput(path)
			if perr == nil {
				res.SchedulingThroughput = append(res.SchedulingThroughput, t)
			}
		case strings.HasPrefix(name, "APIResponsivenessPrometheus"):
			var ls []CL2APILatency
			ls, perr = parseAPIResponsiveness(path)
			res.APIResponsiveness = append(res.APIResponsiveness, ls...)
		}
		if perr != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %v", name, perr))
		}
	}
	return res, nil
}

// summaryStem is an artifact's name without ".json" and CL2's RFC 3339
// time suffix: "<summary>_<test>".
func summaryStem(file string) string {
	stem := strings.TrimSuffix(file, ".json")
	if i := strings.LastIndex(stem, "_"); i > 0 {
		if _, err := time.Parse(time.RFC3339, stem[i+1:]); err == nil {
			return stem[:i]
		}
	}
	return stem
}

func readPerfData(path string) (perfData, error) {
	var pd perfData
	data, err := os.ReadFile(path)
	if err != nil {
		return pd, err
	}
	if err := json.Unmarshal(data, &pd); err != nil {
		return pd, fmt.Errorf("not CL2 perfdata: %w", err)
	}
	if pd.DataItems == nil {
		return pd, fmt.Errorf("not CL2 perfdata: no dataItems")
	}
	return pd, nil
}

func parsePodStartup(path string) ([]CL2Latency, error) {
	pd, err := readPerfData(path)
	if err != nil {
		return nil, err
	}
	file := filepath.Base(path)
	// PodStartupLatency_<identifier>_<test>: identifiers in CL2's own
	// configs and ours carry no underscore.
	parts := strings.SplitN(summaryStem(file), "_", 3)
	ident := ""
	if len(parts) >= 2 {
		ident = parts[1]
	}
	var out []CL2Latency
	for _, it := range pd.DataItems {
		out = append(out, CL2Latency{File: file, Measurement: ident, Metric: it.Labels["Metric"], Unit: it.Unit,
			P50: it.Data["Perc50"], P90: it.Data["Perc90"], P99: it.Data["Perc99"]})
	}
	// CL2 writes the transitions from a map: sort for stable reports.
	order := map[string]int{"create_to_schedule": 0, "schedule_to_run": 1, "run_to_watch": 2, "schedule_to_watch": 3, "pod_startup": 4}
	sort.SliceStable(out, func(i, j int) bool {
		oi, iok := order[out[i].Metric]
		oj, jok := order[out[j].Metric]
		if iok && jok {
			return oi < oj
		}
		if iok != jok {
			return iok
		}
		return out[i].Metric < out[j].Metric
	})
	return out, nil
}

func parseThroughput(path string) (CL2Throughput, error) {
	t := CL2Throughput{File: filepath.Base(path)}
	data, err := os.ReadFile(path)
	if err != nil {
		return t, err
	}
	var raw map[string]*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return t, fmt.Errorf("not a SchedulingThroughput summary: %w", err)
	}
	for _, k := range []string{"perc50", "perc90", "perc99", "max"} {
		if raw[k] == nil {
			return t, fmt.Errorf("not a SchedulingThroughput summary: no %q", k)
		}
	}
	t.Perc50, t.Perc90, t.Perc99, t.Max = *raw["perc50"], *raw["perc90"], *raw["perc99"], *raw["max"]
	return t, nil
}

func parseAPIResponsiveness(path string) ([]CL2APILatency, error) {
	pd, err := readPerfData(path)
	if err != nil {
		return nil, err
	}
	file := filepath.Base(path)
	var out []CL2APILatency
	for _, it := range pd.DataItems {
		l := CL2APILatency{File: file, Summary: summaryStem(file), Resource: it.Labels["Resource"], Subresource: it.Labels["Subresource"],
			Verb: it.Labels["Verb"], Scope: it.Labels["Scope"], Unit: it.Unit,
			P50: it.Data["Perc50"], P90: it.Data["Perc90"], P99: it.Data["Perc99"]}
		l.Count, _ = strconv.Atoi(it.Labels["Count"])
		l.SlowCount, _ = strconv.Atoi(it.Labels["SlowCount"])
		out = append(out, l)
	}
	// Slowest first: the lines a reader looks for.
	sort.SliceStable(out, func(i, j int) bool { return out[i].P99 > out[j].P99 })
	return out, nil
}

// junit.xml as ginkgo's JUnit reporter writes it for CL2: a testsuite (or
// testsuites around it) of testcases with failure/error children.
type junitCase struct {
	Name    string `xml:"name,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
}

type junitSuite struct {
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

func parseJUnit(path string) (*CL2JUnit, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root struct {
		XMLName xml.Name
		junitSuite
		Suites []junitSuite `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("not junit XML: %w", err)
	}
	suites := root.Suites
	switch root.XMLName.Local {
	case "testsuite":
		suites = []junitSuite{root.junitSuite}
	case "testsuites":
	default:
		return nil, fmt.Errorf("not junit XML: root element <%s>", root.XMLName.Local)
	}
	j := &CL2JUnit{}
	for _, s := range suites {
		j.Tests += max(s.Tests, len(s.Cases))
		j.Seconds += s.Time
		failures, errors := 0, 0
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				failures++
				j.Failed = append(j.Failed, CL2TestFailure{Name: c.Name, Message: firstNonEmpty(c.Failure.Message, c.Failure.Text)})
			case c.Error != nil:
				errors++
				j.Failed = append(j.Failed, CL2TestFailure{Name: c.Name, Message: firstNonEmpty(c.Error.Message, c.Error.Text)})
			}
		}
		// When the attributes and the cases disagree, take the worse: a
		// failure must never be read as a pass.
		j.Failures += max(s.Failures, failures)
		j.Errors += max(s.Errors, errors)
	}
	return j, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
