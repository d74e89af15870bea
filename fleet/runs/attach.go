package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// AttachOptions ask to prepare an attached cluster (Env.Target) for
// GhostFleet's nodes, loads and faults.
type AttachOptions struct {
	// DCGM installs the DCGM Metric (dcgm-exporter's series per node,
	// served by the local kwok controller) for nodes of DCGMGPUs GPUs.
	DCGM     bool `json:"dcgm,omitempty"`
	DCGMGPUs int  `json:"dcgmGPUs,omitempty"`
	// Namespace is the workload namespace made ready (its load
	// ServiceAccount and RBAC); loads make their own as they need them.
	Namespace string `json:"namespace"`
	// KwokShards is how many local kwok controllers share the nodes,
	// each owning whole 32-node blocks (fleet.ShardSelector).
	KwokShards int `json:"kwokShards"`
	// RemoteShards of them, the last ones, are left to kwok controllers
	// on other machines (ghostfleet kwok-shard there).
	RemoteShards int `json:"remoteShards,omitempty"`
	// Binaries say where the kwok controller comes from.
	Binaries Binaries `json:"binaries"`
	// Metrics is how the direct scrape source looks for the components'
	// /metrics besides the apiserver's: fleet.MetricsProbe (through the
	// apiserver's pod proxy) or fleet.MetricsAPIServerOnly (declared
	// hidden). Recorded for the snapshots and the console that follow.
	Metrics string `json:"metrics"`
}

// NewAttachOptions are attach's defaults: no DCGM, the loads' default
// namespace gf-load.
func NewAttachOptions() AttachOptions {
	return AttachOptions{Namespace: "gf-load", DCGMGPUs: 8, KwokShards: 1, Metrics: fleet.MetricsProbe}
}

// Validate checks the options, each error naming the value and what is
// allowed.
func (o AttachOptions) Validate() error {
	if err := workload.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	if o.KwokShards < 1 || o.KwokShards > fleet.MaxKwokShards {
		return fmt.Errorf("--kwok-shards %d is out of range: allowed are 1-%d", o.KwokShards, fleet.MaxKwokShards)
	}
	if o.RemoteShards < 0 || o.RemoteShards >= o.KwokShards {
		return fmt.Errorf("--remote-shards %d is out of range: allowed are 0-%d with --kwok-shards %d (at least one shard runs on this machine)", o.RemoteShards, o.KwokShards-1, o.KwokShards)
	}
	if err := fleet.CheckMetricsMode(o.Metrics); err != nil {
		return err
	}
	if o.DCGM && (o.DCGMGPUs < 1 || o.DCGMGPUs > 72) {
		return fmt.Errorf("--dcgm-gpus %d is out of range: allowed are 1-72", o.DCGMGPUs)
	}
	return nil
}

// AttachResult is what an attach did.
type AttachResult struct {
	Run
	// Cluster names the cluster (context of kubeconfig); Server is its
	// API server URL.
	Cluster string `json:"cluster"`
	Server  string `json:"server"`
	fleet.Prepared
	// Namespace is the workload namespace made ready.
	Namespace string `json:"namespace"`
	// KwokPID is the local kwok controller's process; KwokAlready is true
	// when it was running already. KwokLog is its log, StateDir the
	// folder of its pid file, kubeconfig and configuration.
	KwokPID int `json:"kwokPID"`
	// KwokPIDs are every local shard's process, shard 1 first.
	KwokPIDs []int `json:"kwokPIDs,omitempty"`
	// RemoteShards are the commands that run the remote shards, one per
	// shard, each on another machine.
	RemoteShards []string `json:"remoteShards,omitempty"`
	KwokAlready  bool     `json:"kwokAlready,omitempty"`
	KwokLog      string   `json:"kwokLog"`
	StateDir     string   `json:"stateDir"`
	// NodeSelector is what the local kwok controller manages.
	NodeSelector string `json:"nodeSelector"`
	// Metrics says which components' /metrics answered a first scrape:
	// the others' queries are not available on this cluster.
	Metrics []fleet.ComponentMetrics `json:"metrics,omitempty"`
}

// Summary is the attach in one line.
func (r AttachResult) Summary() string {
	if r.Outcome != Completed {
		return "attach " + r.Outcome
	}
	return fmt.Sprintf("attached %s: %d CRDs installed (%d kept), %d stages, kwok controller pid %d", r.Server, len(r.CRDsInstalled), len(r.CRDsKept), r.Stages, r.KwokPID)
}

