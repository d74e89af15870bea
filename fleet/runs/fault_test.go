package runs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
)

// jsonFields marshals v and returns its top-level fields.
func jsonFields(t *testing.T, v any) ([]byte, map[string]any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	return data, got
}

// wantFields checks top-level JSON fields; numbers are float64.
func wantFields(t *testing.T, data []byte, got map[string]any, want map[string]any) {
	t.Helper()
	for key, w := range want {
		if !reflect.DeepEqual(got[key], w) {
			t.Errorf("%s = %#v, want %#v (in %s)", key, got[key], w, data)
		}
	}
}

// The fault's own kind is the spec's (gpu-xid); the run's kind is
// "fault": both are in the JSON, neither hides the other.
func TestFaultResultJSON(t *testing.T) {
	res := FaultResult{
		Run:   Run{ID: "fault-1", Kind: fault.RecordKind, Dir: "results/fault-1", Outcome: Completed},
		Spec:  fault.Spec{Kind: fault.GPUXid, Nodes: 2, Xid: 48},
		Nodes: []string{"gpu-0001", "gpu-0002"},
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "fault-1", "kind": "fault", "dir": "results/fault-1", "outcome": "completed",
		"nodes": []any{"gpu-0001", "gpu-0002"},
	})
	if spec, _ := got["spec"].(map[string]any); spec["kind"] != "gpu-xid" || spec["xid"] != 48.0 {
		t.Errorf("spec %v", got["spec"])
	}
	var back FaultResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "gpu-xid on 2 nodes: gpu-0001, gpu-0002" {
		t.Errorf("summary %q", s)
	}
}

func TestFaultSummary(t *testing.T) {
	var nodes []string
	for i := 0; i < 40; i++ {
		nodes = append(nodes, "kwok-gpu-node-"+string(rune('a'+i%26))+"0")
	}
	long := FaultResult{Spec: fault.Spec{Kind: fault.NVLink}, Nodes: nodes}.Summary()
	if !strings.HasPrefix(long, "nvlink on 40 nodes: kwok-gpu-node-a0, ") || !strings.Contains(long, " … +") || len(long) > 110 {
		t.Errorf("summary of 40 nodes %q (%d chars)", long, len(long))
	}
	from := time.Date(2026, 1, 2, 10, 0, 5, 0, time.Local)
	to := from.Add(30 * time.Second)
	pods := FaultResult{Spec: fault.Spec{Kind: fault.PodExit, ExitCode: 3, Init: true}, Pods: 12, NotBefore: &from, NotAfter: &to}
	if s := pods.Summary(); s != "pod-exit on 12 pods: init containers exit 3 10:00:05–10:00:35" {
		t.Errorf("pod-exit summary %q", s)
	}
}

func TestFaultValidate(t *testing.T) {
	tests := []struct {
		o    FaultOptions
		want string
	}{
		{FaultOptions{fault.Spec{Kind: "meteor"}}, `unknown fault "meteor": allowed are gpu-xid, nvlink, rdma, node-down, pod-exit`},
		{FaultOptions{fault.Spec{Kind: fault.GPUXid}}, "--nodes 0 is out of range: at least 1 node"},
		{FaultOptions{fault.Spec{Kind: fault.GPUXid, Nodes: 1, Xid: 5}}, "--xid 5 is not a known Xid: allowed are 13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120"},
		{FaultOptions{fault.Spec{Kind: fault.NVLink, Nodes: 1, Xid: 48}}, "--xid applies to gpu-xid only, not nvlink"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 256, Namespace: "a"}}, "--exit-code 256 is out of range: allowed are 0-255"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Delay: -2 * time.Second, Namespace: "a"}}, "--delay -2s is out of range: it must be 0 or more"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Jitter: -time.Second, Namespace: "a"}}, "--jitter -1s is out of range: it must be 0 or more"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Delay: 20 * time.Hour, Jitter: 5 * time.Hour, Namespace: "a"}}, "--delay plus --jitter 25h0m0s is out of range: at most 24h0m0s"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3}}, "pod-exit needs --namespace or --selector (or both) to say which pods fail"},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Namespace: "a", Reason: "NCCL failed"}}, `--reason "NCCL failed" is not allowed: one word (CamelCase, like NCCLTestFailed), at most 256 characters`},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Selector: "app in ("}}, `--selector "app in (" is not a label selector`},
		{FaultOptions{fault.Spec{Kind: fault.PodExit, ExitCode: 3, Namespace: "a", Nodes: 2}}, "--nodes, --seed, --xid and --fail-pods apply to node faults, not pod-exit"},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o.Spec, err, tc.want)
		}
	}
	ok := FaultOptions{fault.Spec{Kind: fault.GPUXid, Nodes: 3}}
	if err := ok.Validate(); err != nil || ok.Xid != fault.DefaultXid {
		t.Errorf("gpu-xid without --xid: %v, xid %d", err, ok.Xid)
	}
}

func TestClearResultJSON(t *testing.T) {
	res := ClearResult{
		Run:     Run{ID: "fault-2", Kind: fault.RecordKind, Dir: "results/fault-2", Outcome: Completed},
		Cleared: map[fault.Kind]int{fault.GPUXid: 2, fault.PodExit: 3, fault.NVLink: 0},
		Nodes:   []string{"gpu-0001", "gpu-0002"},
		Pods:    3,
	}
	data, got := jsonFields(t, res)
	wantFields(t, data, got, map[string]any{
		"id": "fault-2", "kind": "fault", "outcome": "completed", "pods": 3.0,
		"cleared": map[string]any{"gpu-xid": 2.0, "pod-exit": 3.0, "nvlink": 0.0},
	})
	var back ClearResult
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if s := res.Summary(); s != "cleared gpu-xid from 2 nodes, pod-exit from 3 pending pods" {
		t.Errorf("summary %q", s)
	}
	if s := (ClearResult{}).Summary(); s != "no faults to clear" {
		t.Errorf("empty summary %q", s)
	}
}

func TestClearValidate(t *testing.T) {
	both := "name the faults to clear (gpu-xid, nvlink, rdma, node-down, pod-exit) or pass --all, not both"
	tests := []struct {
		o    ClearOptions
		want string
	}{
		{ClearOptions{}, both},
		{ClearOptions{All: true, Kinds: []fault.Kind{fault.GPUXid}}, both},
		{ClearOptions{Kinds: []fault.Kind{"meteor"}}, `unknown fault "meteor": allowed are gpu-xid, nvlink, rdma, node-down, pod-exit`},
	}
	for _, tc := range tests {
		if err := tc.o.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, o := range []ClearOptions{{All: true}, {Kinds: []fault.Kind{fault.GPUXid, fault.PodExit}}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestNewFaultOptions(t *testing.T) {
	for kind, want := range map[fault.Kind]fault.Spec{
		fault.GPUXid:   {Kind: fault.GPUXid, Nodes: 1, Xid: fault.DefaultXid},
		fault.NodeDown: {Kind: fault.NodeDown, Nodes: 1},
		fault.PodExit:  {Kind: fault.PodExit},
	} {
		o := NewFaultOptions(kind)
		if o.Spec != want {
			t.Errorf("%s: %+v, want %+v", kind, o.Spec, want)
		}
		if kind != fault.PodExit {
			if err := o.Validate(); err != nil {
				t.Errorf("%s defaults: %v", kind, err)
			}
		}
	}
}
