package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// Side is one snapshot's figure for a comparison row.
type Side struct {
	Value   float64 `json:"value"`
	Status  string  `json:"status,omitempty"` // for SLOs
	HasData bool    `json:"hasData"`
}

// CompareRow is one query or SLO in both snapshots.
type CompareRow struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Unit  string  `json:"unit"`
	A     Side    `json:"a"`
	B     Side    `json:"b"`
	Delta float64 `json:"delta"` // B − A
	Ratio float64 `json:"ratio"` // B / A (0 when A is 0 or missing)
}

// Comparison is compare.json.
type Comparison struct {
	A       string       `json:"a"`
	B       string       `json:"b"`
	RunA    SnapshotRun  `json:"runA"`
	RunB    SnapshotRun  `json:"runB"`
	SLOs    []CompareRow `json:"slos"`
	Queries []CompareRow `json:"queries"`
}

// worst is the highest point of any series of a query (what SLOs judge).
func worst(qs QuerySeries) Side {
	var s Side
	for _, series := range qs.Series {
		for _, p := range series.Points {
			if !s.HasData || p[1] > s.Value {
				s.Value, s.HasData = p[1], true
			}
		}
	}
	return s
}

func row(id, title, unit string, a, b Side) CompareRow {
	r := CompareRow{ID: id, Title: title, Unit: unit, A: a, B: b}
	if a.HasData && b.HasData {
		r.Delta = b.Value - a.Value
		if a.Value != 0 {
			r.Ratio = b.Value / a.Value
		}
	}
	return r
}

// Compare writes a new folder <root>/compare-<time>/ with compare.json and
// report.html: each SLO and each catalog query's worst value in snapshot
// A and in B, side by side, with B − A and B / A.
func Compare(root, a, b string) (string, error) {
	c, err := CompareSnapshots(a, b)
	if err != nil {
		return "", err
	}
	dir, err := record.NewRunDir(root, "compare", time.Now())
	if err != nil {
		return "", err
	}
	var buf strings.Builder
	err = compareTemplate.Execute(&buf, c)
	if err == nil {
		err = record.WriteJSON(dir, "compare.json", c)
	}
	if err == nil {
		err = record.WriteFile(dir, "report.html", []byte(inert(buf.String())))
	}
	if err != nil {
		_ = os.RemoveAll(dir) // no half-made comparison
		return "", err
	}
	return filepath.Join(dir, "report.html"), nil
}

// CompareSnapshots sets each SLO and catalog query's worst value in
// snapshot folder a beside b's.
func CompareSnapshots(a, b string) (Comparison, error) {
	runA, msA, vsA, err := LoadSnapshot(a)
	if err != nil {
		return Comparison{}, err
	}
	runB, msB, vsB, err := LoadSnapshot(b)
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{A: a, B: b, RunA: runA, RunB: runB}
	verdictB := map[string]Verdict{}
	for _, v := range vsB {
		verdictB[v.ID] = v
	}
	for _, va := range vsA {
		vb := verdictB[va.ID]
		c.SLOs = append(c.SLOs, row(va.ID, va.Description, fmt.Sprintf("≤ %g", va.Threshold),
			Side{Value: va.Value, Status: va.Status, HasData: va.Status != StatusNoData},
			Side{Value: vb.Value, Status: vb.Status, HasData: vb.Status != "" && vb.Status != StatusNoData}))
	}
	seriesB := map[string]QuerySeries{}
	for _, q := range msB {
		seriesB[q.ID] = q
	}
	for _, qa := range msA {
		c.Queries = append(c.Queries, row(qa.ID, qa.Title, qa.Unit, worst(qa), worst(seriesB[qa.ID])))
	}
	return c, nil
}

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"num": func(s Side) string {
		if !s.HasData {
			return "no data"
		}
		return fmt.Sprintf("%.4g", s.Value)
	},
	"delta": func(r CompareRow) string {
		if !r.A.HasData || !r.B.HasData {
			return ""
		}
		if r.Ratio == 0 {
			return fmt.Sprintf("%+.4g", r.Delta)
		}
		return fmt.Sprintf("%+.4g (%.2f×)", r.Delta, r.Ratio)
	},
	"base": filepath.Base,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GhostFleet — {{base .A}} vs {{base .B}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1b1f24}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border-bottom:1px solid #d8dee4;padding:4px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.pass{color:#1a7f37}.fail{color:#cf222e}
</style></head><body>
<h1>{{base .A}} (A) vs {{base .B}} (B)</h1>
<p>A: fleet {{.RunA.Fleet.Cluster}}, profile {{.RunA.Fleet.Profile}}, {{.RunA.Fleet.Nodes}} nodes, {{len .RunA.Runs}} runs.
B: fleet {{.RunB.Fleet.Cluster}}, profile {{.RunB.Fleet.Profile}}, {{.RunB.Fleet.Nodes}} nodes, {{len .RunB.Runs}} runs.</p>
<h2>SLOs (worst value)</h2>
<table><tr><th>SLO</th><th>threshold</th><th>A</th><th>B</th><th>B − A</th></tr>
{{range .SLOs}}<tr><td>{{.Title}}</td><td>{{.Unit}}</td>
<td class="n {{.A.Status}}">{{num .A}} {{.A.Status}}</td><td class="n {{.B.Status}}">{{num .B}} {{.B.Status}}</td><td class="n">{{delta .}}</td></tr>
{{end}}</table>
<h2>Queries (highest point of any series)</h2>
<table><tr><th>query</th><th>unit</th><th>A</th><th>B</th><th>B − A (B / A)</th></tr>
{{range .Queries}}<tr><td>{{.Title}}</td><td>{{.Unit}}</td><td class="n">{{num .A}}</td><td class="n">{{num .B}}</td><td class="n">{{delta .}}</td></tr>
{{end}}</table>
</body></html>
`))
