package findings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"trials":[{"profile":"default","r":{"rate":39.4}},{"profile":"tuned","r":{"rate":54.3}}],"n":3}`), &doc)
	for path, want := range map[string]float64{"n": 3, "trials.1.r.rate": 54.3, "trials[profile=default].r.rate": 39.4} {
		if got, err := Lookup(doc, path); err != nil || got != want {
			t.Errorf("%s: got %v %v, want %v", path, got, err, want)
		}
	}
	for path, want := range map[string]string{
		"m":                           `no field "m"`,
		"trials.2":                    `"2" is not an index of a list of 2`,
		"trials[profile=fast].r.rate": "no element of \"trials\" has profile=fast",
		"trials.0.profile":            "default is not a number",
		"n.x":                         `"x" is inside a value`,
		"n[a=b]":                      `"n" is not a list`,
	} {
		if _, err := Lookup(doc, path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", path, err, want)
		}
	}
}

// A row with per divides its figure by another of the same run, scaled.
func TestRowPer(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"pods":400,"cpu":{"s":2},"none":0}`), &doc)
	if got, err := (Row{Path: "cpu.s", Per: "pods", Scale: 1000}).value(doc); err != nil || got != 5 {
		t.Errorf("2 CPU-s over 400 pods: %v %v, want 5 ms", got, err)
	}
	if got, err := (Row{Path: "cpu.s", Per: "pods"}).value(doc); err != nil || got != 0.005 {
		t.Errorf("without scale: %v %v, want 0.005", got, err)
	}
	if got, err := (Row{Path: "pods", Scale: 0.001}).value(doc); err != nil || got != 0.4 {
		t.Errorf("400 pods in thousands: %v %v, want 0.4 (scaled without per too)", got, err)
	}
	if _, err := (Row{Path: "cpu.s", Per: "none"}).value(doc); err == nil || !strings.Contains(err.Error(), "path none is 0") {
		t.Errorf("dividing by 0: %v", err)
	}
	if _, err := (Row{Path: "cpu.s", Per: "nope"}).value(doc); err == nil {
		t.Error("a missing divisor was accepted")
	}
}

