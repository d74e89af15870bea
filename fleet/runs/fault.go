package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/fault"
)

// FaultOptions ask for one fault (see fault.Spec): a node fault (Kind
// gpu-xid, nvlink, rdma or node-down; Nodes, and Seed with Random) or
// pod-exit (ExitCode, Reason, Message, Container, Init, Delay, Jitter,
// Namespace and/or Selector).
type FaultOptions struct {
	fault.Spec
}

// NewFaultOptions are a fault's defaults, the same for the flags and the
// console's form: a node fault on 1 node, chosen by name (gpu-xid: Xid
// 79); pod-exit has none (its exit code and pods must be given).
func NewFaultOptions(kind fault.Kind) FaultOptions {
	o := FaultOptions{fault.Spec{Kind: kind}}
	if info, err := fault.LookupKind(string(kind)); err == nil && info.Scope == "nodes" {
		o.Nodes = 1
	}
	if kind == fault.GPUXid {
		o.Xid = fault.DefaultXid
	}
	return o
}

// Validate checks the fault without the cluster, each error naming the
// value and what is allowed; it fills in gpu-xid's default Xid.
func (o *FaultOptions) Validate() error { return o.Spec.Validate() }

// FaultResult is what a fault marked, and its run (kind "fault").
type FaultResult struct {
	Run
	// Spec is the fault applied (its kind is the fault's: gpu-xid, …).
	Spec fault.Spec `json:"spec"`
	// Nodes are the nodes a node fault marked, sorted.
	Nodes []string `json:"nodes,omitempty"`
	// Pods is how many pods pod-exit marked; PodNames the first ones
	// (namespace/name).
	Pods     int      `json:"pods,omitempty"`
	PodNames []string `json:"podNames,omitempty"`
	// NotBefore and NotAfter bound when pod-exit's failures fire.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`
}

// Summary is the fault in one line: which nodes, or how many pods fail
// how and when.
func (r FaultResult) Summary() string {
	if r.Spec.Kind == fault.PodExit {
		what := "containers"
		if r.Spec.Init {
			what = "init containers"
		}
		s := fmt.Sprintf("pod-exit on %d pods: %s exit %d", r.Pods, what, r.Spec.ExitCode)
		if r.NotBefore != nil && r.NotAfter != nil {
			s += fmt.Sprintf(" %s–%s", r.NotBefore.Local().Format(time.TimeOnly), r.NotAfter.Local().Format(time.TimeOnly))
		}
		return s
	}
	return fmt.Sprintf("%s on %d nodes: %s", r.Spec.Kind, len(r.Nodes), nameList(r.Nodes, 60))
}

