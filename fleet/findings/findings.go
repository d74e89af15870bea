// Package findings regenerates the figure tables of docs/findings.md from
// the run folders committed under results/, so that no figure in the
// findings is typed by hand: each table is a block naming its runs and,
// per row, where in each run's JSON the figure is.
//
// A block in the Markdown:
//
//	<!-- findings
//	runs:
//	- results/bench-load-20261130-124227/bench.json
//	- results/bench-load-20261201-010203/bench.json
//	rows:
//	- label: scheduled pods/s, default
//	  path: trials[profile=default].result.scheduleRate
//	-->
//	(the generated table)
//	<!-- /findings -->
//
// Paths are dot-separated keys; a list is indexed by position (trials.0)
// or by the first element whose field has a value (trials[profile=tuned]).
// A row may add others to its figure (plus: a list of paths), take others
// from it (minus: the rest of a whole its parts do not cover), divide it
// by another (per: result.podsScheduled) or by a sum (per and perPlus:
// seconds over several kinds of call), and scale it (scale: 1000 for
// milliseconds). A row with counted: true reads an entry missing from a
// count by kind as 0 (verdict.activeQueueIncoming.BackoffComplete, where
// no pod was counted so; scheduler.train.attempts.unschedulable.count,
// where no attempt failed).
// A run may name a part of its file after a # (bench.json#trials.2: one
// round of a benchmark), which the rows' paths then start from.
// Each row shows every run's value, the median (and, with mean: true, the
// mean) and the spread; a run more than 20 % from the median marks the
// row noisy.
package findings

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Noisy is how far from the median a rerun may land before its row is
// marked noisy (issue #17: ±20 %).
const Noisy = 0.20

// Block is a table's specification, the YAML inside its opening comment.
type Block struct {
	Runs []string `json:"runs"`
	// Columns name the runs' columns (default "run 1", "run 2", …).
	Columns []string `json:"columns,omitempty"`
	// Compare says the runs are different setups side by side, not
	// repeats: no median or spread.
	Compare bool `json:"compare,omitempty"`
	// Mean adds the runs' mean after the median: the figure whose sums
	// hold, where parts add up to a whole (a teardown's stages).
	Mean bool  `json:"mean,omitempty"`
	Rows []Row `json:"rows"`
}

// Row is one figure: its label and its path in each run's JSON. With
// Counted, its path (and plus's and minus's) name entries of a count by
// kind that leaves out the kinds with none (load's
// verdict.activeQueueIncoming, which also leaves out a kind Prometheus
// had too few samples of): an entry that is not there reads 0, where the
// object it would be in is. With
// Plus, the values at those paths are added to it (a histogram's buckets
// from one up), and with Minus taken from it; with Per, the figure is
// then divided by the value at Per, with PerPlus's values added to it
// (CPU seconds per pod; seconds over several kinds' counts); then it is
// multiplied by Scale when set (1000: milliseconds).
type Row struct {
	Label   string   `json:"label"`
	Path    string   `json:"path"`
	Plus    []string `json:"plus,omitempty"`
	Minus   []string `json:"minus,omitempty"`
	Per     string   `json:"per,omitempty"`
	PerPlus []string `json:"perPlus,omitempty"`
	Scale   float64  `json:"scale,omitempty"`
	Counted bool     `json:"counted,omitempty"`
}

// value is the row's figure in doc.
func (r Row) value(doc any) (float64, error) {
	lookup := Lookup
	if r.Counted {
		lookup = lookupCount
	}
	v, err := sum(lookup, doc, r.Path, r.Plus, r.Minus)
	if err != nil {
		return 0, err
	}
	switch {
	case r.Per != "":
		per, err := sum(Lookup, doc, r.Per, r.PerPlus, nil)
		if err != nil {
			return 0, err
		}
		if per == 0 {
			return 0, fmt.Errorf("path %s is 0: nothing to divide by", strings.Join(append([]string{r.Per}, r.PerPlus...), " + "))
		}
		v /= per
	case len(r.PerPlus) > 0:
		return 0, fmt.Errorf("perPlus %v without per: name the divisor's first path in per", r.PerPlus)
	}
	return v * cmp.Or(r.Scale, 1), nil
}