// A counted row reads an entry left out of its count as 0, but only
// where the count is there; a row not counted still errs.
func TestRowCounted(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"in":{"Pop":4,"Add":10},"n":2}`), &doc)
	if got, err := (Row{Path: "in.Backoff", Counted: true}).value(doc); err != nil || got != 0 {
		t.Errorf("an entry left out: %v %v, want 0", got, err)
	}
	if got, err := (Row{Path: "in.Pop", Plus: []string{"in.Backoff"}, Per: "n", Counted: true}).value(doc); err != nil || got != 2 {
		t.Errorf("(4 + none) over 2: %v %v, want 2", got, err)
	}
	if _, err := (Row{Path: "out.Backoff", Counted: true}).value(doc); err == nil || !strings.Contains(err.Error(), `no field "out"`) {
		t.Errorf("a count that is not there: %v, want an error naming it", err)
	}
	if _, err := (Row{Path: "in.runs[kind=a]", Counted: true}).value(doc); err == nil {
		t.Error("a selector read as a missing entry (0), not looked up")
	}
	if _, err := (Row{Path: "in.Backoff"}).value(doc); err == nil {
		t.Error("an entry left out was read without counted")
	}
	if _, err := (Row{Path: "in.Pop", Per: "in.Backoff", Counted: true}).value(doc); err == nil {
		t.Error("a divisor left out was read as 0 (counted is for the figure, not its divisor)")
	}
	// A count of objects, one field of each read: an entry left out is
	// 0, a count that is not there errs.
	_ = json.Unmarshal([]byte(`{"attempts":{"scheduled":{"count":200}}}`), &doc)
	if got, err := (Row{Path: "attempts.unschedulable.count", Counted: true}).value(doc); err != nil || got != 0 {
		t.Errorf("an entry object left out: %v %v, want 0", got, err)
	}
	if got, err := (Row{Path: "attempts.scheduled.count", Counted: true}).value(doc); err != nil || got != 200 {
		t.Errorf("an entry object there: %v %v, want 200", got, err)
	}
	if _, err := (Row{Path: "tries.unschedulable.count", Counted: true}).value(doc); err == nil {
		t.Error("an entry of a count that is not there read without an error")
	}
	// A count of numbers that is not there (its object has numbers too)
	// is not an entry left out.
	_ = json.Unmarshal([]byte(`{"verdict":{"maxPending":3}}`), &doc)
	if _, err := (Row{Path: "verdict.activeQueueIncoming.BackoffComplete", Counted: true}).value(doc); err == nil {
		t.Error("a count left out of its object read as 0")
	}
}

// A row with plus adds those figures, with minus takes them, before
// dividing; a missing one is an error.
func TestRowPlus(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"b":[{"n":1},{"n":3},{"n":4}],"all":10,"zero":0}`), &doc)
	if got, err := (Row{Path: "b.1.n", Plus: []string{"b.2.n"}}).value(doc); err != nil || got != 7 {
		t.Errorf("3 + 4: %v %v, want 7", got, err)
	}
	if got, err := (Row{Path: "b.1.n", Plus: []string{"b.2.n"}, Per: "all", Scale: 100}).value(doc); err != nil || got != 70 {
		t.Errorf("(3 + 4) of 10: %v %v, want 70 %%", got, err)
	}
	if got, err := (Row{Path: "all", Minus: []string{"b.1.n", "b.2.n"}}).value(doc); err != nil || got != 3 {
		t.Errorf("10 less 3 and 4: %v %v, want the rest, 3", got, err)
	}
	if _, err := (Row{Path: "all", Minus: []string{"b.3.n"}}).value(doc); err == nil || !strings.Contains(err.Error(), "b.3.n") {
		t.Errorf("taking a missing path: %v", err)
	}
	if _, err := (Row{Path: "b.1.n", Plus: []string{"b.3.n"}}).value(doc); err == nil || !strings.Contains(err.Error(), "b.3.n") {
		t.Errorf("a missing addend: %v", err)
	}
	if got, err := (Row{Path: "all", Per: "b.0.n", PerPlus: []string{"b.2.n"}}).value(doc); err != nil || got != 2 {
		t.Errorf("10 over 1 + 4: %v %v, want 2", got, err)
	}
	if _, err := (Row{Path: "all", Per: "b.0.n", PerPlus: []string{"b.3.n"}}).value(doc); err == nil || !strings.Contains(err.Error(), "b.3.n") {
		t.Errorf("a missing divisor's addend: %v", err)
	}
	if _, err := (Row{Path: "all", Per: "zero", PerPlus: []string{"zero"}}).value(doc); err == nil || !strings.Contains(err.Error(), "path zero + zero is 0") {
		t.Errorf("a divisor summing to 0: %v", err)
	}
	if _, err := (Row{Path: "all", PerPlus: []string{"b.2.n"}}).value(doc); err == nil || !strings.Contains(err.Error(), "without per") {
		t.Errorf("perPlus without per: %v", err)
	}
}

func TestSpread(t *testing.T) {
	if m, s, noisy := Spread([]float64{100, 110, 90}); m != 100 || s != 0.1 || noisy {
		t.Errorf("got %v %v %v", m, s, noisy)
	}
	if m, _, noisy := Spread([]float64{100, 130, 95, 99}); m != 99.5 || !noisy {
		t.Errorf("a run 31 %% off: got median %v noisy %v", m, noisy)
	}
}

