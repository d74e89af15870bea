package results

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultRoot is where runs go unless a command says otherwise.
const DefaultRoot = "results"

// NewRunDir creates a new folder <root>/<kind>-<UTC time>, adding -2, -3…
// when a run of the same kind started in the same second. An existing
// folder is never reused.
func NewRunDir(root, kind string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	stamp := now.UTC().Format("20060102-150405")
	dir := filepath.Join(root, kind+"-"+stamp)
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", err
		}
		dir = filepath.Join(root, fmt.Sprintf("%s-%s-%d", kind, stamp, i))
	}
}

// WriteJSON writes v to dir/name through a temporary file and a rename.
func WriteJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(dir, name, append(data, '\n'))
}

// writeFile writes dir/name through a temporary file and a rename, so a
// reader never sees half a file.
func writeFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// Phase is a named time window of a run, for charts and reports.
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Record is what a run leaves behind: what was asked, when each phase
// ran, and what came out. Snapshots and reports read these.
type Record struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Cluster string    `json:"cluster"`
	Profile string    `json:"profile,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Outcome is "completed", "timed out", "interrupted" or "failed: …".
	Outcome string  `json:"outcome"`
	Params  any     `json:"params"`
	Phases  []Phase `json:"phases"`
	Result  any     `json:"result"`
}

// Outcome names how a run that returned err ended: "completed",
// "interrupted" when ctx was cancelled, or "failed: …".
func Outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "completed"
	case ctx.Err() != nil:
		return "interrupted"
	default:
		return "failed: " + err.Error()
	}
}

// WriteRecord writes the record as run.json into a new run folder named
// after its kind and start, and returns the folder. A record without an
// ID is given the folder's name.
func WriteRecord(root string, r Record) (string, error) {
	dir, err := NewRunDir(root, r.Kind, r.Started)
	if err != nil {
		return "", err
	}
	if r.ID == "" {
		r.ID = filepath.Base(dir)
	}
	return dir, WriteJSON(dir, "run.json", r)
}
