package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ghostfleet/ghostfleet/metrics/report"
)

// Kinds of the results Report writes.
const (
	KindReport  = "report"
	KindCompare = "compare"
)

// ReportOptions choose what to render: the snapshot folder Snapshot
// (empty: the newest under the results folder), or with Compare two
// snapshot folders, A and B, side by side.
type ReportOptions struct {
	Snapshot string   `json:"snapshot,omitempty"`
	Compare  []string `json:"compare,omitempty"`
}

// Validate checks that a comparison (Compare not nil) names two
// snapshots and nothing else.
func (o ReportOptions) Validate() error {
	switch {
	case o.Compare != nil && len(o.Compare) != 2:
		return fmt.Errorf("--compare takes two snapshot folders, A and B; got %d", len(o.Compare))
	case len(o.Compare) == 2 && o.Snapshot != "":
		return fmt.Errorf("report takes one snapshot folder (or --compare A B), not both")
	}
	return nil
}

// ReportResult is the HTML report written. Its run is the folder it is
// in: the snapshot's (kind "report"), or the new compare-<time> folder
// (kind "compare").
type ReportResult struct {
	Run
	// File is report.html.
	File string `json:"file"`
	// Compared are snapshots A and B of a comparison.
	Compared []string `json:"compared,omitempty"`
}

// Summary names the report and what it shows.
func (r ReportResult) Summary() string {
	if len(r.Compared) == 2 {
		return fmt.Sprintf("%s in %s: %s vs %s", filepath.Base(r.File), r.ID, filepath.Base(r.Compared[0]), filepath.Base(r.Compared[1]))
	}
	return fmt.Sprintf("%s in %s", filepath.Base(r.File), r.ID)
}

// Report renders a snapshot's report.html, or writes a comparison of two
// snapshots into a new compare-<time> folder. ctx is unused: rendering
// reads and writes local files only.
func Report(_ context.Context, env Env, o ReportOptions) (ReportResult, error) {
	if err := o.Validate(); err != nil {
		return ReportResult{}, err
	}
	if len(o.Compare) == 2 {
		file, err := report.Compare(env.ResultsDir, o.Compare[0], o.Compare[1])
		if err != nil {
			return ReportResult{}, err
		}
		dir := filepath.Dir(file)
		return ReportResult{Run: Run{ID: filepath.Base(dir), Kind: KindCompare, Dir: dir, Outcome: Completed}, File: file, Compared: o.Compare}, nil
	}
	dir := o.Snapshot
	if dir == "" {
		var err error
		if dir, err = report.LatestSnapshot(env.ResultsDir); err != nil {
			return ReportResult{}, err
		}
	}
	if runKind(dir) == KindAB {
		file, err := RenderAB(dir)
		if err != nil {
			return ReportResult{}, err
		}
		return ReportResult{Run: Run{ID: filepath.Base(filepath.Clean(dir)), Kind: KindReport, Dir: dir, Outcome: Completed}, File: file}, nil
	}
	file, err := report.Report(dir)
	if err != nil {
		return ReportResult{}, err
	}
	return ReportResult{Run: Run{ID: filepath.Base(filepath.Clean(dir)), Kind: KindReport, Dir: dir, Outcome: Completed}, File: file}, nil
}

// runKind is the kind of the run recorded in dir/run.json ("" when none).
func runKind(dir string) string {
	var r struct {
		Kind string `json:"kind"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "run.json")); err == nil {
		_ = json.Unmarshal(data, &r)
	}
	return r.Kind
}
