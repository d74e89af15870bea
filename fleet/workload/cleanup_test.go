package workload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A DeleteCollection that times out part-way is asked again until one
// succeeds; one that never does is reported with its attempts.
func TestCleanupAsksAgainUntilTheDeleteSucceeds(t *testing.T) {
	defer func(p, q time.Duration) { cleanupPatience, cleanupPause = p, q }(cleanupPatience, cleanupPause)
	cleanupPause = time.Millisecond
	for _, tc := range []struct {
		name     string
		failures int
		patience time.Duration
		wantErr  string
		wantMin  int
	}{
		{name: "third time", failures: 2, patience: time.Minute, wantMin: 3},
		{name: "never", failures: 1 << 30, patience: 50 * time.Millisecond, wantErr: "attempts in 50ms", wantMin: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanupPatience = tc.patience
			cs := fake.NewClientset()
			calls := 0
			cs.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if sel := a.(k8stesting.DeleteCollectionAction).GetListRestrictions().Labels.String(); sel != LabelRun+"=r1" {
					t.Errorf("selector %q", sel)
				}
				if calls <= tc.failures {
					return true, nil, errors.New("the server was unable to return a response in the time allotted")
				}
				return true, nil, nil
			})
			err := Cleanup(context.Background(), cs, "ns", "r1")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if calls < tc.wantMin || tc.wantErr == "" && calls != tc.wantMin {
				t.Errorf("%d calls, want %d", calls, tc.wantMin)
			}
		})
	}
}