func TestGenerateRewritesOnlyBlocks(t *testing.T) {
	root := t.TempDir()
	for i, rate := range []string{"40", "44", "38"} {
		dir := filepath.Join(root, "results", "bench-"+string(rune('a'+i)))
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "bench.json"), []byte(`{"trials":[{"profile":"default","rate":`+rate+`}]}`), 0o644)
	}
	doc := "# F\n\ntext 1\n<!-- findings\nruns:\n- results/bench-a/bench.json\n- results/bench-b/bench.json\n- results/bench-c/bench.json\nrows:\n- label: pods/s\n  path: trials[profile=default].rate\n-->\nstale\n<!-- /findings -->\ntext 2\n"
	out, err := Generate([]byte(doc), root, "docs")
	if err != nil {
		t.Fatal(err)
	}
	want := "| figure | [run 1](../results/bench-a) | [run 2](../results/bench-b) | [run 3](../results/bench-c) | median | spread |\n|---|---|---|---|---|---|\n| pods/s | 40 | 44 | 38 | 40 | 38–44 (within ±10 %) |\n"
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "stale") || !strings.HasSuffix(string(out), "<!-- /findings -->\ntext 2\n") {
		t.Fatalf("got:\n%s\nwant the table:\n%s", out, want)
	}
	again, _ := Generate(out, root, "docs")
	if string(again) != string(out) {
		t.Error("generating twice changed the document")
	}
	bad := strings.Replace(doc, "trials[profile=default].rate", "trials[profile=tuned].rate", 1)
	if _, err := Generate([]byte(bad), root, "docs"); err == nil || !strings.Contains(err.Error(), "findings block 1: row \"pods/s\"") {
		t.Errorf("a missing figure: got %v", err)
	}
	if _, err := Generate([]byte(strings.Replace(doc, "rows:", "rowz:", 1)), root, "docs"); err == nil {
		t.Error("an unknown field in a block was accepted")
	}
}

// The committed findings are exactly what the committed runs give: no
// figure in docs/findings.md, nor in the other documents that carry
// generated tables (`make findings` lists them), is typed by hand or left
// stale.
func TestCommittedFindingsMatchTheRuns(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, name := range []string{"findings.md", "benchmarks.md"} {
		doc, err := os.ReadFile(filepath.Join(root, "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := Generate(doc, root, "docs")
		if err != nil {
			t.Fatalf("docs/%s: %v", name, err)
		}
		if string(out) != string(doc) {
			t.Errorf("docs/%s differs from what its runs give: run `make findings` and commit the result", name)
		}
		if !strings.Contains(string(doc), "<!-- findings") {
			t.Errorf("docs/%s has no generated table", name)
		}
	}
}

func TestCompareBlocksNameTheirColumns(t *testing.T) {
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "results", "b"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "results", "b", "bench.json"), []byte(`{"trials":[{"r":1.5},{"r":3}]}`), 0o644)
	b := Block{Runs: []string{"results/b/bench.json#trials.0", "results/b/bench.json#trials.1"}, Columns: []string{"A", "B"}, Compare: true, Rows: []Row{{Label: "r", Path: "r"}}}
	got, err := b.Table(root, "docs")
	want := "| figure | [A](../results/b) | [B](../results/b) |\n|---|---|---|\n| r | 1.50 | 3 |\n"
	if err != nil || got != want {
		t.Fatalf("got %q %v, want %q", got, err, want)
	}
	b.Columns = []string{"A"}
	if _, err := b.Table(root, "docs"); err == nil || !strings.Contains(err.Error(), "1 columns named for 2 runs") {
		t.Errorf("got %v", err)
	}
}

// A block may add the runs' mean, where parts must add up; only over
// repeated runs.
func TestMeanColumn(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"1", "2", "6"} {
		dir := filepath.Join(root, "results", "r"+v)
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"x":`+v+`}`), 0o644)
	}
	b := Block{Runs: []string{"results/r1/run.json", "results/r2/run.json", "results/r6/run.json"}, Mean: true, Rows: []Row{{Label: "x", Path: "x"}}}
	got, err := b.Table(root, "docs")
	want := "| figure | [run 1](../results/r1) | [run 2](../results/r2) | [run 3](../results/r6) | median | mean | spread |\n|---|---|---|---|---|---|---|\n| x | 1 | 2 | 6 | 2 | 3 | 1–6 **noisy** (a run 200 % from the median) |\n"
	if err != nil || got != want {
		t.Fatalf("got %q %v, want %q", got, err, want)
	}
	b.Compare = true
	if _, err := b.Table(root, "docs"); err == nil || !strings.Contains(err.Error(), "a mean needs repeated runs") {
		t.Errorf("a mean of compared setups: %v", err)
	}
}
