package results

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