// attachTimeout bounds the first request: an unreachable server fails in
// seconds with one line, not after client-go's minute.
const attachTimeout = 10 * time.Second

// reachable checks that the attached cluster answers, naming it when not.
func reachable(ctx context.Context, t fleet.Target, server string) (*rest.Config, error) {
	cfg, err := t.RESTConfig()
	if err != nil {
		return nil, err
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = attachTimeout
	cs, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return nil, err
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("cannot reach the API server %s of %s: %s", server, t, oneLine(err))
	}
	return cfg, nil
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// attachTarget checks that env targets a cluster GhostFleet did not
// create and returns its API server URL.
func attachTarget(env Env, what string) (string, error) {
	if !env.Target.Attached() {
		return "", fmt.Errorf("%s needs --kubeconfig F: it works on a cluster GhostFleet did not create (GhostFleet's own fleets are prepared by up and removed by clean)", what)
	}
	if _, err := os.Stat(env.Target.Kubeconfig); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", env.Target.Kubeconfig, errors.Unwrap(err))
	}
	return env.Target.Server()
}

// Attach prepares env's attached cluster for GhostFleet (see
// fleet.Prepare), makes the workload namespace ready, and starts the
// kwok controller on this machine against it, managing GhostFleet's
// nodes only. The first attach to a cluster needs the user's consent
// (Env.RealCluster, --i-know-this-is-real, or the CLI's question): it is
// GhostFleet's first write there. Attaching again repairs what is missing
// and restarts a controller that stopped. The run is recorded.
func Attach(ctx context.Context, env Env, o AttachOptions) (AttachResult, error) {
	if err := o.Validate(); err != nil {
		return AttachResult{}, err
	}
	server, err := attachTarget(env, "attach")
	if err != nil {
		return AttachResult{}, err
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return AttachResult{}, err
	}
	cfg, err := reachable(ctx, env.Target, server)
	if err != nil {
		return AttachResult{}, err
	}
	cs, err := env.Target.Clientset(true)
	if err != nil {
		return AttachResult{}, err
	}
	if _, again, err := fleet.ReadAttachment(ctx, cs); err != nil {
		return AttachResult{}, fmt.Errorf("reading %s's attachment record: %w", describeAttached(env.Target), err)
	} else if !again && !env.RealCluster {
		return AttachResult{}, attachRefusal(env.Target)
	}
	env.report(progress.Event{Kind: progress.Warn, Message: "attaching to " + describeAttached(env.Target)})

	started := time.Now().UTC()
	out := AttachResult{
		Run:     Run{ID: NewID("attach"), Kind: "attach", Outcome: Completed},
		Cluster: env.Target.String(), Server: server, Namespace: o.Namespace, NodeSelector: fleet.KwokNodeSelector,
	}
	finish := func(err error) (AttachResult, error) {
		out.Outcome = record.Outcome(ctx, err)
		if err != nil && ctx.Err() == nil {
			out.Left = "part of GhostFleet's set-up may be on the cluster; `ghostfleet detach --kubeconfig " + env.Target.Kubeconfig + "` removes it, `attach` again completes it"
		}
		s := session{env: env}
		run, werr := s.write(record.Record{ID: out.ID, Kind: out.Kind, Started: started, Outcome: out.Outcome, Params: o, Result: out})
		out.Run.Dir, out.Run.Warning = run.Dir, run.Warning
		if err == nil {
			err = werr
		}
		return out, err
	}

	done := progress.Step(env.reporter().Report, "attach", "installing kwok's CRDs and GhostFleet's stages", 0)
	gpus := 0
	if o.DCGM {
		gpus = o.DCGMGPUs
	}
	out.Prepared, err = fleet.Prepare(ctx, cfg, fleet.PrepareOptions{Server: server, Context: env.Target.Context, DCGMGPUs: gpus,
		KwokShards: o.KwokShards, RemoteShards: o.RemoteShards, Report: env.reporter().Report})
	done()
	if err != nil {
		return finish(err)
	}
	if err := workload.EnsureNamespace(ctx, cs, o.Namespace); err != nil {
		return finish(err)
	}

	r, err := o.Binaries.Resolver(env.reporter().Report)
	if err != nil {
		return finish(err)
	}
	kb, err := binaries.Lookup(binaries.Kwok)
	if err != nil {
		return finish(err)
	}
	bin, err := r.ResolveOne(ctx, kb)
	if err != nil {
		return finish(err)
	}
	dir := fleet.AttachDir(server)
	if info, ok := (fleet.LocalKwok{Dir: dir}).Info(); ok && (max(info.Shards, 1) != o.KwokShards || info.Remote != o.RemoteShards) {
		// Another split of the nodes: the old shards stop first, so that
		// no node is ever managed twice.
		if _, err := fleet.StopLocalKwoks(dir, 10*time.Second); err != nil {
			return finish(err)
		}
	}
	k0 := fleet.LocalKwok{Dir: dir, Shards: o.KwokShards}
	if _, err := k0.WriteKubeconfig(env.Target.Kubeconfig, env.Target.Context); err != nil {
		return finish(err)
	}
	out.StateDir, out.KwokLog = dir, k0.LogFile()
	out.KwokAlready = true
	var fresh []fleet.LocalKwok
	for i := range o.KwokShards - o.RemoteShards {
		k := fleet.LocalKwok{Dir: dir, Shard: i, Shards: o.KwokShards}
		pid, already, err := k.Start(bin, fleet.LocalKwokInfo{Server: server, Kubeconfig: env.Target.Kubeconfig, Context: env.Target.Context, Remote: o.RemoteShards})
		if err != nil {
			return finish(err)
		}
		out.KwokPIDs = append(out.KwokPIDs, pid)
		out.KwokAlready = out.KwokAlready && already
		if !already {
			fresh = append(fresh, k)
		}
	}
	out.KwokPID = out.KwokPIDs[0]
	for i := o.KwokShards - o.RemoteShards; i < o.KwokShards; i++ {
		out.RemoteShards = append(out.RemoteShards, KwokShardCommand(env.Target, i+1, o.KwokShards))
	}
	// A controller that cannot talk to the cluster exits at once: say so
	// now, with its last words, rather than at the first `nodes`.
	if len(fresh) > 0 {
		select {
		case <-ctx.Done():
			return finish(ctx.Err())
		case <-time.After(2 * time.Second):
		}
		for _, k := range fresh {
			if _, ok := k.PID(); !ok {
				return finish(fmt.Errorf("the kwok controller exited right after starting; its log %s says: %s", k.LogFile(), lastLine(k.LogFile())))
			}
		}
	}
	// Which components snapshots and the console can read here.
	if err := fleet.SaveMetricsMode(server, o.Metrics); err != nil {
		return finish(err)
	}
	out.Metrics, _ = fleet.ProbeMetrics(ctx, env.Target) // informative: a failed probe fails nothing
	return finish(nil)
}

