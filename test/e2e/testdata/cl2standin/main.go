// Command cl2standin stands in for ClusterLoader2 in the e2e suite, where
// no clusterloader binary can be built: it takes CL2's flags, works on the
// cluster of --kubeconfig as CL2 would (a namespace test-xxxxxx-1 holding
// a Deployment of --nodes GPU pods from the scenario's deployment.yaml,
// next to --testconfig), logs CL2-style step lines, and writes
// CL2-format artifacts from what it measured. With STANDIN_BLOCK set it
// stops inside a step until SIGINT, leaving its namespace, as an
// interrupted CL2 does.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "I%s   4242 standin.go:1] %s\n", time.Now().Format("0102 15:04:05.000000"), fmt.Sprintf(format, a...))
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "E%s   4242 standin.go:1] %s\n", time.Now().Format("0102 15:04:05.000000"), fmt.Sprintf(format, a...))
	os.Exit(4)
}

func main() {
	flags := map[string]string{}
	for _, a := range os.Args[1:] {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[k] = v
	}
	if dir := os.Getenv("STANDIN_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "argv"), []byte(strings.Join(os.Args[1:], "\n")+"\n"), 0o644)
	}
	if os.Getenv("KUBECONFIG") != flags["kubeconfig"] {
		fail("KUBECONFIG=%s but --kubeconfig=%s", os.Getenv("KUBECONFIG"), flags["kubeconfig"])
	}
	nodes, err := strconv.Atoi(flags["nodes"])
	if err != nil || nodes < 1 {
		fail("bad --nodes %q", flags["nodes"])
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", flags["kubeconfig"])
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	prefix := fmt.Sprintf("test-%06d", rand.Intn(1000000))
	logf("AutomanagedNamespacePrefix: %s", prefix)
	ns := prefix + "-1"
	start := time.Now()
	logf("Step %q started", "Create saturation deployments")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		fail("namespace: %v", err)
	}
	// The scenario's own pod template, filled as CL2 fills it, so the
	// suite checks that its pods really land and run on the fake nodes.
	tpl, err := template.ParseFiles(filepath.Join(filepath.Dir(flags["testconfig"]), "deployment.yaml"))
	if err != nil {
		fail("template: %v", err)
	}
	var manifest strings.Builder
	if err := tpl.Execute(&manifest, map[string]any{"Name": "gpu-saturation-0", "Replicas": nodes, "Group": "gf-saturation", "GPUs": 1, "Image": "registry.k8s.io/pause:3.10"}); err != nil {
		fail("template: %v", err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(manifest.String()), &d); err != nil {
		fail("deployment.yaml: %v", err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		fail("deployment: %v", err)
	}
	// pod_startup as CL2 measures it: created → seen running by the
	// watcher (here a 200ms poll; creation times have 1s resolution).
	var ms []float64
	seen := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && !seen[p.Name] {
					seen[p.Name] = true
					ms = append(ms, float64(time.Since(p.CreationTimestamp.Time).Milliseconds()))
				}
			}
			logf("WaitForSaturationDeployments: %d/%d running", len(seen), nodes)
			if len(seen) == nodes {
				break
			}
		}
		if time.Now().After(deadline) {
			fail("pods not running after 5m")
		}
	}
	logf("Step %q ended", "Create saturation deployments")

	if os.Getenv("STANDIN_BLOCK") != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		logf("Step %q started", "Wait for saturation pods")
		os.WriteFile(filepath.Join(os.Getenv("STANDIN_DIR"), "blocking"), nil, 0o644)
		<-sig
		fmt.Fprintln(os.Stderr, "interrupted")
		os.Exit(130)
	}

	sort.Float64s(ms)
	perc := func(q float64) float64 {
		if len(ms) == 0 {
			return 0
		}
		return ms[min(len(ms)-1, int(q*float64(len(ms))))]
	}
	stamp := time.Now().UTC().Format(time.RFC3339)
	write := func(name string, v any) {
		data, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(flags["report-dir"], name), data, 0o644); err != nil {
			fail("%v", err)
		}
	}
	write("PodStartupLatency_SaturationPodStartupLatency_gpu-density_"+stamp+".json", map[string]any{
		"version": "1.0",
		"dataItems": []any{map[string]any{
			"data":   map[string]float64{"Perc50": perc(0.5), "Perc90": perc(0.9), "Perc99": perc(0.99)},
			"unit":   "ms",
			"labels": map[string]string{"Metric": "pod_startup"},
		}},
	})
	rate := float64(len(seen)) / time.Since(start).Seconds()
	write("SchedulingThroughput_gpu-density_"+stamp+".json", map[string]float64{"perc50": rate, "perc90": rate, "perc99": rate, "max": rate})
	junit := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="ClusterLoaderV2" tests="1" failures="0" errors="0" time="%.1f">
  <testcase name="gpu-density overall (%s)" classname="ClusterLoaderV2" time="%.1f"></testcase>
</testsuite>
`, time.Since(start).Seconds(), flags["testconfig"], time.Since(start).Seconds())
	if err := os.WriteFile(filepath.Join(flags["report-dir"], "junit.xml"), []byte(junit), 0o644); err != nil {
		fail("%v", err)
	}
	logf("Step %q started", "Delete saturation deployments")
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		fail("delete: %v", err)
	}
	logf("Step %q ended", "Delete saturation deployments")
}