// sum is the value at path in doc, plus those at plus, less those at
// minus, each read by lookup.
func sum(lookup func(any, string) (float64, error), doc any, path string, plus, minus []string) (float64, error) {
	v, err := lookup(doc, path)
	if err != nil {
		return 0, err
	}
	for _, p := range plus {
		more, err := lookup(doc, p)
		if err != nil {
			return 0, err
		}
		v += more
	}
	for _, p := range minus {
		less, err := lookup(doc, p)
		if err != nil {
			return 0, err
		}
		v -= less
	}
	return v, nil
}

var blockRE = regexp.MustCompile(`(?s)<!-- findings\n(.*?)-->\n(.*?)<!-- /findings -->`)

// Generate returns doc with every block's table made again from the runs,
// read relative to root (the repository). docDir is the document's folder
// relative to root, for the links to the run folders.
func Generate(doc []byte, root, docDir string) ([]byte, error) {
	var firstErr error
	n := 0
	out := blockRE.ReplaceAllFunc(doc, func(m []byte) []byte {
		n++
		sub := blockRE.FindSubmatch(m)
		var b Block
		if err := yaml.UnmarshalStrict(sub[1], &b); err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("findings block %d: %w", n, err))
			return m
		}
		table, err := b.Table(root, docDir)
		if err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("findings block %d: %w", n, err))
			return m
		}
		return []byte("<!-- findings\n" + string(sub[1]) + "-->\n" + table + "<!-- /findings -->")
	})
	return out, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Table renders the block: a column per run (linked to its folder), then
