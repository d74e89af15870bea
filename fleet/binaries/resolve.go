package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// Source says where a resolved binary came from.
type Source string

const (
	SourceFlag  Source = "flag"
	SourceEnv   Source = "env"
	SourceCache Source = "cache"
	SourceBuilt Source = "built"
)

// Resolved is a binary found on disk.
type Resolved struct {
	Binary
	Path   string
	Source Source
	// Version is the release the binary reports when it is not the
	// pinned one (Debian's Prometheus); empty otherwise.
	Version string
}

// Set maps binary names to where they are.
type Set map[string]Resolved

// Path returns the path of the named binary ("" when missing).
func (s Set) Path(name string) string { return s[name].Path }

// Resolver finds the binaries in order: explicit paths (flags), environment
// variables, the per-version cache, and finally a build from the pinned
// modules.
type Resolver struct {
	Versions Versions
	// Explicit maps a binary name to a path given on the command line.
	Explicit map[string]string
	// CacheRoot holds one folder per version set.
	CacheRoot string
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
	// GoBinary is the go command used to build; "go" from PATH when empty.
	GoBinary string
	Report   progress.Func
	// PrometheusFrom says where Prometheus comes from when neither a
	// flag nor a variable names it: PrometheusAuto, PrometheusDebian or
	// PrometheusBuild (when empty: nothing is fetched unasked).
	PrometheusFrom string
	// Also are binaries of OnDemand that Find and Resolve treat like
	// those of All, e.g. metrics-server for a fleet that runs it.
	Also []Binary
	// Without names binaries of All that Find and Resolve leave out:
	// Prometheus, for a fleet that comes up before it is built.
	Without []string
}

// DefaultCacheRoot is $XDG_CACHE_HOME/ghostfleet/bin (or ~/.cache/...).
func DefaultCacheRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory: %w (set XDG_CACHE_HOME)", err)
	}
	return filepath.Join(dir, "ghostfleet", "bin"), nil
}

// CacheDir is the folder that holds this version set's binaries.
func (r *Resolver) CacheDir() string {
	return filepath.Join(r.CacheRoot, r.Versions.SetName())
}

func (r *Resolver) getenv(key string) string {
	if r.Getenv != nil {
		return r.Getenv(key)
	}
	return os.Getenv(key)
}

func (r *Resolver) report(e progress.Event) {
	if r.Report != nil {
		r.Report(e)
	}
}

// Find resolves every binary without building; missing lists those that
// would have to be built.
func (r *Resolver) Find() (found Set, missing []Binary, err error) {
	for name := range r.Explicit {
		if _, err := Lookup(name); err != nil {
			return nil, nil, err
		}
	}
	found = Set{}
	for _, b := range append(All[:len(All):len(All)], r.Also...) {
		if slices.Contains(r.Without, b.Name) {
			continue
		}
		res, ok, err := r.find(b)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			found[b.Name] = res
		} else {
			missing = append(missing, b)
		}
	}
	return found, missing, nil
}

