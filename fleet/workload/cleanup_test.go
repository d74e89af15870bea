package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A DeleteCollection that times out part-way is asked again until one
// succeeds; one that keeps timing out is reported with its attempts; an
// error that another attempt cannot fix is reported at once.
func TestCleanupAsksAgainOnlyWhenItTimedOut(t *testing.T) {
	defer func(p, q time.Duration) { cleanupPatience, cleanupPause = p, q }(cleanupPatience, cleanupPause)
	cleanupPause = time.Millisecond
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "deletecollection", 1)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	for _, tc := range []struct {
		name      string
		err       error
		failures  int
		patience  time.Duration
		wantErr   string
		wantCalls int // 0: any number
	}{
		{name: "third time", err: timeout, failures: 2, patience: time.Minute, wantCalls: 3},
		{name: "never", err: timeout, failures: 1 << 30, patience: 50 * time.Millisecond, wantErr: "attempts in"},
		{name: "forbidden", err: forbidden, failures: 1 << 30, patience: time.Minute, wantErr: "1 attempts in", wantCalls: 1},
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
					return true, nil, tc.err
				}
				return true, nil, nil
			})
			err := Cleanup(context.Background(), cs, "ns", "r1")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if tc.wantCalls > 0 && calls != tc.wantCalls || tc.wantCalls == 0 && calls < 1 {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
		})
	}
}