// attachRefusal is the one line that asks for consent before the first
// write to a cluster.
func attachRefusal(t fleet.Target) error {
	return fmt.Errorf("refusing to attach to %s without consent: attach installs kwok's CRDs, GhostFleet's stages, the namespace %s and a load ServiceAccount there, and runs a kwok controller for the nodes GhostFleet will create; pass %s to go ahead",
		describeAttached(t), fleet.AttachNamespace, ConsentFlag)
}

// AttachQuestion is what the CLI asks on a terminal before a first attach.
func AttachQuestion(t fleet.Target) string {
	return fmt.Sprintf("Attach GhostFleet to %s?\nIt installs kwok's CRDs (those missing), GhostFleet's kwok stages, the namespaces %s and gf-load with a load ServiceAccount,\nand runs a kwok controller on this machine for the nodes GhostFleet creates there. Nothing else is touched. [y/N] ",
		describeAttached(t), fleet.AttachNamespace)
}

func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) == 0 || lines[len(lines)-1] == "" {
		return "(empty log)"
	}
	l := lines[len(lines)-1]
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

// DetachOptions ask to remove GhostFleet from an attached cluster; there
// is nothing to choose.
type DetachOptions struct{}

// DetachResult is what a detach removed.
type DetachResult struct {
	Run
	Cluster string `json:"cluster"`
	Server  string `json:"server"`
	// KwokStopped is true when a local kwok controller was stopped.
	KwokStopped bool `json:"kwokStopped"`
	// Removed lists the objects deleted, by kind.
	Removed fleet.Removed `json:"removed"`
}

// Summary is the detach in one line.
func (r DetachResult) Summary() string {
	if r.Outcome != Completed {
		return "detach " + r.Outcome
	}
	return fmt.Sprintf("detached %s: removed %s", r.Server, r.Removed)
}