// nameList joins names, cut to about width characters with a count of
// the rest.
func nameList(names []string, width int) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 && b.Len()+len(n) > width {
			fmt.Fprintf(&b, " … +%d", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

// Fault applies the fault and records it. A fault refused before it
// changed anything returns the error and no run; one that failed or was
// interrupted part way is recorded with what it marked, and Left says
// how to undo that (an interrupted fault returns a nil error).
func Fault(ctx context.Context, env Env, o FaultOptions) (FaultResult, error) {
	if err := o.Validate(); err != nil {
		return FaultResult{}, err
	}
	s, c, err := openFault(ctx, env, "inject the "+string(o.Spec.Kind)+" fault", true)
	if err != nil {
		return FaultResult{}, err
	}
	rec, ferr := fault.Apply(ctx, c, o.Spec)
	if rec.Kind == "" {
		return FaultResult{}, ferr // refused: nothing was changed
	}
	res, _ := rec.Result.(fault.Result)
	out := FaultResult{Spec: o.Spec, Nodes: res.Nodes, Pods: res.Pods, PodNames: res.PodNames, NotBefore: res.NotBefore, NotAfter: res.NotAfter}
	out.Run, err = s.write(rec)
	if err != nil {
		return out, joinErr(ferr, err)
	}
	if ferr != nil && ctx.Err() == nil {
		return out, ferr // the error says what was done and how to undo it
	}
	if out.Outcome != Completed {
		switch {
		case len(out.Nodes) > 0:
			out.Left = fmt.Sprintf("%s marked on %d nodes; `ghostfleet fault clear %s` removes it", o.Kind, len(out.Nodes), o.Kind)
		case out.Pods > 0:
			out.Left = fmt.Sprintf("pod-exit marked on %d pods; `ghostfleet fault clear pod-exit` cancels those that have not failed yet", out.Pods)
		}
	}
	return out, nil
}

// ClearOptions name the faults to clear: every kind (All) or Kinds.
type ClearOptions struct {
	All   bool         `json:"all,omitempty"`
	Kinds []fault.Kind `json:"kinds,omitempty"`
}

// Validate checks that either All or some known Kinds are asked for.
func (o ClearOptions) Validate() error {
	if o.All == (len(o.Kinds) > 0) {
		return fmt.Errorf("name the faults to clear (%s) or pass --all, not both", strings.Join(fault.KindNames(), ", "))
	}
	for _, k := range o.Kinds {
		if _, err := fault.LookupKind(string(k)); err != nil {
			return err
		}
	}
	return nil
}

// ClearResult is what a clear removed, and its run (kind "fault").
type ClearResult struct {
	Run
	// Cleared counts what was removed by kind: nodes for node faults,
	// pending pods for pod-exit.
	Cleared map[fault.Kind]int `json:"cleared"`
	// Nodes are the nodes that had a fault removed; Pods the pods whose
	// pending pod-exit was cancelled.
	Nodes []string `json:"nodes,omitempty"`
	Pods  int      `json:"pods,omitempty"`
}

// Summary is what the clear removed, in one line.
func (r ClearResult) Summary() string {
	if len(r.Nodes) == 0 && r.Pods == 0 {
		return "no faults to clear"
	}
	var parts []string
	for _, k := range fault.KindNames() {
		if n := r.Cleared[fault.Kind(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s from %d %s", k, n, clearScope(fault.Kind(k))))
		}
	}
	return "cleared " + strings.Join(parts, ", ")
}

// clearScope is what a kind is cleared from.
func clearScope(k fault.Kind) string {
	if k == fault.PodExit {
		return "pending pods"
	}
	return "nodes"
}

// Clear removes the faults and records the clear. An interrupted clear
// returns a nil error: its Outcome says so and Left how to finish it.
func Clear(ctx context.Context, env Env, o ClearOptions) (ClearResult, error) {
	if err := o.Validate(); err != nil {
		return ClearResult{}, err
	}
	s, c, err := openFault(ctx, env, "clear GhostFleet's faults", false)
	if err != nil {
		return ClearResult{}, err
	}
	rec, cerr := fault.Clear(ctx, c, o.Kinds...)
	if rec.Kind == "" {
		return ClearResult{}, cerr
	}
	res, _ := rec.Result.(fault.Result)
	out := ClearResult{Cleared: res.Cleared, Nodes: res.Nodes, Pods: res.Pods}
	if out.Cleared == nil {
		out.Cleared = map[fault.Kind]int{}
	}
	out.Run, err = s.write(rec)
	if err != nil {
		return out, joinErr(cerr, err)
	}
	if cerr != nil && ctx.Err() == nil {
		return out, cerr
	}
	if out.Outcome != Completed {
		what := "--all"
		if !o.All {
			what = strings.Join(kindStrings(o.Kinds), " ")
		}
		out.Left = "some faults may be left; `ghostfleet fault clear " + what + "` again finishes the clear"
	}
	return out, nil
}

func kindStrings(ks []fault.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// openFault opens env's cluster for a fault: a GhostFleet fleet must be
// up; an attached cluster is named first, and refused when realRisk and
// it has real nodes without the user's consent (see attachedWrite).
func openFault(ctx context.Context, env Env, what string, realRisk bool) (session, fault.Clients, error) {
	s, err := open(env)
	if err != nil {
		return s, fault.Clients{}, err
	}
	if err := attachedWrite(ctx, env, s.clients.Admin, what, realRisk); err != nil {
		return s, fault.Clients{}, err
	}
	c, err := fault.NewClients(env.Target)
	return s, c, err
}

// joinErr keeps the run's own error first: a record that could not be
// written matters less than why the run failed.
func joinErr(runErr, writeErr error) error {
	if runErr != nil {
		return runErr
	}
	return writeErr
}
