package fleet

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/kwok/pkg/kwok/metrics"
)

// The usage compiles and evaluates in kwok's own metric environment: a
// pod's annotation wins, then kwok's, then the default; a bad value
// typed by hand is kwok's error, not a silent figure.
func TestUsageFollowsThePodsAnnotations(t *testing.T) {
	ctx := context.Background()
	env, err := metrics.NewEnvironment(metrics.EnvironmentConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := LookupGPUProfile(DefaultGPUProfile)
	node := NewNode(p, 0)
	c := &corev1.Container{Name: "main"}
	u := Usage().Spec.Usages[0].Usage
	tests := []struct {
		name        string
		annotations map[string]string
		cpu, memory float64
	}{
		{"default", nil, 0.1, 256 << 20},
		{"ours", map[string]string{AnnotationUsageCPU: "800m", AnnotationUsageMemory: "2Gi"}, 0.8, 2 << 30},
		{"kwok's", map[string]string{kwokAnnotationUsageCPU: "2", kwokAnnotationUsageMemory: "1Gi"}, 2, 1 << 30},
		{"ours over kwok's", map[string]string{AnnotationUsageCPU: "3", kwokAnnotationUsageCPU: "2"}, 3, 256 << 20},
		{"cpu only", map[string]string{AnnotationUsageCPU: "1500m"}, 1.5, 256 << 20},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: tt.annotations,
				ResourceVersion: string(rune('a' + i))}} // kwok caches results by version
			for res, want := range map[string]float64{"cpu": tt.cpu, "memory": tt.memory} {
				ev, err := env.Compile(*u[res].Expression)
				if err != nil {
					t.Fatalf("%s: %v", res, err)
				}
				got, err := ev.EvaluateFloat64(ctx, metrics.Data{Node: node, Pod: pod, Container: c})
				if err != nil || got != want {
					t.Errorf("%s = %v (%v), want %v", res, got, err, want)
				}
			}
		})
	}
	if _, ok := u[ResourceGPU]; !ok {
		t.Error("the usage lost the GPUs the DCGM series derive from")
	}
}

func TestUsageChangeValidate(t *testing.T) {
	tests := []struct {
		name string
		c    UsageChange
		want string // "" for valid; else text the one line must hold
	}{
		{"cpu and memory", UsageChange{Selector: "app=x", CPU: "800m", Memory: "2Gi"}, ""},
		{"namespace only", UsageChange{Namespace: "gf-load", CPU: "2"}, ""},
		{"existence selector", UsageChange{Selector: "ghostfleet.io/workload", Memory: "512Mi"}, ""},
		{"zero", UsageChange{Selector: "app=x", CPU: "0"}, `--cpu "0" is not above zero: usage must be more than 0`},
		{"cpu not a quantity", UsageChange{Selector: "app=x", CPU: "lots"}, `--cpu "lots" is not a quantity: allowed are Kubernetes quantities such as 800m`},
		{"memory not a quantity", UsageChange{Selector: "app=x", Memory: "2 GB"}, `--memory "2 GB" is not a quantity: allowed are Kubernetes quantities such as 512Mi`},
		{"negative", UsageChange{Selector: "app=x", CPU: "-1"}, `--cpu "-1" is not above zero`},
		{"nothing to set", UsageChange{Selector: "app=x"}, "give --cpu"},
		{"no pods named", UsageChange{CPU: "1"}, "--selector"},
		{"selector does not parse", UsageChange{Selector: "app==x,(", CPU: "1"}, `--selector "app==x,(" is not a label selector (allowed: key=value`},
		{"bad namespace", UsageChange{Namespace: "Bad_NS", CPU: "1"}, `--namespace "Bad_NS" is not a namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Validate() = %v, want one line with %q", err, tt.want)
			}
		})
	}
}

func usagePod(ns, name, node string, phase corev1.PodPhase, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// SetUsage annotates the running and pending pods it picks on fake nodes
// and no other; a selector that matches nothing changes nothing.
func TestSetUsage(t *testing.T) {
	ctx := context.Background()
	p, _ := LookupGPUProfile(DefaultGPUProfile)
	fakeNode := NewNode(p, 0)
	realNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-1"}}
	app := map[string]string{"app": "infer"}
	objs := []runtime.Object{fakeNode, realNode,
		usagePod("a", "run-1", fakeNode.Name, corev1.PodRunning, app),
		usagePod("b", "pend-1", "", corev1.PodPending, app),
		usagePod("a", "done-1", fakeNode.Name, corev1.PodSucceeded, app),
		usagePod("a", "real-pod", realNode.Name, corev1.PodRunning, app),
		usagePod("a", "other", fakeNode.Name, corev1.PodRunning, map[string]string{"app": "train"}),
	}
	cs := fake.NewClientset(objs...)

	res, err := SetUsage(ctx, cs, UsageChange{Selector: "app=infer", CPU: "800m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pods != 2 || res.Matched != 2 || strings.Join(res.PodNames, " ") != "a/run-1 b/pend-1" {
		t.Errorf("result %+v, want a/run-1 and b/pend-1", res)
	}
	want := map[string]string{"a/run-1": "800m", "b/pend-1": "800m", "a/done-1": "", "a/real-pod": "", "a/other": ""}
	for key, w := range want {
		ns, name, _ := strings.Cut(key, "/")
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pod.Annotations[AnnotationUsageCPU]; got != w {
			t.Errorf("%s cpu annotation %q, want %q", key, got, w)
		}
		if _, ok := pod.Annotations[AnnotationUsageMemory]; ok {
			t.Errorf("%s got a memory annotation it was not asked for", key)
		}
	}

	for _, c := range []UsageChange{
		{Selector: "app=nothing", CPU: "1"},
		{Namespace: "a", Selector: "app=infer", CPU: "lots"},
		{Namespace: "c", Memory: "1Gi"},
	} {
		before := cs.Actions()
		if _, err := SetUsage(ctx, cs, c, nil); err == nil {
			t.Errorf("%+v: no error", c)
		}
		for _, a := range cs.Actions()[len(before):] {
			if a.GetVerb() == "patch" {
				t.Errorf("%+v: patched %v", c, a)
			}
		}
	}
	_, err = SetUsage(ctx, cs, UsageChange{Selector: "app=nothing", CPU: "1"}, nil)
	if err == nil || !strings.Contains(err.Error(), `no pods matching "app=nothing" in any namespace: nothing changed`) {
		t.Errorf("selector matching nothing: %v", err)
	}
}

func TestParseUsage(t *testing.T) {
	q, err := ParseUsage("--memory", "2Gi")
	if err != nil || q.Cmp(resource.MustParse("2048Mi")) != 0 {
		t.Errorf("ParseUsage(2Gi) = %v, %v", q.String(), err)
	}
}
