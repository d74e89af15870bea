package record

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunDirsAreNeverReused(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	a, err := WriteRecord(root, Record{ID: "a", Kind: "load", Started: now})
	if err != nil {
		t.Fatal(err)
	}
	b, err := WriteRecord(root, Record{ID: "b", Kind: "load", Started: now})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Base(a) != "load-20261129-160000" || filepath.Base(b) != "load-20261129-160000-2" {
		t.Fatalf("run folders %s and %s", a, b)
	}
	var got Record
	data, _ := os.ReadFile(filepath.Join(a, "run.json"))
	if err := json.Unmarshal(data, &got); err != nil || got.ID != "a" {
		t.Errorf("first record %s: %v", data, err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(a, ".*.tmp")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestOutcome(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{context.Background(), nil, "completed"},
		{cancelled, context.Canceled, "interrupted"},
		{context.Background(), errors.New("etcd is down"), "failed: etcd is down"},
	}
	for _, tt := range tests {
		if got := Outcome(tt.ctx, tt.err); got != tt.want {
			t.Errorf("Outcome(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestDefaultRoot(t *testing.T) {
	t.Setenv(RootEnv, "")
	t.Setenv("XDG_DATA_HOME", "/data")
	top := t.TempDir()
	deep := filepath.Join(top, "test", "e2e")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "go.mod"), []byte(module+"\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	if got := DefaultRoot(); got != filepath.Join(top, "results") {
		t.Errorf("inside a checkout: %s, want the checkout's results/", got)
	}
	t.Chdir(t.TempDir())
	if got := DefaultRoot(); got != "/data/ghostfleet/results" {
		t.Errorf("outside a checkout: %s, want the per-user folder", got)
	}
	t.Setenv(RootEnv, "/elsewhere")
	if got := DefaultRoot(); got != "/elsewhere" {
		t.Errorf("with $%s: %s", RootEnv, got)
	}
}