func (r *Resolver) find(b Binary) (Resolved, bool, error) {
	if p := r.Explicit[b.Name]; p != "" {
		if err := executable(p); err != nil {
			return Resolved{}, false, fmt.Errorf("--binary %s=%s: %w", b.Name, p, err)
		}
		return Resolved{Binary: b, Path: p, Source: SourceFlag}, true, nil
	}
	if p := r.getenv(b.EnvVar()); p != "" {
		if err := executable(p); err != nil {
			return Resolved{}, false, fmt.Errorf("%s=%s: %w", b.EnvVar(), p, err)
		}
		return Resolved{Binary: b, Path: p, Source: SourceEnv}, true, nil
	}
	if b.Name == Prometheus && r.PrometheusFrom == PrometheusDebian {
		res, ok := r.findDebianPrometheus()
		return res, ok, nil
	}
	p := r.cachePath(b)
	if executable(p) == nil {
		return Resolved{Binary: b, Path: p, Source: SourceCache}, true, nil
	}
	if b.Name == Prometheus && r.PrometheusFrom == PrometheusAuto {
		res, ok := r.findDebianPrometheus()
		return res, ok, nil
	}
	return Resolved{}, false, nil
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("not found: %w", errors.Unwrap(err))
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// ErrNoGo is returned when a build is needed and no Go toolchain is found.
var ErrNoGo = errors.New("no Go toolchain")

// Resolve finds every binary, building the missing ones into the cache
// (Prometheus may come from Debian's package instead: see PrometheusFrom).
func (r *Resolver) Resolve(ctx context.Context) (Set, error) {
	found, missing, err := r.Find()
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(missing, func(b Binary) bool { return b.Name == Prometheus }); i >= 0 &&
		(r.PrometheusFrom == PrometheusAuto || r.PrometheusFrom == PrometheusDebian) {
		res, err := r.fetchDebianPrometheus(ctx)
		switch {
		case err == nil:
			found[Prometheus] = res
			missing = slices.Delete(missing, i, i+1)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("taking Prometheus from Debian's package: interrupted: %w", ctx.Err())
		case r.PrometheusFrom == PrometheusDebian:
			return nil, err
		default:
			r.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf("%v; building the pinned Prometheus %s instead", err, r.Versions.Prometheus)})
		}
	}
	if len(missing) == 0 {
		return found, nil
	}
	goBin, err := r.goBinary()
	if err != nil {
		names := make([]string, len(missing))
		for i, b := range missing {
			names[i] = b.Name
		}
		return nil, fmt.Errorf("%w: building %s needs Go 1.26 or newer on PATH (or pass --go); "+
			"alternatively point --binary NAME=PATH or %s-style variables at prebuilt binaries",
			err, strings.Join(names, ", "), missing[0].EnvVar())
	}
	r.report(progress.Event{Kind: progress.Info, Message: fmt.Sprintf(
		"building %d binaries from the pinned modules into %s (first run only; later runs reuse them)", len(missing), r.cachePlace(missing))})
	// The control plane's binaries are built by one go build: the packages
	// they share compile once, and both cores stay busy while one links.
	var group []Binary
	var steps [][]Binary
	for _, b := range missing {
		if b.module == moduleControlPlane {
			group = append(group, b)
		} else {
			steps = append(steps, []Binary{b})
		}
	}
	if len(group) > 0 {
		steps = append([][]Binary{group}, steps...)
	}
	for i, bs := range steps {
		paths, err := r.build(ctx, goBin, bs, i+1, len(steps))
		if err != nil {
			return nil, err
		}
		for j, b := range bs {
			found[b.Name] = Resolved{Binary: b, Path: paths[j], Source: SourceBuilt}
		}
	}
	return found, nil
}

