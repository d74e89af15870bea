package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Directions of an A/B metric: which way is better.
const (
	Lower  = "lower"
	Higher = "higher"
)

// A/B metric statuses and the comparison's verdicts.
const (
	ABWorse  = "worse"
	ABBetter = "better"
	ABSame   = "same"
	// ABNoData marks a metric one side has no value for (no job started,
	// no CPU figures): it is not judged.
	ABNoData = "no data"
)

// ABMetric is one figure of an A/B comparison. B is worse than A when it
// is worse by more than Threshold × |A| plus Slack (Slack keeps noise on
// small figures, a second's jitter, from deciding).
type ABMetric struct {
	ID     string  `json:"id"`
	Title  string  `json:"title"`
	Unit   string  `json:"unit"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	HasA   bool    `json:"hasA"`
	HasB   bool    `json:"hasB"`
	Better string  `json:"better"`
	// Judged metrics decide the verdict; the others are shown only.
	Judged bool    `json:"judged"`
	Slack  float64 `json:"slack"`
	Status string  `json:"status"`
}

// JudgeAB sets every metric's Status and returns the verdict: ABWorse
// when any judged metric of B is worse than A's past threshold (a share:
// 0.1 is 10%), ABBetter when none is worse and one is better past it,
// else ABSame.
func JudgeAB(ms []ABMetric, threshold float64) ([]ABMetric, string) {
	out := make([]ABMetric, len(ms))
	worse, better := false, false
	for i, m := range ms {
		m.Status = judge(m, threshold)
		if m.Judged {
			worse = worse || m.Status == ABWorse
			better = better || m.Status == ABBetter
		}
		out[i] = m
	}
	switch {
	case worse:
		return out, ABWorse
	case better:
		return out, ABBetter
	}
	return out, ABSame
}

// ABDeciders names the judged metrics B is worse and better on, with
// both figures: what the verdict rests on ("" when B is the same on all).
func ABDeciders(ms []ABMetric) string {
	var parts []string
	for _, status := range []string{ABWorse, ABBetter} {
		var on []string
		for _, m := range ms {
			if m.Judged && m.Status == status {
				on = append(on, fmt.Sprintf("%s %.4g → %.4g %s", m.ID, m.A, m.B, m.Unit))
			}
		}
		if len(on) > 0 {
			parts = append(parts, status+" on "+strings.Join(on, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func judge(m ABMetric, threshold float64) string {
	if !m.HasA || !m.HasB {
		return ABNoData
	}
	margin := threshold*math.Abs(m.A) + m.Slack
	d := m.B - m.A
	if m.Better == Higher {
		d = -d
	}
	switch {
	case d > margin:
		return ABWorse
	case -d > margin:
		return ABBetter
	}
	return ABSame
}

// ABSide is one side of an A/B run: the profile, the fleet it ran on,
// its replay record and snapshot folders, and its GPU occupancy over
// time (seconds, % of the fleet's GPUs held, GPUs free on partly used
// nodes).
type ABSide struct {
	Label     string       `json:"label"`
	Profile   string       `json:"profile"`
	About     string       `json:"about"`
	Fleet     string       `json:"fleet"`
	Replay    string       `json:"replay"`
	Snapshot  string       `json:"snapshot,omitempty"`
	Outcome   string       `json:"outcome"`
	Occupancy [][3]float64 `json:"-"`
}

// ABJob is one job of the workload and how it started on each side.
type ABJob struct {
	Name       string    `json:"name"`
	At         float64   `json:"atSeconds"`
	Pods       int       `json:"pods"`
	GPUsPerPod int       `json:"gpusPerPod"`
	A          ABJobSide `json:"a"`
	B          ABJobSide `json:"b"`
}

// ABJobSide is how a job started on one side: full, partial, none or not
// created, its pods running at the end, and (full jobs) creation → last
// pod running.
type ABJobSide struct {
	Started      string  `json:"started"`
	Running      int     `json:"running"`
	StartSeconds float64 `json:"startSeconds,omitempty"`
}

// ABReport is an A/B comparison's report.html.
type ABReport struct {
	Jobs      []ABJob     `json:"jobs"`
	State     string      `json:"state"`
	Workload  string      `json:"workload"`
	Threshold float64     `json:"threshold"`
	Verdict   string      `json:"verdict"`
	A         ABSide      `json:"a"`
	B         ABSide      `json:"b"`
	Metrics   []ABMetric  `json:"metrics"`
	Snapshots *Comparison `json:"snapshots,omitempty"`
}

// WriteAB writes report.html into the A/B run's folder dir.
func WriteAB(dir string, r ABReport) error {
	var buf strings.Builder
	if err := abTemplate.Execute(&buf, r); err != nil {
		return err
	}
	return record.WriteFile(dir, "report.html", []byte(inert(buf.String())))
}

// polyline draws series column col of both sides in a w×h box, scaled to
// the larger side's span and peak.
func polyline(a, b [][3]float64, col int, side string) string {
	const w, h = 640.0, 160.0
	var tMax, yMax float64
	for _, s := range [][][3]float64{a, b} {
		for _, p := range s {
			tMax, yMax = math.Max(tMax, p[0]), math.Max(yMax, p[col])
		}
	}
	if tMax == 0 {
		tMax = 1
	}
	if yMax == 0 {
		yMax = 1
	}
	pts := a
	if side == "b" {
		pts = b
	}
	var sb strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&sb, "%.1f,%.1f ", p[0]/tMax*w, h-p[col]/yMax*h)
	}
	return strings.TrimSpace(sb.String())
}

func peak(a, b [][3]float64, col int) float64 {
	var m float64
	for _, s := range [][][3]float64{a, b} {
		for _, p := range s {
			m = math.Max(m, p[col])
		}
	}
	return m
}

var abTemplate = template.Must(template.New("ab").Funcs(template.FuncMap{
	"num": func(v float64, ok bool) string {
		if !ok {
			return "no data"
		}
		return fmt.Sprintf("%.4g", v)
	},
	"delta": func(m ABMetric) string {
		if !m.HasA || !m.HasB {
			return ""
		}
		return fmt.Sprintf("%+.4g", m.B-m.A)
	},
	"pct":      func(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*1000)/10) },
	"line":     polyline,
	"deciders": ABDeciders,
	"jobSide": func(s ABJobSide, pods int) string {
		switch s.Started {
		case "full":
			return fmt.Sprintf("full in %.2f s", s.StartSeconds)
		case "partial":
			return fmt.Sprintf("partial: %d of %d pods running", s.Running, pods)
		case "none":
			return "none (waiting)"
		}
		return s.Started
	},
	"peak": peak,
	"base": func(s string) string { return s[strings.LastIndexByte(s, '/')+1:] },
	"num2": func(s Side) string {
		if !s.HasData {
			return "no data"
		}
		return fmt.Sprintf("%.4g", s.Value)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GhostFleet A/B — {{.A.Profile}} vs {{.B.Profile}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1b1f24}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border-bottom:1px solid #d8dee4;padding:4px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.better{color:#1a7f37}.worse{color:#cf222e}.verdict{font-size:18px;font-weight:600}
svg{background:#f6f8fa;margin:4px 0 0}.a{stroke:#0969da;stroke-width:4}.b{stroke:#bc4c00;stroke-width:2;stroke-dasharray:6 4}polyline{fill:none}
.axis{color:#57606a;font-size:12px;width:640px;display:flex;justify-content:space-between;margin-bottom:12px}
.full{color:#1a7f37}.partial{color:#cf222e;font-weight:600}.none{color:#57606a}
</style></head><body>
<h1>A/B: {{.A.Profile}} (A) vs {{.B.Profile}} (B)</h1>
<p>The same saved state <b>{{.State}}</b> and the same workload <b>{{.Workload}}</b>, replayed once under each profile on a fresh fleet.</p>
<p class="verdict {{.Verdict}}">Verdict: B is {{if eq .Verdict "same"}}neither better nor worse than A{{else}}{{.Verdict}} than A{{end}} past the threshold ({{pct .Threshold}} of A, plus each metric's slack; judged metrics only){{deciders .Metrics}}.</p>
<ul>
<li>A: profile {{.A.Profile}} — {{.A.About}}; fleet {{.A.Fleet}}; replay {{base .A.Replay}} ({{.A.Outcome}}){{if .A.Snapshot}}, snapshot {{base .A.Snapshot}}{{end}}</li>
<li>B: profile {{.B.Profile}} — {{.B.About}}; fleet {{.B.Fleet}}; replay {{base .B.Replay}} ({{.B.Outcome}}){{if .B.Snapshot}}, snapshot {{base .B.Snapshot}}{{end}}</li>
</ul>
<h2>Workload figures</h2>
<table><tr><th>metric</th><th>unit</th><th>better</th><th>A</th><th>B</th><th>B − A</th><th>judged (slack)</th><th>B is</th></tr>
{{range .Metrics}}<tr><td>{{.Title}}</td><td>{{.Unit}}</td><td>{{.Better}}</td><td class="n">{{num .A .HasA}}</td><td class="n">{{num .B .HasB}}</td><td class="n">{{delta .}}</td>
<td>{{if .Judged}}yes ({{.Slack}}){{else}}no{{end}}</td><td class="{{.Status}}">{{.Status}}</td></tr>
{{end}}</table>
<h2>Jobs</h2>
<p>Each job of the workload: when it arrived, its size, and how it started on each side — full (every pod running; creation → last pod running), partial (some pods running: they hold GPUs the job cannot use) or none (waiting whole).</p>
<table><tr><th>job</th><th>arrival</th><th>pods × GPUs</th><th>A ({{.A.Profile}})</th><th>B ({{.B.Profile}})</th></tr>
{{range .Jobs}}<tr><td>{{.Name}}</td><td class="n">{{printf "%.1f" .At}} s</td><td class="n">{{.Pods}} × {{.GPUsPerPod}}</td><td class="{{.A.Started}}">{{jobSide .A .Pods}}</td><td class="{{.B.Started}}">{{jobSide .B .Pods}}</td></tr>
{{end}}</table>
<h2>GPU occupancy over time</h2>
<p>Share of the fleet's GPUs held (the saved state's pods included), every second from the first arrival; <span style="color:#0969da">A, solid</span>, <span style="color:#bc4c00">B, dashed</span> (where the two are equal only B's dashes show over A); 0 to {{printf "%.1f" (peak .A.Occupancy .B.Occupancy 1)}}% (the higher peak).</p>
<svg width="640" height="160" viewBox="0 0 640 160"><polyline class="a" points="{{line .A.Occupancy .B.Occupancy 1 "a"}}"/><polyline class="b" points="{{line .A.Occupancy .B.Occupancy 1 "b"}}"/></svg>
<div class="axis"><span>0 s</span><span>{{printf "%.0f" (peak .A.Occupancy .B.Occupancy 0)}} s</span></div>
<p>Fragmentation: GPUs free on partly used nodes; 0 to {{printf "%.0f" (peak .A.Occupancy .B.Occupancy 2)}} GPUs (the higher peak).</p>
<svg width="640" height="160" viewBox="0 0 640 160"><polyline class="a" points="{{line .A.Occupancy .B.Occupancy 2 "a"}}"/><polyline class="b" points="{{line .A.Occupancy .B.Occupancy 2 "b"}}"/></svg>
<div class="axis"><span>0 s</span><span>{{printf "%.0f" (peak .A.Occupancy .B.Occupancy 0)}} s</span></div>
{{with .Snapshots}}<h2>Control plane (snapshots of each replay's window, as report --compare)</h2>
<table><tr><th>SLO</th><th>threshold</th><th>A</th><th>B</th></tr>
{{range .SLOs}}<tr><td>{{.Title}}</td><td>{{.Unit}}</td><td class="n">{{num2 .A}} {{.A.Status}}</td><td class="n">{{num2 .B}} {{.B.Status}}</td></tr>
{{end}}</table>
<table><tr><th>query (highest point)</th><th>unit</th><th>A</th><th>B</th></tr>
{{range .Queries}}<tr><td>{{.Title}}</td><td>{{.Unit}}</td><td class="n">{{num2 .A}}</td><td class="n">{{num2 .B}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
