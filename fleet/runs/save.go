package runs

import (
	"context"
	"fmt"
	"strings"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/state"
)

// Binaries say where the etcd tools come from (the --binary, --go and
// --cache-dir flags); the zero value is the defaults: the per-version
// cache, else a build from the pinned modules.
type Binaries struct {
	// Explicit are prebuilt binaries by name (binaries.Names).
	Explicit map[string]string `json:"explicit,omitempty"`
	// Go is the go command that builds missing binaries ("": go on PATH).
	Go string `json:"go,omitempty"`
	// CacheDir is the binary cache root ("": binaries.DefaultCacheRoot).
	CacheDir string `json:"cacheDir,omitempty"`
	// PrometheusFrom says where Prometheus comes from when it is not in
	// the cache (binaries.PrometheusFromValues; "": build).
	PrometheusFrom string `json:"prometheusFrom,omitempty"`
}

// Resolver finds (or builds) the binaries as b says.
func (b Binaries) Resolver(report progress.Func) (*binaries.Resolver, error) {
	for name := range b.Explicit {
		if _, err := binaries.Lookup(name); err != nil {
			return nil, fmt.Errorf("--binary: %w", err)
		}
	}
	from := b.PrometheusFrom
	if from == "" {
		from = binaries.PrometheusBuild
	}
	if err := binaries.CheckPrometheusFrom(from); err != nil {
		return nil, fmt.Errorf("--prometheus-from: %w", err)
	}
	root := b.CacheDir
	if root == "" {
		var err error
		if root, err = binaries.DefaultCacheRoot(); err != nil {
			return nil, err
		}
	}
	return &binaries.Resolver{Versions: binaries.Pinned(), Explicit: b.Explicit, CacheRoot: root, GoBinary: b.Go, Report: report, PrometheusFrom: from}, nil
}

// ownFleet refuses an attached cluster for what manages GhostFleet's own
// fleet's processes.
func ownFleet(env Env, what string) error {
	if env.Target.Attached() {
		return fmt.Errorf("%s manages GhostFleet's own cluster, not an attached one (%s)", what, env.Target)
	}
	return nil
}

// snapshotTools resolves the etcd tools for the fleet's versions.
func snapshotTools(ctx context.Context, env Env, b Binaries, restore bool) (fleet.SnapshotTools, error) {
	st, err := fleet.UpState(env.Target.Name)
	if err != nil {
		return fleet.SnapshotTools{}, err
	}
	r, err := b.Resolver(env.reporter().Report)
	if err != nil {
		return fleet.SnapshotTools{}, err
	}
	return state.Tools(ctx, r, st, restore)
}

// SaveOptions name a saved state: Name, when given, is another name
// restore accepts for it.
type SaveOptions struct {
	Name     string   `json:"name,omitempty"`
	Binaries Binaries `json:"binaries"`
}

// Validate checks the state's name.
func (o SaveOptions) Validate() error { return state.ValidateName(o.Name) }

// SaveResult is a saved state: its run folder (etcd.db and run.json) and
// what it holds.
type SaveResult struct {
	Run
	// Cluster is the fleet saved; Name the state's other name, if any.
	Cluster string `json:"cluster"`
	Name    string `json:"name,omitempty"`
	state.Result
}

// Summary is what was saved and the name to restore it by.
func (r SaveResult) Summary() string {
	name := r.ID
	if r.Name != "" {
		name = r.Name
	}
	return fmt.Sprintf("saved %s: %d nodes, %d pods, %d namespaces (%d KiB)", name, r.Nodes, r.Pods, r.Namespaces, r.Bytes/1024)
}

// Save writes the fleet's etcd snapshot into a new state-<time> run
// folder. Nothing is left behind when it fails or is interrupted: both
// return an error.
func Save(ctx context.Context, env Env, o SaveOptions) (SaveResult, error) {
	if err := ownFleet(env, "save"); err != nil {
		return SaveResult{}, err
	}
	if err := o.Validate(); err != nil {
		return SaveResult{}, err
	}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return SaveResult{}, err
	}
	tools, err := snapshotTools(ctx, env, o.Binaries, false)
	if err != nil {
		return SaveResult{}, err
	}
	s, err := recorder(env)
	if err != nil {
		return SaveResult{}, err
	}
	rec, dir, err := state.Save(ctx, env.Target.Name, env.ResultsDir, o.Name, tools, s.complete, env.reporter().Report)
	if err != nil {
		return SaveResult{}, err
	}
	res, _ := rec.Result.(state.Result)
	run := Run{ID: rec.ID, Kind: rec.Kind, Dir: dir, Outcome: rec.Outcome, Warning: strings.Join(rec.Warnings, "; ")}
	return SaveResult{Run: run, Cluster: rec.Cluster, Name: o.Name, Result: res}, nil
}
