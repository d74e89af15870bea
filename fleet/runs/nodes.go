package runs

import (
	"context"
	"fmt"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// NodesOptions ask for a fleet of exactly Count GhostFleet nodes.
type NodesOptions struct {
	Count int `json:"count"`
	// GPUProfile is the GPU server new nodes imitate (fleet.GPUProfiles).
	GPUProfile string `json:"gpuProfile"`
	// GPUModel is how new nodes offer their GPUs: fleet.GPUModelExtended
	// (nvidia.com/gpu) or fleet.GPUModelDRA (a ResourceSlice each); empty
	// keeps the fleet's.
	GPUModel string `json:"gpuModel,omitempty"`
	// DRAExtendedResource makes a DRA fleet's DeviceClass also serve
	// pods that ask for nvidia.com/gpu (fleet.NewDeviceClass).
	DRAExtendedResource bool `json:"draExtendedResource,omitempty"`
	// Workers is how many requests are in flight at once.
	Workers int `json:"workers"`
	// NoWait returns once the nodes exist, without waiting for Ready.
	NoWait bool `json:"noWait,omitempty"`
}

// NewNodesOptions are a scale's defaults, the same for the flags and the
// console's form: 1,000 nodes of the default GPU profile, 64 requests in
// flight, waiting until they are Ready.
func NewNodesOptions() NodesOptions {
	return NodesOptions{Count: 1000, GPUProfile: fleet.DefaultGPUProfile, Workers: 64}
}

// Validate checks the options, each error naming the value and what is
// allowed.
func (o NodesOptions) Validate() error {
	if err := fleet.ValidateNodeCount(o.Count); err != nil {
		return err
	}
	if _, err := fleet.LookupGPUProfile(o.GPUProfile); err != nil {
		return err
	}
	if o.GPUModel != "" {
		if err := fleet.CheckGPUModel(o.GPUModel); err != nil {
			return err
		}
	}
	if err := fleet.CheckDRAExtendedResource(o.DRAExtendedResource, o.GPUModel); err != nil {
		return err
	}
	if o.Workers < 1 || o.Workers > 1024 {
		return fmt.Errorf("workers %d is out of range: allowed are 1-1024", o.Workers)
	}
	return nil
}

// NodesResult is what a scale did. A scale writes no run folder: Dir is
// empty.
type NodesResult struct {
	Run
	// Cluster is the cluster scaled; Nodes the GhostFleet nodes asked for.
	Cluster    string `json:"cluster"`
	Nodes      int    `json:"nodes"`
	GPUProfile string `json:"gpuProfile"`
	// GPUModel is how the fleet's nodes offer their GPUs; Slices counts
	// the ResourceSlices published (DRA).
	GPUModel string `json:"gpuModel"`
	Slices   int    `json:"slices,omitempty"`
	Created  int    `json:"created"`
	Deleted  int    `json:"deleted"`
	Kept     int    `json:"kept"`
	// OtherProfiles counts kept nodes of a GPU profile other than
	// GPUProfile.
	OtherProfiles map[string]int `json:"otherProfiles,omitempty"`
	// CreateSeconds is until every create and delete was answered;
	// ReadySeconds until every node was Ready, SchedulableSeconds until
	// the node lifecycle controller had also lifted every node's
	// not-ready taint (0: not waited for).
	CreateSeconds      float64 `json:"createSeconds"`
	ReadySeconds       float64 `json:"readySeconds,omitempty"`
	SchedulableSeconds float64 `json:"schedulableSeconds,omitempty"`
	// Requests is every request the scale sent and what it met.
	Requests requests.Stats `json:"requests"`
}

// Summary is the scale in one line.
func (r NodesResult) Summary() string {
	if r.Outcome != Completed {
		how := "failed"
		if r.Outcome == Interrupted {
			how = Interrupted
		}
		return fmt.Sprintf("scaling to %d nodes %s: %d created, %d deleted, %d kept", r.Nodes, how, r.Created, r.Deleted, r.Kept)
	}
	s := fmt.Sprintf("%d nodes: %d created, %d deleted, %d kept in %.1fs", r.Nodes, r.Created, r.Deleted, r.Kept, r.CreateSeconds)
	if r.ReadySeconds > 0 {
		s += fmt.Sprintf(", Ready in %.1fs", r.ReadySeconds)
	}
	if r.SchedulableSeconds > 0 {
		s += fmt.Sprintf(", schedulable in %.1fs", r.SchedulableSeconds)
	}
	if r.Requests.Rejected > 0 {
		s += fmt.Sprintf(", %d × 429", r.Requests.Rejected)
	}
	return s
}

// Nodes scales the fleet to exactly o.Count GhostFleet nodes (see
// fleet.Scale); nothing is recorded. An interrupted scale returns its
// result and a nil error, Left saying how to finish it; a failed one
// returns its result (Outcome "failed: …", with the requests it sent)
// and the error.
func Nodes(ctx context.Context, env Env, o NodesOptions) (NodesResult, error) {
	if err := o.Validate(); err != nil {
		return NodesResult{}, err
	}
	gpu, _ := fleet.LookupGPUProfile(o.GPUProfile)
	t := env.Target
	counter := requests.NewCounter()
	cs, err := t.CountedClientset(true, counter)
	if err != nil {
		return NodesResult{}, err
	}
	if err := requireAttached(ctx, env, cs); err != nil {
		return NodesResult{}, err
	}
	if err := attachedWrite(ctx, env, cs, fmt.Sprintf("scale GhostFleet's fake nodes to %d", o.Count), false); err != nil {
		return NodesResult{}, err
	}
	res, err := fleet.Scale(ctx, cs, fleet.ScaleOptions{Count: o.Count, Profile: gpu, GPUModel: o.GPUModel, DRAExtendedResource: o.DRAExtendedResource, Workers: o.Workers, WaitReady: !o.NoWait, Report: env.reporter().Report})
	out := NodesResult{
		Run:     Run{ID: NewID("nodes"), Kind: "nodes", Outcome: Completed},
		Cluster: t.String(), Nodes: o.Count, GPUProfile: gpu.Name, GPUModel: res.GPUModel, Slices: res.Slices,
		Created: res.Created, Deleted: res.Deleted, Kept: res.Kept, OtherProfiles: res.OtherProfiles,
		CreateSeconds: res.CreateTime.Seconds(), ReadySeconds: res.ReadyTime.Seconds(),
		SchedulableSeconds: res.SchedulableTime.Seconds(),
		Requests:           counter.Stats(),
	}
	switch {
	case err != nil && ctx.Err() != nil:
		out.Outcome = Interrupted
		out.Left = fmt.Sprintf("the fleet is part-way to %d nodes (%d created, %d deleted so far); `ghostfleet nodes %d` again finishes", o.Count, res.Created, res.Deleted, o.Count)
		return out, nil
	case err != nil:
		if t.Attached() && res.Created > 0 {
			err = fmt.Errorf("%w (is a kwok controller managing fake nodes on %s?)", err, t)
		}
		out.Outcome = "failed: " + err.Error()
		return out, err
	}
	return out, nil
}
