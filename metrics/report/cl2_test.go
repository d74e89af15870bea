package report

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

const fixtureTime = "2026-11-29T18:20:31Z"

// cl2Fixture copies testdata/cl2/<name> into a temporary folder under
// the names CL2 gives its files (TIME becomes an RFC 3339 time).
func cl2Fixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "cl2", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, strings.ReplaceAll(e.Name(), "TIME", fixtureTime)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestParseCL2ReportPassed(t *testing.T) {
	res, err := ParseCL2Report(cl2Fixture(t, "passed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Errorf("problems: %v", res.Problems)
	}
	if len(res.Artifacts) != 6 {
		t.Errorf("artifacts %v, want 6", res.Artifacts)
	}

	// PodStartupLatency: both files, every transition, ordered
	// create→…→pod_startup whatever order CL2 wrote them in.
	var got []string
	byKey := map[string]CL2Latency{}
	for _, l := range res.PodStartupLatency {
		got = append(got, l.Measurement+"/"+l.Metric)
		byKey[l.Measurement+"/"+l.Metric] = l
	}
	want := []string{
		"PodStartupLatency/create_to_schedule", "PodStartupLatency/pod_startup",
		"SaturationPodStartupLatency/create_to_schedule", "SaturationPodStartupLatency/schedule_to_run",
		"SaturationPodStartupLatency/run_to_watch", "SaturationPodStartupLatency/schedule_to_watch",
		"SaturationPodStartupLatency/pod_startup",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pod startup lines\n got %v\nwant %v", got, want)
	}
	if l := byKey["SaturationPodStartupLatency/pod_startup"]; l.P50 != 1843.2 || l.P90 != 3177.9 || l.P99 != 3902.4 || l.Unit != "ms" {
		t.Errorf("saturation pod_startup = %+v", l)
	}
	if l := byKey["PodStartupLatency/pod_startup"]; l.File != "PodStartupLatency_PodStartupLatency_gpu-density_"+fixtureTime+".json" {
		t.Errorf("file = %q", l.File)
	}

	if len(res.SchedulingThroughput) != 1 {
		t.Fatalf("throughput %v", res.SchedulingThroughput)
	}
	if th := res.SchedulingThroughput[0]; th.Perc50 != 48.6 || th.Perc90 != 50.2 || th.Perc99 != 51 || th.Max != 51 {
		t.Errorf("throughput = %+v", th)
	}

	if len(res.APIResponsiveness) != 2 {
		t.Fatalf("api %v", res.APIResponsiveness)
	}
	list := res.APIResponsiveness[0] // slowest first
	if list.Verb != "LIST" || list.Resource != "pods" || list.Scope != "cluster" || list.Count != 37 || list.SlowCount != 2 || list.P99 != 480.5 {
		t.Errorf("slowest call = %+v", list)
	}
	if list.Summary != "APIResponsivenessPrometheus_simple_gpu-density" {
		t.Errorf("summary = %q", list.Summary)
	}
	if b := res.APIResponsiveness[1]; b.Subresource != "binding" || b.Verb != "POST" || b.Count != 4120 {
		t.Errorf("binding = %+v", b)
	}

	if res.JUnit == nil || !res.JUnit.Passed() || res.JUnit.Tests != 3 || res.JUnit.Seconds != 212.4 {
		t.Errorf("junit = %+v", res.JUnit)
	}
}

func TestParseCL2ReportFailed(t *testing.T) {
	res, err := ParseCL2Report(cl2Fixture(t, "failed"))
	if err != nil {
		t.Fatal(err)
	}
	j := res.JUnit
	if j == nil || j.Passed() || j.Failures != 2 || len(j.Failed) != 2 {
		t.Fatalf("junit = %+v", j)
	}
	if !strings.Contains(j.Failed[0].Message, "got 12.004s expected: 5s") || !strings.HasPrefix(j.Failed[0].Name, "gpu-density overall") {
		t.Errorf("first failure = %+v", j.Failed[0])
	}
	if j.Failed[1].Message != "timed out waiting: 310/400 pods running <script>" {
		t.Errorf("message attribute not read: %+v", j.Failed[1])
	}
	// A truncated throughput summary is a problem, not a zero throughput.
	if len(res.SchedulingThroughput) != 0 || len(res.Problems) != 1 || !strings.Contains(res.Problems[0], `no "perc90"`) {
		t.Errorf("throughput %v, problems %v", res.SchedulingThroughput, res.Problems)
	}
	if len(res.PodStartupLatency) != 1 || res.PodStartupLatency[0].P99 != 12004 {
		t.Errorf("pod startup = %+v", res.PodStartupLatency)
	}
}

func TestParseCL2ReportBadFiles(t *testing.T) {
	tests := []struct {
		name, file, content, problem string
	}{
		{"not json", "PodStartupLatency_X_t_" + fixtureTime + ".json", "{", "not CL2 perfdata"},
		{"no data items", "APIResponsivenessPrometheus_t_" + fixtureTime + ".json", `{"version":"v1"}`, "no dataItems"},
		{"throughput of the wrong shape", "SchedulingThroughput_t_" + fixtureTime + ".json", `[1,2]`, "not a SchedulingThroughput summary"},
		{"junit not xml", "junit.xml", "PASS", "not junit XML"},
		{"junit of another root", "junit.xml", "<html></html>", "root element <html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := ParseCL2Report(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], tt.problem) || !strings.HasPrefix(res.Problems[0], tt.file+": ") {
				t.Errorf("problems %q, want one naming %s with %q", res.Problems, tt.file, tt.problem)
			}
			if res.JUnit.Passed() {
				t.Error("an unreadable junit.xml reads as passed")
			}
		})
	}
	if _, err := ParseCL2Report(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("a missing folder is not an error")
	}
}

