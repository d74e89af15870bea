package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// uPlot is embedded so that a report is one file that fetches nothing.
var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
)

// reportData is what report.html is rendered from.
type reportData struct {
	Title    string
	Run      SnapshotRun
	Verdicts []Verdict
	Metrics  []QuerySeries
	Phases   []chartPhase
	CL2      []cl2Section
	// Alerts are the SLO breaches and recoveries the console saw live
	// in the window (alerts.json of the runs and snapshots in it).
	Alerts []Alert
}

// chartPhase is a run's phase as the charts mark it.
type chartPhase struct {
	Label string  `json:"label"`
	Start float64 `json:"start"` // unix seconds
	End   float64 `json:"end"`
	// Fault phases are drawn as a red mark: a node fault is an instant.
	Fault bool `json:"fault,omitempty"`
}

// LoadSnapshot reads a snapshot folder's three files.
func LoadSnapshot(dir string) (SnapshotRun, []QuerySeries, []Verdict, error) {
	var run SnapshotRun
	var ms []QuerySeries
	var vs []Verdict
	for name, v := range map[string]any{"run.json": &run, "metrics.json": &ms, "slo.json": &vs} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return run, nil, nil, fmt.Errorf("%s is not a snapshot folder: %w (take one with `ghostfleet snapshot`)", dir, err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			return run, nil, nil, fmt.Errorf("%s is corrupt: %w", filepath.Join(dir, name), err)
		}
	}
	if run.Window.End.IsZero() {
		return run, nil, nil, fmt.Errorf("%s is corrupt: it has no window", filepath.Join(dir, "run.json"))
	}
	return run, ms, vs, nil
}

// LatestSnapshot is the newest snapshot folder under root.
func LatestSnapshot(root string) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "snapshot-*"))
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("no snapshot under %s: take one with `ghostfleet snapshot`", root)
	}
	sort.Strings(dirs) // names carry the UTC time
	return dirs[len(dirs)-1], nil
}

// Report renders dir/report.html from the snapshot in dir: a chart per
// catalog query with the runs' phases marked and the SLO threshold drawn,
// the SLO table, the fleet, versions and run parameters. Every value is
// escaped; scripts and styles are inline.
func Report(dir string) (string, error) {
	run, ms, vs, err := LoadSnapshot(dir)
	if err != nil {
		return "", err
	}
	// Phases starts empty, not nil: the charts iterate it, and JSON null
	// (a window with no runs, as a direct-scrape snapshot usually is)
	// stopped every chart from drawing.
	d := reportData{Title: "GhostFleet — " + filepath.Base(dir), Run: run, Verdicts: vs, Metrics: ms, Phases: []chartPhase{}}
	d.CL2 = cl2Sections(run.Runs)
	if d.Alerts, err = AlertsIn(filepath.Dir(filepath.Clean(dir)), run.Window); err != nil {
		return "", err
	}
	for _, r := range run.Runs {
		for _, p := range r.Phases {
			d.Phases = append(d.Phases, chartPhase{Label: r.ID + " " + p.Name, Start: unix(p.Start), End: unix(p.End), Fault: r.Kind == "fault"})
		}
	}
	var b strings.Builder
	if err := reportTemplate.Execute(&b, d); err != nil {
		return "", err
	}
	return filepath.Join(dir, "report.html"), record.WriteFile(dir, "report.html", []byte(inert(b.String())))
}

// cl2Section is a ClusterLoader2 run shown in a report.
type cl2Section struct {
	ID, Outcome string
	Result      CL2Result
}

// cl2Sections reads the cl2 records' results back into CL2Result (the
// records come from run.json, where Result is plain JSON).
func cl2Sections(runs []record.Record) []cl2Section {
	var out []cl2Section
	for _, r := range runs {
		if r.Kind != record.KindCL2 {
			continue
		}
		var res CL2Result
		if data, err := json.Marshal(r.Result); err == nil && json.Unmarshal(data, &res) == nil {
			out = append(out, cl2Section{ID: r.ID, Outcome: r.Outcome, Result: res})
		}
	}
	return out
}

// cl2Seconds shows a CL2 figure in seconds (CL2 reports ms).
func cl2Seconds(v float64, unit string) string { return fmt.Sprintf("%.3f", v*cl2Unit(unit)) }

