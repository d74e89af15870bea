package fault

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// forEach runs every item though one fails, says which succeeded, and
// returns the first error; a cancelled context hands out no more items.
func TestForEach(t *testing.T) {
	var calls atomic.Int64
	done, err := forEach(context.Background(), 40, func(_ context.Context, i int) error {
		calls.Add(1)
		if i%10 == 3 {
			return errors.New("no")
		}
		return nil
	})
	if err == nil || calls.Load() != 40 {
		t.Fatalf("error %v after %d calls, want an error after all 40", err, calls.Load())
	}
	if slices.Contains([]bool{done[3], done[13], done[23], done[33]}, true) || !done[0] || !done[39] {
		t.Errorf("done %v", done)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls.Store(0)
	if _, err := forEach(ctx, 40, func(context.Context, int) error { calls.Add(1); return nil }); !errors.Is(err, context.Canceled) || calls.Load() != 0 {
		t.Errorf("cancelled: error %v after %d calls", err, calls.Load())
	}
	if _, err := forEach(ctx, 0, func(context.Context, int) error { return nil }); err != nil {
		t.Errorf("nothing to do: %v", err)
	}
}