// the median, the mean when asked for, and the spread.
func (b Block) Table(root, docDir string) (string, error) {
	if len(b.Runs) == 0 || len(b.Rows) == 0 {
		return "", fmt.Errorf("a block needs runs and rows")
	}
	if len(b.Columns) != 0 && len(b.Columns) != len(b.Runs) {
		return "", fmt.Errorf("%d columns named for %d runs", len(b.Columns), len(b.Runs))
	}
	docs := make([]any, len(b.Runs))
	for i, r := range b.Runs {
		file, within, _ := strings.Cut(r, "#")
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return "", fmt.Errorf("run %s: %w", r, err)
		}
		if err := json.Unmarshal(data, &docs[i]); err != nil {
			return "", fmt.Errorf("run %s: %w", r, err)
		}
		if within != "" {
			if docs[i], err = walk(docs[i], within); err != nil {
				return "", fmt.Errorf("run %s: %w", r, err)
			}
		}
	}
	var w bytes.Buffer
	w.WriteString("| figure |")
	for i, r := range b.Runs {
		file, _, _ := strings.Cut(r, "#")
		rel, err := filepath.Rel(docDir, path.Dir(file))
		if err != nil {
			return "", err
		}
		name := fmt.Sprintf("run %d", i+1)
		if len(b.Columns) != 0 {
			name = b.Columns[i]
		}
		fmt.Fprintf(&w, " [%s](%s) |", name, filepath.ToSlash(rel))
	}
	multi := len(b.Runs) > 1 && !b.Compare
	if b.Mean && !multi {
		return "", fmt.Errorf("mean: true with %d runs, compare: %t: a mean needs repeated runs (more than one, not compare)", len(b.Runs), b.Compare)
	}
	if multi {
		w.WriteString(" median |")
		if b.Mean {
			w.WriteString(" mean |")
		}
		w.WriteString(" spread |")
	}
	w.WriteString("\n|---|")
	w.WriteString(strings.Repeat("---|", len(b.Runs)))
	if multi {
		w.WriteString("---|---|")
		if b.Mean {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
	for _, row := range b.Rows {
		vals := make([]float64, len(docs))
		fmt.Fprintf(&w, "| %s |", row.Label)
		for i, d := range docs {
			v, err := row.value(d)
			if err != nil {
				return "", fmt.Errorf("row %q, run %s: %w", row.Label, b.Runs[i], err)
			}
			vals[i] = v
			fmt.Fprintf(&w, " %s |", Format(v))
		}
		if multi {
			med, spread, noisy := Spread(vals)
			note := fmt.Sprintf("%s–%s", Format(slices.Min(vals)), Format(slices.Max(vals)))
			if noisy {
				note += fmt.Sprintf(" **noisy** (a run %.0f %% from the median)", 100*spread)
			} else {
				note += fmt.Sprintf(" (within ±%.0f %%)", 100*spread)
			}
			fmt.Fprintf(&w, " %s |", Format(med))
			if b.Mean {
				sum := 0.0
				for _, v := range vals {
					sum += v
				}
				fmt.Fprintf(&w, " %s |", Format(sum/float64(len(vals))))
			}
			fmt.Fprintf(&w, " %s |", note)
		}
		w.WriteString("\n")
	}
	return w.String(), nil
}

// Spread is the median, the largest distance of a value from it as a
// share of it, and whether that is more than Noisy.
func Spread(vals []float64) (median, spread float64, noisy bool) {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	for _, v := range s {
		if median != 0 {
			spread = math.Max(spread, math.Abs(v-median)/math.Abs(median))
		} else if v != 0 {
			spread = math.Inf(1)
		}
	}
	return median, spread, spread > Noisy
}

// Format shows a figure with three significant digits at most (whole
// numbers from 100 up).
func Format(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

var selRE = regexp.MustCompile(`^([^\[]+)\[([^=\]]+)=([^\]]*)\]$`)

// Lookup follows path through a decoded JSON document to a number.
func Lookup(doc any, p string) (float64, error) {
	cur, err := walk(doc, p)
	if err != nil {
		return 0, err
	}
	f, ok := cur.(float64)
	if !ok {
		return 0, fmt.Errorf("path %s: %v is not a number", p, cur)
	}
	return f, nil
}

// lookupCount is Lookup for an entry of a count by kind that leaves out
// the kinds with none: 0 when the entry, a plain key, is missing from an
// object that is there below the top; the entry is the path's last key
// (a count of numbers: in.Backoff) or the one before it in a count of
// objects, every entry an object, one of whose fields is read
// (attempts.unschedulable.count).
func lookupCount(doc any, p string) (float64, error) {
	parts := strings.Split(p, ".")
	for n := len(parts) - 1; n >= max(len(parts)-2, 1); n-- {
		if selRE.MatchString(parts[n]) {
			continue
		}
		parent, err := walk(doc, strings.Join(parts[:n], "."))
		m, ok := parent.(map[string]any)
		if err != nil || !ok {
			continue
		}
		if _, there := m[parts[n]]; !there && (n == len(parts)-1 || allObjects(m)) {
			return 0, nil
		}
	}
	return Lookup(doc, p)
}

// allObjects says every value of m is an object (and there is one).
func allObjects(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	}
	return len(m) > 0
}

// walk follows path through a decoded JSON document.
func walk(doc any, p string) (any, error) {
	cur := doc
	for _, part := range strings.Split(p, ".") {
		key, selField, selValue := part, "", ""
		if m := selRE.FindStringSubmatch(part); m != nil {
			key, selField, selValue = m[1], m[2], m[3]
		}
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("path %s: no field %q", p, key)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("path %s: %q is not an index of a list of %d", p, key, len(c))
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("path %s: %q is inside a value, not an object or list", p, key)
		}
		if selField != "" {
			list, ok := cur.([]any)
			if !ok {
				return nil, fmt.Errorf("path %s: %q is not a list to select from", p, key)
			}
			found := false
			for _, e := range list {
				if o, ok := e.(map[string]any); ok && fmt.Sprint(o[selField]) == selValue {
					cur, found = e, true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("path %s: no element of %q has %s=%s", p, key, selField, selValue)
			}
		}
	}
	return cur, nil
}
