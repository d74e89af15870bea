package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// The site shows the findings beside the run index: headings, tables and
// links to the run folders it holds, with every bit of markup written in
// the Markdown shown as text.
func TestBuildSiteShowsFindings(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	if _, err := record.WriteRecord(root, record.Record{ID: "x", Kind: "load", Outcome: "completed", Started: t0}); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "findings.md")
	src := "# Findings\n\nSee [the design](experiment-design.md) and <script>alert(1)</script>.\n\n" +
		"## Experiment A\n\n<!-- findings\nruns:\n- results/load-20261129-160000/run.json\n-->\n" +
		"| figure | [run 1](../results/load-20261129-160000) | [gone](../results/load-20200101-000000) |\n|---|---|---|\n" +
		"| pods/s <b>bold</b> | 39.4 | `<img src=x onerror=alert(1)>` |\n<!-- /findings -->\n\n" +
		"**Verdict: confirmed** — [evil](javascript:alert(1)) and [file](../results/load-20261129-160000/run.json).\n"
	if err := os.WriteFile(md, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSiteWithFindings(root, out, md); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out, "index.html"))
	page := string(data)
	for _, want := range []string{
		`<h2 id="experiment-a">Experiment A</h2>`,
		`<a href="load-20261129-160000/run.json">run 1</a>`, // a static host lists no folder

		`<a href="load-20261129-160000/run.json">file</a>`,
		`<td>39.4</td>`,
		`<strong>Verdict: confirmed</strong>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`pods/s &lt;b&gt;bold&lt;/b&gt;`,
		`<code>&lt;img src=x onerror=alert(1)&gt;</code>`,
		`<td>load-20261129-160000</td>`, // the run index is still there
	} {
		if !strings.Contains(page, want) {
			t.Errorf("site lacks %s:\n%s", want, page)
		}
	}
	for _, bad := range []string{"<script>", "<b>", "<img", "javascript:", "experiment-design.md\"", "load-20200101-000000/", "runs:", `href="load-20261129-160000/"`} {
		if strings.Contains(page, bad) {
			t.Errorf("site holds %q:\n%s", bad, page)
		}
	}

	// Without findings the page is the plain run index.
	plain := t.TempDir()
	if _, err := BuildSite(root, plain); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(plain, "index.html"))
	if strings.Contains(string(data), `id="findings"`) {
		t.Errorf("a site built without findings shows a findings section")
	}
	if _, err := BuildSiteWithFindings(root, t.TempDir(), filepath.Join(root, "missing.md")); err == nil {
		t.Errorf("a missing findings file was not refused")
	}
}

// The committed findings render with their run links resolved: every
// table's column header links a run folder the site holds.
func TestBuildSiteCommittedFindings(t *testing.T) {
	md := filepath.Join("..", "..", "docs", "findings.md")
	root := filepath.Join("..", "..", "results")
	if _, err := os.Stat(md); err != nil {
		t.Skip("no docs/findings.md")
	}
	out := t.TempDir()
	if _, err := BuildSiteWithFindings(root, out, md); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out, "index.html"))
	page := string(data)
	for _, want := range []string{`id="experiment-a"`, `id="experiment-f"`, `<a href="bench-nodes-20261129-164051/bench.json">`} {
		if !strings.Contains(page, want) {
			t.Errorf("site lacks %s", want)
		}
	}
	if strings.Contains(page, "../results/") || strings.Contains(page, "&lt;!--") {
		t.Errorf("site holds an unresolved run link or a generator comment")
	}
}
