package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// SiteEntry is one run folder on the index page.
type SiteEntry struct {
	Name    string // folder name
	Kind    string // load, churn, snapshot, bench-load, …
	Outcome string
	Report  string // report.html path relative to the site, when there is one
	Files   []string
}

// BuildSite writes a static site of every run under root into out:
// index.html listing the runs newest first, and each run folder copied
// beside it so that reports and JSON files open from the index. Nothing
// in it is fetched from elsewhere.
func BuildSite(root, out string) (int, error) {
	return BuildSiteWithFindings(root, out, "")
}

// BuildSiteWithFindings is BuildSite with the Markdown file findings
// (docs/findings.md; "" for none) rendered on the index page beside the
// run list. Its links to run folders (../results/NAME[/FILE]) point at
// the folders' copies in the site; links to what the site does not hold
// (other docs, runs not under root) keep only their text.
func BuildSiteWithFindings(root, out, findings string) (int, error) {
	var findingsMD []byte
	if findings != "" {
		var err error
		if findingsMD, err = os.ReadFile(findings); err != nil {
			return 0, fmt.Errorf("reading the findings: %w", err)
		}
	}
	dirs, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", root, err)
	}
	var entries []SiteEntry
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		e, err := siteEntry(root, d.Name())
		if err != nil {
			return 0, err
		}
		if len(e.Files) == 0 {
			continue
		}
		if err := copyDir(filepath.Join(root, d.Name()), filepath.Join(out, d.Name())); err != nil {
			return 0, err
		}
		entries = append(entries, e)
	}
	// Folder names end in their UTC time: newest first.
	sort.Slice(entries, func(i, j int) bool {
		_, a := splitRunName(entries[i].Name)
		_, b := splitRunName(entries[j].Name)
		return a > b
	})
	page := sitePage{Runs: entries}
	if findingsMD != nil {
		held := map[string]string{}
		for _, e := range entries {
			held[e.Name] = mainFile(e)
		}
		page.Findings = template.HTML(markdownHTML(string(findingsMD), func(target string) string {
			return siteLink(target, held)
		}))
	}
	var b strings.Builder
	if err := siteTemplate.Execute(&b, page); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	return len(entries), record.WriteFile(out, "index.html", []byte(inert(b.String())))
}

type sitePage struct {
	Findings template.HTML // rendered and escaped by markdownHTML
	Runs     []SiteEntry
}

// mainFile is the file a link to a run folder opens: a static host
// serves no folder listing, so the folder's report, else its record.
func mainFile(e SiteEntry) string {
	for _, want := range []string{"report.html", "run.json", "bench.json"} {
		for _, f := range e.Files {
			if f == want {
				return f
			}
		}
	}
	return e.Files[0]
}

// siteLink maps a findings link to its href in the site: a run folder
// the site holds (../results/NAME or results/NAME, with or without a file)
// to its copy (a bare folder to its main file), an anchor to itself, an
// http(s) address to itself, and anything else to "" (text only). held
// maps each folder in the site to its main file.
func siteLink(target string, held map[string]string) string {
	switch {
	case strings.HasPrefix(target, "#"):
		return target
	case strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://"):
		return target
	}
	rest, ok := strings.CutPrefix(target, "../results/")
	if !ok {
		if rest, ok = strings.CutPrefix(target, "results/"); !ok {
			return ""
		}
	}
	name, file, _ := strings.Cut(rest, "/")
	main, ok := held[name]
	if !ok || strings.Contains(file, "..") {
		return ""
	}
	if file == "" {
		file = main
	}
	return name + "/" + file
}

// splitRunName splits "bench-load-20261129-170441[-2]" into its kind
// ("bench-load") and time ("20261129-170441[-2]").
func splitRunName(name string) (kind, stamp string) {
	parts := strings.Split(name, "-")
	for i := 0; i+1 < len(parts); i++ {
		if digits(parts[i], 8) && digits(parts[i+1], 6) {
			return strings.Join(parts[:i], "-"), strings.Join(parts[i:], "-")
		}
	}
	return name, ""
}

func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func siteEntry(root, name string) (SiteEntry, error) {
	kind, _ := splitRunName(name)
	e := SiteEntry{Name: name, Kind: kind}
	files, err := os.ReadDir(filepath.Join(root, name))
	if err != nil {
		return e, err
	}
	for _, f := range files {
		if f.IsDir() || strings.HasPrefix(f.Name(), ".") {
			continue
		}
		e.Files = append(e.Files, f.Name())
		if f.Name() == "report.html" {
			e.Report = name + "/report.html"
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, name, "run.json")); err == nil {
		var r record.Record
		if json.Unmarshal(data, &r) == nil && r.Kind != "" {
			e.Kind, e.Outcome = r.Kind, r.Outcome
		}
	}
	return e, nil
}

func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	files, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.IsDir() || strings.HasPrefix(f.Name(), ".") {
			continue
		}
		if err := copyFile(filepath.Join(from, f.Name()), filepath.Join(to, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies through a temporary file and a rename, so the site
// never holds half a file.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := filepath.Join(filepath.Dir(to), "."+filepath.Base(to)+".tmp")
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, to)
}

var siteTemplate = template.Must(template.New("site").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GhostFleet runs</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:{{if .Findings}}1800px{{else}}1000px{{end}};padding:0 16px;color:#1b1f24}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d8dee4;padding:4px 8px;text-align:left;vertical-align:top}
a{color:#0969da}.muted{color:#6e7781}code{background:#f6f8fa;padding:0 3px;border-radius:3px}
pre{background:#f6f8fa;padding:8px;overflow-x:auto}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:32px}
@media (max-width:1100px){.cols{display:block}}
#findings table{margin:8px 0 16px}#findings h1{margin-top:0}#runs td:first-child{white-space:nowrap}
</style></head><body>
<h1>GhostFleet runs</h1>
<p class="muted">A 1,000-node GPU Kubernetes fleet with nobody aboard: every run committed under results/, newest first{{if .Findings}}, beside the findings drawn from them{{end}}.{{if .Findings}} <a href="#findings">Findings</a> · <a href="#runs">Runs</a>{{end}}</p>
{{if .Findings}}<div class="cols"><section id="findings">
{{.Findings}}</section>
<section id="runs"><h2>Runs</h2>
{{end}}<table><tr><th>run</th><th>kind</th><th>outcome</th><th>report</th><th>files</th></tr>
{{range .Runs}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Outcome}}</td>
<td>{{with .Report}}<a href="{{.}}">report</a>{{end}}</td>
<td>{{$n := .Name}}{{range .Files}}<a href="{{$n}}/{{.}}">{{.}}</a> {{end}}</td></tr>
{{end}}</table>{{if .Findings}}</section></div>{{end}}</body></html>
`))