// Detach removes GhostFleet from env's attached cluster: its workload
// namespaces and nodes (while the local kwok controller still deletes
// their pods), then the controller, GhostFleet's stages and kwok objects,
// the CRDs GhostFleet installed and its namespace. Everything is found by
// GhostFleet's labels, CRDs by the attachment record; nothing else is
// touched. Detaching a cluster that is not attached removes nothing and
// succeeds. The run is recorded.
func Detach(ctx context.Context, env Env, _ DetachOptions) (DetachResult, error) {
	server, err := attachTarget(env, "detach")
	if err != nil {
		return DetachResult{}, err
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return DetachResult{}, err
	}
	dir := fleet.AttachDir(server)
	cfg, err := reachable(ctx, env.Target, server)
	if err != nil {
		// The cluster may be gone for good: the local controller still
		// stops, so nothing of GhostFleet's keeps running here.
		if stopped, serr := fleet.StopLocalKwoks(dir, 10*time.Second); serr == nil && stopped > 0 {
			err = fmt.Errorf("%w (the local kwok controller was stopped; detach again once the server answers to remove GhostFleet's objects)", err)
		}
		return DetachResult{}, err
	}
	// Not throttled on this side, as nodes creates them: the server's
	// API Priority and Fairness still paces the deletions.
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return DetachResult{}, err
	}
	env.report(progress.Event{Kind: progress.Warn, Message: "detaching from " + describeAttached(env.Target)})
	started := time.Now().UTC()
	out := DetachResult{Run: Run{ID: NewID("detach"), Kind: "detach", Outcome: Completed}, Cluster: env.Target.String(), Server: server, Removed: fleet.Removed{}}
	err = func() error {
		done := progress.Step(env.reporter().Report, "detach", "deleting GhostFleet's workload namespaces and nodes", 0)
		err := fleet.UnprepareWorkloads(ctx, cs, out.Removed, env.reporter().Report)
		done()
		if err != nil {
			return err
		}
		stopped, err := fleet.StopLocalKwoks(dir, 10*time.Second)
		out.KwokStopped = stopped > 0
		if err != nil {
			return err
		}
		done = progress.Step(env.reporter().Report, "detach", "deleting GhostFleet's stages, CRDs and namespace", 0)
		defer done()
		return fleet.Unprepare(ctx, cfg, out.Removed)
	}()
	out.Outcome = record.Outcome(ctx, err)
	if err != nil {
		out.Left = "some of GhostFleet's objects may be left; `ghostfleet detach` again removes them"
	}
	s := session{env: env}
	run, werr := s.write(record.Record{ID: out.ID, Kind: out.Kind, Started: started, Outcome: out.Outcome, Params: DetachOptions{}, Result: out})
	out.Run.Dir, out.Run.Warning = run.Dir, run.Warning
	if err == nil {
		err = werr
	}
	if err == nil {
		_ = os.RemoveAll(dir) // the local kubeconfig copy goes with the attachment
	}
	return out, err
}

// requireAttached refuses to create nodes on an attached cluster that
// GhostFleet has not prepared: no kwok controller would make them Ready.
func requireAttached(ctx context.Context, env Env, cs kubernetes.Interface) error {
	if !env.Target.Attached() {
		return nil
	}
	if _, ok, err := fleet.ReadAttachment(ctx, cs); err != nil {
		return fmt.Errorf("reading %s's attachment record: %w", describeAttached(env.Target), err)
	} else if !ok {
		return fmt.Errorf("%s is not prepared for GhostFleet's nodes: run `ghostfleet attach --kubeconfig %s` first (it installs kwok's stages and runs a kwok controller for them)", describeAttached(env.Target), env.Target.Kubeconfig)
	}
	server, err := env.Target.Server()
	if err != nil {
		return err
	}
	ks := fleet.LocalKwoks(fleet.AttachDir(server))
	if len(ks) == 0 {
		ks = []fleet.LocalKwok{{Dir: fleet.AttachDir(server)}}
	}
	for _, k := range ks {
		if k.Health().Running {
			continue
		}
		return fmt.Errorf("the kwok controller for %s is not running on this machine, so new nodes would never be Ready: `ghostfleet attach --kubeconfig %s` again starts it (its last log: %s)", server, env.Target.Kubeconfig, k.LogFile())
	}
	return nil
}

// CheckAttached says whether GhostFleet can create nodes on env's
// attached cluster (nil when it can, and always for its own fleets): it
// is attached and its kwok controller runs on this machine. The console
// asks it before offering `n` on an attached cluster.
func CheckAttached(ctx context.Context, env Env) error {
	if !env.Target.Attached() {
		return nil
	}
	cs, err := env.Target.Clientset(false)
	if err != nil {
		return err
	}
	return requireAttached(ctx, env, cs)
}