func TestJUnitSuites(t *testing.T) {
	dir := t.TempDir()
	xml := `<testsuites><testsuite tests="2" failures="0" errors="0" time="1.5">
<testcase name="a"></testcase><testcase name="b"><error message="boom"/></testcase></testsuite></testsuites>`
	if err := os.WriteFile(filepath.Join(dir, "junit.xml"), []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ParseCL2Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The attributes say no errors; the case says otherwise, and wins.
	if j := res.JUnit; j == nil || j.Passed() || j.Errors != 1 || j.Tests != 2 || j.Failed[0].Message != "boom" {
		t.Errorf("junit = %+v", res.JUnit)
	}
}

func TestSummaryStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SchedulingThroughput_density_2026-11-29T18:20:31Z.json", "SchedulingThroughput_density"},
		{"SchedulingThroughput_density_2026-11-29T18:20:31+01:00.json", "SchedulingThroughput_density"},
		{"APIResponsivenessPrometheus_simple_density.json", "APIResponsivenessPrometheus_simple_density"},
	}
	for _, tt := range tests {
		if got := summaryStem(tt.in); got != tt.want {
			t.Errorf("summaryStem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A cl2 run in a snapshot's window gets its own section in the report,
// from run.json as written to disk, every value escaped.
func TestReportShowsCL2Runs(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	res, err := ParseCL2Report(cl2Fixture(t, "failed"))
	if err != nil {
		t.Fatal(err)
	}
	res.ReportDir, res.ExitCode = "report", 1
	evil := `<img src=x onerror=alert(1)>`
	res.Problems = append(res.Problems, evil)
	if _, err := record.WriteRecord(root, record.Record{ID: "cl2-x", Kind: record.KindCL2, Started: t0.Add(time.Minute), Ended: t0.Add(3 * time.Minute),
		Outcome: "failed: clusterloader exited with code 1", Result: res}); err != nil {
		t.Fatal(err)
	}
	dir, _, err := Snapshot(context.Background(), SnapshotOptions{Root: root, Fleet: Fleet{Cluster: "c"}, Start: t0, End: t0.Add(5 * time.Minute), Step: 15 * time.Second, Source: fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	html := renderReport(t, dir)
	for _, want := range []string{
		"<h2>ClusterLoader2 cl2-x</h2>",
		"clusterloader exit 1; junit 3 tests, 2 failed, 0 errors",
		"<td>SaturationPodStartupLatency</td><td>pod_startup</td><td>5.210</td><td>9.870</td><td>12.004</td>",
		"timed out waiting: 310/400 pods running &lt;script&gt;",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(html, evil) || strings.Contains(html, "310/400 pods running <script>") {
		t.Error("a CL2 value reached the page unescaped")
	}
}

// The pod startup SLO counts a cl2 run's latency pods (PodStartupLatency),
// in seconds, and not its saturation pods, which CL2 holds to a looser
// threshold.
func TestPodStartupVerdictReadsCL2(t *testing.T) {
	sat := CL2Latency{Measurement: "SaturationPodStartupLatency", Metric: "pod_startup", Unit: "ms", P99: 12004}
	tests := []struct {
		name   string
		lines  []CL2Latency
		status string
		value  float64
	}{
		{"latency pods over 5s", []CL2Latency{sat, {Measurement: "PodStartupLatency", Metric: "create_to_schedule", Unit: "ms", P99: 9000}, {Measurement: "PodStartupLatency", Metric: "pod_startup", Unit: "ms", P99: 6200}}, StatusFail, 6.2},
		{"latency pods within 5s", []CL2Latency{sat, {Measurement: "PodStartupLatency", Metric: "pod_startup", Unit: "ms", P99: 1020.7}}, StatusPass, 1.0207},
		{"saturation only", []CL2Latency{sat}, StatusNoData, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// As read back from run.json: Result is plain JSON.
			var result any
			data, _ := json.Marshal(CL2Result{PodStartupLatency: tt.lines})
			if err := json.Unmarshal(data, &result); err != nil {
				t.Fatal(err)
			}
			v := podStartupVerdict([]record.Record{{ID: "cl2-a", Kind: record.KindCL2, Result: result}})
			if v.Status != tt.status || math.Abs(v.Value-tt.value) > 1e-9 || (tt.status != StatusNoData && v.Where != "cl2-a") {
				t.Errorf("verdict %+v, want %s %g", v, tt.status, tt.value)
			}
		})
	}
}
