//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// consoleStepUsage is #19's console key: u on a console whose fleet runs
// GhostFleet workload pods (TestConsole's after its load of 400 pods). A selector that matches no pod is refused
// in the activity pane and changes nothing; the form's defaults then set
// every workload pod's CPU to 800m through runs.SetUsage, recorded like
// `usage set`, and the pods carry the annotation. (The allocation pane's
// used/requested line needs 40 rows; TestConsole's 36 have no room.)
func consoleStepUsage(t *testing.T, ctx context.Context, x tmux, results string) {
	t.Helper()
	x.keys("u")
	x.waitFor(10*time.Second, "Usage: set the pods' emulated CPU/memory", "ghostfleet.io/workload", "800m")
	x.keys("C-u", "app=nothing-here", "Enter")
	// The activity pane wraps its lines: only words that fit one are looked for.
	x.waitFor(30*time.Second, "✗ usage cpu 800m", "no pods matching")

	usageRuns := func() int {
		got, _ := filepath.Glob(filepath.Join(results, "usage-*", "run.json"))
		return len(got)
	}
	before := usageRuns()
	x.keys("u")
	x.waitFor(10*time.Second, "Usage: set the pods' emulated CPU/memory")
	x.keys("Enter") // every workload pod, 800m
	x.waitFor(time.Minute, "✓ usage cpu 800m")
	// Recorded like `usage set`: a run folder in the console's results folder.
	if usageRuns() != before+1 {
		t.Errorf("usage runs under %s: %d before u, %d after; want one more", results, before, usageRuns())
	}
	cs, err := fleet.Own(consoleCluster).Clientset(true)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "ghostfleet.io/workload"})
	if err != nil {
		t.Fatal(err)
	}
	set := 0
	for _, p := range pods.Items {
		if p.Annotations[fleet.AnnotationUsageCPU] == "800m" {
			set++
		}
	}
	if set == 0 {
		t.Errorf("no workload pod carries %s=800m after u (of %d pods)", fleet.AnnotationUsageCPU, len(pods.Items))
	}
}