// KwokShardOptions ask to run one shard of an attached cluster's kwok
// controllers here, in the foreground (Env.Target is the cluster).
type KwokShardOptions struct {
	// Shard is 1-based: shard Shard of Of.
	Shard, Of int
	Binaries  Binaries
}

// KwokShardCommand is the command that runs shard i (1-based) of n of
// target's kwok controllers on another machine, with target's kubeconfig
// copied there.
func KwokShardCommand(t fleet.Target, i, n int) string {
	c := ""
	if t.Context != "" {
		c = " --context " + t.Context
	}
	return fmt.Sprintf("ghostfleet kwok-shard --kubeconfig %s%s --shard %d --of %d", t.Kubeconfig, c, i, n)
}

// KwokShard runs shard o.Shard of o.Of of an attached cluster's kwok
// controllers on this machine until ctx ends (Ctrl-C): the nodes of its
// blocks (fleet.ShardSelector) come Ready and run pods through it. The
// cluster must be attached with --kwok-shards o.Of and this shard among
// its --remote-shards, so that no node is ever managed twice. It writes
// nothing to the cluster but what kwok's controller writes for its nodes.
func KwokShard(ctx context.Context, env Env, o KwokShardOptions) error {
	if !env.Target.Attached() {
		return fmt.Errorf("kwok-shard needs --kubeconfig F: the attached cluster whose shard to run")
	}
	if o.Of < 2 || o.Of > fleet.MaxKwokShards {
		return fmt.Errorf("--of %d is out of range: allowed are 2-%d (the cluster's attach --kwok-shards)", o.Of, fleet.MaxKwokShards)
	}
	if o.Shard < 1 || o.Shard > o.Of {
		return fmt.Errorf("--shard %d is out of range: allowed are 1-%d", o.Shard, o.Of)
	}
	server, err := env.Target.Server()
	if err != nil {
		return err
	}
	cfg, err := reachable(ctx, env.Target, server)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	a, ok, err := fleet.ReadAttachment(ctx, cs)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s is not attached: run `ghostfleet attach --kubeconfig ... --kwok-shards %d --remote-shards N` on the machine that drives it first", describeAttached(env.Target), o.Of)
	case max(a.KwokShards, 1) != o.Of:
		return fmt.Errorf("--of %d: %s is attached with --kwok-shards %d", o.Of, describeAttached(env.Target), max(a.KwokShards, 1))
	case o.Shard <= a.KwokShards-a.RemoteShards:
		return fmt.Errorf("--shard %d runs on the machine that attached (%s of %d run there; attach --remote-shards %d leaves %s to kwok-shard)",
			o.Shard, shardRange(1, a.KwokShards-a.RemoteShards), a.KwokShards, a.RemoteShards, shardRange(a.KwokShards-a.RemoteShards+1, a.KwokShards))
	}
	r, err := o.Binaries.Resolver(env.reporter().Report)
	if err != nil {
		return err
	}
	kb, err := binaries.Lookup(binaries.Kwok)
	if err != nil {
		return err
	}
	bin, err := r.ResolveOne(ctx, kb)
	if err != nil {
		return err
	}
	k := fleet.LocalKwok{Dir: filepath.Join(fleet.AttachDir(server), fmt.Sprintf("remote-shard-%d", o.Shard)), Shard: o.Shard - 1, Shards: o.Of}
	if _, err := k.WriteKubeconfig(env.Target.Kubeconfig, env.Target.Context); err != nil {
		return err
	}
	// Detach removes the record: the shard then has nothing left to run.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Second):
			}
			if _, ok, err := fleet.ReadAttachment(ctx, cs); err == nil && !ok {
				stop(errDetached)
				return
			}
		}
	}()
	err = k.Run(ctx, bin, func(pid int) {
		env.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf(
			"kwok shard %d/%d of %s running (pid %d): GhostFleet's nodes of every 32-node block b with b mod %d = %d; log %s; Ctrl-C stops it",
			o.Shard, o.Of, server, pid, o.Of, o.Shard-1, k.LogFile())})
	})
	if err != nil {
		return fmt.Errorf("%w says: %s", err, lastLine(k.LogFile()))
	}
	if errors.Is(context.Cause(ctx), errDetached) {
		env.report(progress.Event{Kind: progress.Info, Message: "the cluster was detached: kwok shard stopped"})
	}
	return nil
}

var errDetached = errors.New("detached")

// shardRange names shards first to last (1-based).
func shardRange(first, last int) string {
	switch {
	case first > last:
		return "no shard"
	case first == last:
		return fmt.Sprintf("shard %d", first)
	}
	return fmt.Sprintf("shards %d-%d", first, last)
}
