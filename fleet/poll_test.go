package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestPoll(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		ctx     context.Context
		fn      func(calls int) (bool, error)
		wantErr string // "" for success
		calls   int    // at least
	}{
		{"true at once", context.Background(), func(int) (bool, error) { return true, nil }, "", 1},
		{"true on the third call", context.Background(), func(n int) (bool, error) { return n == 3, nil }, "", 3},
		{"error ends it", context.Background(), func(int) (bool, error) { return false, boom }, "boom", 1},
		{"timeout names itself", context.Background(), func(int) (bool, error) { return false, nil }, "timed out after 1.2s", 2},
		{"cancelled", cancelled, func(int) (bool, error) { return false, nil }, context.Canceled.Error(), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := poll(tt.ctx, 1200*time.Millisecond, func() (bool, error) { calls++; return tt.fn(calls) })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if calls < tt.calls {
				t.Errorf("%d calls, want at least %d", calls, tt.calls)
			}
		})
	}
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	var calls atomic.Int64
	n, err := parallel(context.Background(), 1000, 4, progress.Discard, "s", func(_ context.Context, k int) error {
		calls.Add(1)
		if k == 10 {
			return errors.New("no")
		}
		return nil
	})
	if err == nil || err.Error() != "no" {
		t.Fatalf("error %v", err)
	}
	if c := calls.Load(); c >= 1000 || int64(n) != c-1 {
		t.Errorf("%d calls, %d counted done: it must stop early and count only successes", c, n)
	}
	n, err = parallel(context.Background(), 100, 8, progress.Discard, "s", func(context.Context, int) error { return nil })
	if err != nil || n != 100 {
		t.Errorf("parallel = %d, %v; want 100", n, err)
	}
	var events []progress.Event
	_, _ = parallel(context.Background(), 3, 8, func(e progress.Event) { events = append(events, e) }, "s", func(context.Context, int) error { return nil })
	if last := events[len(events)-1]; last.Done != 3 || last.Total != 3 || last.Step != "s" {
		t.Errorf("last progress %+v, want 3/3", last)
	}
}