// ResolveOne finds one binary (of All or OnDemand), building it into the
// cache when it is missing.
func (r *Resolver) ResolveOne(ctx context.Context, b Binary) (string, error) {
	res, ok, err := r.find(b)
	if err != nil || ok {
		return res.Path, err
	}
	goBin, err := r.goBinary()
	if err != nil {
		return "", fmt.Errorf("%w: building %s needs Go 1.26 or newer on PATH; alternatively point %s at a prebuilt binary", err, b.Name, b.EnvVar())
	}
	paths, err := r.build(ctx, goBin, []Binary{b}, 1, 1)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

func (r *Resolver) goBinary() (string, error) {
	name := r.GoBinary
	if name == "" {
		name = "go"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (%q not found)", ErrNoGo, name)
	}
	return p, nil
}

// moduleFiles returns the go.mod and go.sum of a build module.
func moduleFiles(module string) (mod, sum []byte) {
	switch module {
	case modulePrometheus:
		return prometheusMod, prometheusSum
	case moduleMetricsServer:
		return metricsServerMod, metricsServerSum
	case moduleKarpenter:
		return karpenterMod, karpenterSum
	}
	return controlPlaneMod, controlPlaneSum
}

// cachePlace names where the binaries bs go: the version set's folder,
// or the cache root when some have folders of their own.
func (r *Resolver) cachePlace(bs []Binary) string {
	for _, b := range bs {
		if filepath.Dir(r.cachePath(b)) != r.CacheDir() {
			return r.CacheRoot
		}
	}
	return r.CacheDir()
}

// cachePath is where the binary b is cached: in the version set's folder,
// except a binary pinned by a module of its own outside that set
// (metrics-server, Karpenter), which has a folder named after its own
// version, so that neither version change rebuilds the other.
func (r *Resolver) cachePath(b Binary) string {
	if b.module == moduleMetricsServer || b.module == moduleKarpenter {
		return filepath.Join(r.CacheRoot, b.Name+"-"+r.Versions.VersionOf(b.Name), b.Name)
	}
	return filepath.Join(r.CacheDir(), b.Name)
}

// build compiles the binaries bs (one, or several of one module without
// patches or manifests) with one go build into the cache. The output is
// written under temporary names and renamed, so an interrupted build never
// leaves a half-written binary that a later run would trust.
func (r *Resolver) build(ctx context.Context, goBin string, bs []Binary, n, total int) ([]string, error) {
	b := bs[0]
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	mod, sum := moduleFiles(b.module)
	h := sha256.Sum256(append(append([]byte{}, mod...), sum...))
	src := filepath.Join(r.CacheRoot, "src", b.module+"-"+hex.EncodeToString(h[:6]))
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), mod, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "go.sum"), sum, 0o644); err != nil {
		return nil, err
	}
	outs := make([]string, len(bs))
	for i, b := range bs {
		outs[i] = r.cachePath(b)
		if err := os.MkdirAll(filepath.Dir(outs[i]), 0o755); err != nil {
			return nil, err
		}
	}
	// One binary is written to OUT.building; several (go build -o DIR/)
	// to a temporary folder beside them, named as go names them.
	// A folder left by a killed build is removed first.
	tmp := outs[0] + ".building"
	tmps := []string{tmp}
	if len(bs) > 1 {
		dir := filepath.Join(filepath.Dir(outs[0]), ".building-"+b.module)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		tmp, tmps = dir+string(filepath.Separator), nil
		for _, b := range bs {
			tmps = append(tmps, filepath.Join(dir, goOutputName(b.pkg)))
		}
	}

	step, what, typical := "build "+b.Name, fmt.Sprintf("building %s (%d/%d) from %s", b.Name, n, total, b.pkg), b.Typical
	if len(bs) > 1 {
		step = "build " + b.module
		what = fmt.Sprintf("building %s (%d/%d, one go build of %d binaries)", strings.Join(names, ", "), n, total, len(bs))
		typical = 0
		for _, b := range bs {
			typical += b.Typical
		}
	}
	done := progress.Step(r.report, step, what, typical)
	defer done()
	ldflags, err := joinLDFlags(bs, r.Versions)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", strings.Join(names, ", "), err)
	}
	args := append([]string{"build"}, CompileFlags...)
	args = append(args, "-ldflags", ldflags, "-o", tmp)
	var moduleDir string
	if len(b.patches) > 0 || len(b.manifests) > 0 {
		var err error
		if moduleDir, err = goModuleDir(ctx, goBin, src, b.source); err != nil {
			return nil, fmt.Errorf("building %s: %w", b.Name, err)
		}
	}
	if len(b.patches) > 0 {
		if err := patchedModule(src, b, moduleDir, mod); err != nil {
			return nil, fmt.Errorf("building %s: %w", b.Name, err)
		}
	}
	for _, b := range bs {
		args = append(args, b.pkg)
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, "GOGC="+CompileGOGC)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmps[0])
		if ctx.Err() != nil {
			return nil, fmt.Errorf("build of %s interrupted; nothing was cached for it", strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("building %s failed: %v\n%s", strings.Join(names, ", "), err, lastLines(stderr.String(), 20))
	}
	// The binary is what marks the cache complete: its manifests go first.
	if err := copyManifests(moduleDir, b.manifests, ManifestsDir(outs[0])); err != nil {
		_ = os.Remove(tmps[0])
		return nil, fmt.Errorf("building %s: %w", b.Name, err)
	}
	for i := range bs {
		if err := os.Rename(tmps[i], outs[i]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// CompileFlags are the go build flags of every binary GhostFleet builds,
// and of `make build` (a test holds the Makefile to them): with the same
// flags, the packages GhostFleet shares with the control plane (client-go,
// k8s.io/api…) compile once on a first run, not twice. No DWARF: the
// binaries' -s -w dropped it at link anyway, and not writing it saves
// compile time (bin/ghostfleet is then not for a debugger).
var CompileFlags = []string{"-trimpath", "-gcflags=all=-dwarf=false"}

// CompileGOGC is the compiler's GC setting for those builds and `make
// build`'s, unless GOGC is set: with more heap and fewer collections a
// cold compile took 0.89–0.90× the CPU and 0.93–0.94× the time of Go's
// default 100 on 2 cores (results/build-gogc-20261201-204500). Only the
// go command gets it, not the binaries it builds.
const CompileGOGC = "300"

// goOutputName is the file go build -o DIR/ writes package pkg's binary
// to: its last path element, or the one before a major version suffix
// (go.etcd.io/etcd/server/v3 → server; v0, v1 and v01 are not suffixes,
// as in cmd/go).
func goOutputName(pkg string) string {
	elems := strings.Split(pkg, "/")
	last := elems[len(elems)-1]
	isMajor := len(last) >= 2 && last[0] == 'v' && last[1] != '0' && !(last == "v1") &&
		strings.Trim(last[1:], "0123456789") == ""
	if len(elems) > 1 && isMajor {
		last = elems[len(elems)-2]
	}
	return last
}

// joinLDFlags are the linker flags of every binary in bs, each once, for
// one go build of them all. A binary that links a package stamped for
// another gets that stamp too (kwok links k8s.io/component-base/version,
// which only Kubernetes's own binaries read), so a symbol stamped with two
// values is refused rather than left to the last one.
func joinLDFlags(bs []Binary, v Versions) (string, error) {
	var out []string
	stamped := map[string]string{} // -X symbol → value
	for _, b := range bs {
		fields := strings.Fields(b.ldflags(v))
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if f == "-X" && i+1 < len(fields) {
				i++
				sym, val, _ := strings.Cut(fields[i], "=")
				if prev, ok := stamped[sym]; ok && prev != val {
					return "", fmt.Errorf("-X %s is %q for one binary and %q for %s", sym, prev, val, b.Name)
				}
				stamped[sym] = val
				f += " " + fields[i]
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return strings.Join(out, " "), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goModuleDir is the folder of module (as src's go.mod requires it) in
// the module cache, downloaded when it is not there yet.
func goModuleDir(ctx context.Context, goBin, src, module string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", module)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %v\n%s", module, err, lastLines(stderr.String(), 5))
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no folder in its answer (%v %s)", module, err, info.Error)
	}
	return info.Dir, nil
}

// patchedModule copies b's source module from the module cache into src,
// applies b's patches there, and has src's go.mod build with that copy
// (a replace directive): go build -overlay may not replace files in the
// module cache. It fails when a patch does not apply as written (the
// pinned module changed).
func patchedModule(src string, b Binary, moduleDir string, mod []byte) error {
	dir := filepath.Join(src, "patched-"+b.Name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	err := filepath.WalkDir(moduleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleDir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copying %s: %w", moduleDir, err)
	}
	for _, p := range b.patches {
		file := filepath.Join(dir, filepath.FromSlash(p.file))
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if n := strings.Count(string(data), p.old); n != p.count {
			return fmt.Errorf("patch of %s: %q occurs %d times, want %d", p.file, p.old, n, p.count)
		}
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(data), p.old, p.new)), 0o644); err != nil {
			return err
		}
	}
	f, err := modfile.Parse("go.mod", mod, nil)
	if err != nil {
		return err
	}
	if err := f.AddReplace(b.source, "", "./patched-"+b.Name, ""); err != nil {
		return err
	}
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(src, "go.mod"), out, 0o644)
}

// copyManifests copies the YAML files of the module's folders into dest.
func copyManifests(moduleDir string, folders []string, dest string) error {
	if len(folders) == 0 {
		return nil
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	copied := 0
	for _, f := range folders {
		files, err := filepath.Glob(filepath.Join(moduleDir, filepath.FromSlash(f), "*.yaml"))
		if err != nil {
			return err
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dest, filepath.Base(file)), data, 0o644); err != nil {
				return err
			}
			copied++
		}
	}
	if copied == 0 {
		return fmt.Errorf("no manifests in %s of %s", strings.Join(folders, ", "), moduleDir)
	}
	return nil
}
