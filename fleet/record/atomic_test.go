package record

import (
	"os"
	"path/filepath"
	"testing"
)

// A file that cannot be put in place leaves neither itself nor its
// temporary file; one that can replaces the old one whole.
func TestWriteFileIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "run.json"), 0o755); err != nil { // the name is taken by a folder
		t.Fatal(err)
	}
	if err := WriteFile(dir, "run.json", []byte("{}")); err == nil {
		t.Fatal("writing over a folder succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, ".run.json.tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary file was left: %v", err)
	}
	if err := WriteFile(dir, "slo.json", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, "slo.json", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "slo.json")); string(data) != "new" {
		t.Errorf("slo.json = %q", data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("folder holds %d entries, want run.json (the folder) and slo.json", len(entries))
	}
}

// CheckRoot creates a missing results folder, and refuses a file.
func TestCheckRoot(t *testing.T) {
	dir := t.TempDir()
	if err := CheckRoot(filepath.Join(dir, "new", "results")); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckRoot(file); err == nil {
		t.Error("a file was taken for a results folder")
	}
	if probes, _ := filepath.Glob(filepath.Join(dir, "new", "results", ".writable-*")); len(probes) > 0 {
		t.Errorf("probe left: %v", probes)
	}
}