// cl2Unit is a CL2 unit in seconds.
func cl2Unit(unit string) float64 {
	switch unit {
	case "ms":
		return 1e-3
	case "us", "µs":
		return 1e-6
	}
	return 1
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func paramsText(v any) string {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"css":    func() template.CSS { return template.CSS(uplotCSS) },
	"uplot":  func() template.JS { return template.JS(uplotJS) },
	"params": paramsText,
	"time":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"base":   path.Base,
	"sec":    cl2Seconds,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{css}}</style>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1b1f24;background:#fff}
h1{font-size:22px} h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;width:100%;margin:8px 0}
td,th{border-bottom:1px solid #d8dee4;padding:4px 8px;text-align:left;vertical-align:top}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}.nodata{color:#6e7781}
.chart{margin:18px 0}.chart h3{font-size:15px;margin:0 0 2px}.muted{color:#6e7781;font-size:12px}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px}
</style></head>
<body>
<h1>{{.Title}}</h1>
<p>Fleet <b>{{.Run.Fleet.Cluster}}</b>{{with .Run.Fleet.Profile}}, profile <b>{{.}}</b>{{end}}:
{{.Run.Fleet.Nodes}} nodes, {{.Run.Fleet.GPUs}} GPUs. Window {{time .Run.Window.Start}} to {{time .Run.Window.End}}.
Source: <b class="source">{{or .Run.Source "prometheus"}}</b>{{with .Run.Note}} <span class="muted">— {{.}}</span>{{end}}.
Versions: <code>{{params .Run.Fleet.Versions}}</code></p>
{{with .Run.Unavailable}}<p class="unavailable">Not available on this cluster: {{range $c, $why := .}}<br><b>{{$c}}</b> — {{$why}}{{end}}<br>
<span class="muted">Every query from these components is marked so below; what the apiserver's /metrics and GhostFleet's own watch measure is unaffected.</span></p>{{end}}

<h2>SLOs</h2>
<table><tr><th>SLO</th><th>whose</th><th>threshold</th><th>worst value</th><th>where</th><th>status</th><th>source</th></tr>
{{range .Verdicts}}<tr><td>{{.Description}}{{if .Note}}<br><span class="muted">{{.Note}}</span>{{end}}</td>
<td>{{if eq .Origin "ghostfleet"}}GhostFleet's own target, not an upstream SLO{{else}}{{.Origin}}{{end}}{{if .Definition}}<br><span class="muted" title="{{.Definition}}">sig-scalability {{base .Definition}}</span>{{end}}</td>
<td>{{.Threshold}}</td><td>{{if ne .Status "no data"}}{{printf "%.3g" .Value}}{{end}}</td><td>{{.Where}}</td>
<td class="{{if eq .Status "pass"}}pass{{else if eq .Status "fail"}}fail{{else}}nodata{{end}}">{{if eq .Status "not available"}}not available on this cluster{{else}}{{.Status}}{{end}}</td><td>{{.Source}}{{with .Component}}<br><span class="muted">{{.}}</span>{{end}}</td></tr>
{{end}}</table>

{{if .Alerts}}<h2>Alerts seen live</h2>
<p class="muted">SLO breaches and recoveries, and components down and back (value: seconds down), that the console logged while it watched (alerts.json of the runs in the window).</p>
<table><tr><th>time</th><th>SLO</th><th>scope</th><th>value</th><th>threshold</th><th>event</th><th>during</th></tr>
{{range .Alerts}}<tr><td>{{time .At}}</td><td>{{.Name}}</td><td>{{.Scope}}</td><td>{{printf "%.3g" .Value}}</td><td>{{.Threshold}}</td>
<td class="{{if .Good}}pass{{else}}fail{{end}}">{{.Kind}}</td><td>{{.Run}}</td></tr>
{{end}}</table>{{end}}

<h2>Runs in the window</h2>
{{if .Run.Runs}}<table><tr><th>run</th><th>kind</th><th>started</th><th>ended</th><th>outcome</th></tr>
{{range .Run.Runs}}<tr><td>{{.ID}}</td><td>{{.Kind}}</td><td>{{time .Started}}</td><td>{{time .Ended}}</td><td>{{.Outcome}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No GhostFleet runs overlap this window.</p>{{end}}

{{range .CL2}}<h2>ClusterLoader2 {{.ID}}</h2>
<p>{{.Outcome}}; clusterloader exit {{.Result.ExitCode}}{{with .Result.JUnit}}; junit {{.Tests}} tests, {{.Failures}} failed, {{.Errors}} errors{{end}}.
Report folder: <code>{{.ID}}/{{.Result.ReportDir}}</code></p>
{{if .Result.PodStartupLatency}}<table><tr><th>pod startup latency</th><th>transition</th><th>p50 (s)</th><th>p90 (s)</th><th>p99 (s)</th></tr>
{{range .Result.PodStartupLatency}}<tr><td>{{.Measurement}}</td><td>{{.Metric}}</td><td>{{sec .P50 .Unit}}</td><td>{{sec .P90 .Unit}}</td><td>{{sec .P99 .Unit}}</td></tr>
{{end}}</table>{{end}}
{{range .Result.SchedulingThroughput}}<p>Scheduling throughput (pods/s): p50 {{printf "%.1f" .Perc50}}, p90 {{printf "%.1f" .Perc90}}, p99 {{printf "%.1f" .Perc99}}, max {{printf "%.1f" .Max}}</p>{{end}}
{{if .Result.APIResponsiveness}}<table><tr><th>API call</th><th>scope</th><th>count</th><th>p50 (s)</th><th>p90 (s)</th><th>p99 (s)</th></tr>
{{range .Result.APIResponsiveness}}<tr><td>{{.Verb}} {{.Resource}}{{with .Subresource}}/{{.}}{{end}}</td><td>{{.Scope}}</td><td>{{.Count}}</td><td>{{sec .P50 .Unit}}</td><td>{{sec .P90 .Unit}}</td><td>{{sec .P99 .Unit}}</td></tr>
{{end}}</table>{{end}}
{{with .Result.JUnit}}{{range .Failed}}<p class="fail">failed: {{.Name}}</p><pre>{{.Message}}</pre>{{end}}{{end}}
{{range .Result.Problems}}<p class="muted">unreadable artifact: {{.}}</p>{{end}}
{{end}}

<h2>Control plane</h2>
<p class="muted">Shaded: the runs' phases; red: injected faults. Dashed red: the SLO threshold.</p>
<div id="charts"></div>

<h2>Run parameters</h2>
{{range .Run.Runs}}<h3>{{.ID}}</h3><pre>{{params .Params}}</pre>{{end}}

<script>{{uplot}}</script>
<script>
const METRICS = {{.Metrics}};
const PHASES = {{.Phases}};
const palette = ["#0969da","#bf3989","#1a7f37","#9a6700","#8250df","#cf222e","#0a3069","#57606a"];
function label(l){const k=Object.keys(l||{}).sort();return k.length?k.map(x=>x+"="+l[x]).join(", "):"value";}
function phasePlugin(){return {hooks:{drawClear:[u=>{const c=u.ctx;c.save();
  PHASES.forEach((p,i)=>{const x0=u.valToPos(p.start,"x",true),x1=u.valToPos(p.end,"x",true);
  c.fillStyle=p.fault?"rgba(207,34,46,0.35)":i%2?"rgba(9,105,218,0.08)":"rgba(191,57,137,0.08)";c.fillRect(x0,u.bbox.top,Math.max(p.fault?3:1,x1-x0),u.bbox.height);});
  c.restore();}]}};}
const root=document.getElementById("charts");
METRICS.forEach(q=>{
  const box=document.createElement("div");box.className="chart";
  const h=document.createElement("h3");h.textContent=q.title+" ("+q.unit+")";box.appendChild(h);
  const note=document.createElement("div");note.className="muted";note.textContent=q.promql+(q.component?"  · source: "+q.component:"");box.appendChild(note);
  root.appendChild(box);
  if(q.error){const e=document.createElement("p");e.className="fail";e.textContent="query failed: "+q.error;box.appendChild(e);return;}
  if(q.unavailable){const e=document.createElement("p");e.className="nodata unavailable";e.textContent="not available on this cluster ("+q.unavailable+")";box.appendChild(e);return;}
  if(!q.series.length){const e=document.createElement("p");e.className="nodata";e.textContent="no data in this window";box.appendChild(e);return;}
  const xs=[...new Set(q.series.flatMap(s=>s.points.map(p=>p[0])))].sort((a,b)=>a-b);
  const data=[xs];const series=[{}];
  q.series.slice(0,12).forEach((s,i)=>{const m=new Map(s.points.map(p=>[p[0],p[1]]));
    data.push(xs.map(x=>m.has(x)?m.get(x):null));series.push({label:label(s.labels),stroke:palette[i%palette.length],width:1.5});});
  if(q.slo){data.push(xs.map(()=>q.slo.threshold));series.push({label:"SLO "+q.slo.threshold,stroke:"#cf222e",dash:[6,4],width:1});}
  new uPlot({width:Math.min(1060,root.clientWidth||1060),height:240,series,plugins:[phasePlugin()],scales:{x:{time:true}}},data,box);
});
</script>
</body></html>
`))
