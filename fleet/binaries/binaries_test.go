package binaries

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

func TestPinnedVersionsComeFromTheModules(t *testing.T) {
	v := Pinned()
	tests := []struct{ name, got, prefix string }{
		{"kubernetes", v.Kubernetes, "v1.36."},
		{"etcd", v.Etcd, "v3.6."},
		{"kwok", v.Kwok, "v0.8."},
		{"prometheus", v.Prometheus, "v3."},
		{"metrics-server", v.MetricsServer, "v0.8."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.HasPrefix(tt.got, tt.prefix) {
				t.Errorf("%s = %q, want prefix %q", tt.name, tt.got, tt.prefix)
			}
		})
	}
	if want := "k8s-" + v.Kubernetes + "_etcd-" + v.Etcd + "_kwok-" + v.Kwok + "_prometheus-" + v.Prometheus; v.SetName() != want {
		t.Errorf("SetName() = %q, want %q", v.SetName(), want)
	}
}

func TestControlPlaneModuleReplacesEveryStagingModuleWithTheSameMinor(t *testing.T) {
	v := Pinned()
	minor := "v0." + strings.Split(v.Kubernetes, ".")[1] + "."
	n := 0
	for _, line := range strings.Split(string(controlPlaneMod), "\n") {
		if strings.Contains(line, "=> k8s.io/") {
			n++
			if !strings.Contains(line, minor) {
				t.Errorf("replace %q is not at %s*", strings.TrimSpace(line), minor)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d staging replaces, want the full list (>= 20)", n)
	}
}

func TestPrometheusRelease(t *testing.T) {
	tests := []struct {
		module, want string
		wantErr      bool
	}{
		{"v0.316.0", "v3.16.0", false},
		{"v0.300.1", "v3.0.1", false},
		{"v0.54.1", "", true},
		{"v2.53.0", "", true},
		{"v0.x.0", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			got, err := prometheusRelease(tt.module)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("prometheusRelease(%q) = %q, %v; want %q, err %v", tt.module, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLookupAndEnvVar(t *testing.T) {
	b, err := Lookup(KubeApiserver)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.EnvVar(); got != "GHOSTFLEET_KUBE_APISERVER_BINARY" {
		t.Errorf("EnvVar = %q", got)
	}
	if _, err := Lookup("kubelet"); err == nil || !strings.Contains(err.Error(), `"kubelet"`) || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("Lookup(kubelet) error = %v, want it to name the value and the allowed names", err)
	}
}

func TestVersionMatches(t *testing.T) {
	v := Pinned()
	if !VersionMatches("Kubernetes "+v.Kubernetes, v.VersionOf(KubeScheduler)) {
		t.Error("kube-scheduler line does not match")
	}
	if !VersionMatches("etcd Version: "+strings.TrimPrefix(v.Etcd, "v"), v.VersionOf(Etcd)) {
		t.Error("etcd line does not match")
	}
	if VersionMatches("Kubernetes v0.0.0-master+$Format:%H$", v.VersionOf(KubeApiserver)) {
		t.Error("an unstamped build must not match")
	}
}

func writeExec(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindOrderFlagThenEnvThenCache(t *testing.T) {
	dir := t.TempDir()
	flagPath := filepath.Join(dir, "flag", "etcd")
	envPath := filepath.Join(dir, "env", "etcd")
	writeExec(t, flagPath, "")
	writeExec(t, envPath, "")
	env := map[string]string{"GHOSTFLEET_ETCD_BINARY": envPath}
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), Getenv: func(k string) string { return env[k] }}
	for _, b := range All {
		writeExec(t, filepath.Join(r.CacheDir(), b.Name), "")
	}

	tests := []struct {
		name     string
		explicit map[string]string
		want     string
		source   Source
	}{
		{"flag wins", map[string]string{Etcd: flagPath}, flagPath, SourceFlag},
		{"env next", nil, envPath, SourceEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.Explicit = tt.explicit
			found, missing, err := r.Find()
			if err != nil {
				t.Fatal(err)
			}
			if len(missing) != 0 {
				t.Fatalf("missing %v", missing)
			}
			if got := found[Etcd]; got.Path != tt.want || got.Source != tt.source {
				t.Errorf("etcd = %s (%s), want %s (%s)", got.Path, got.Source, tt.want, tt.source)
			}
			if got := found[KubeApiserver]; got.Source != SourceCache {
				t.Errorf("kube-apiserver source = %s, want cache", got.Source)
			}
		})
	}
}

func TestFindRejectsBadExplicitPaths(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "prometheus")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		explicit map[string]string
		want     string
	}{
		{"unknown name", map[string]string{"kubelet": notExec}, `unknown binary "kubelet"`},
		{"missing file", map[string]string{Prometheus: filepath.Join(dir, "nope")}, "not found"},
		{"not executable", map[string]string{Prometheus: notExec}, "not an executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{Versions: Pinned(), CacheRoot: dir, Explicit: tt.explicit, Getenv: func(string) string { return "" }}
			_, _, err := r.Find()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Find() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestResolveWithoutGoSaysWhatToDo(t *testing.T) {
	r := &Resolver{Versions: Pinned(), CacheRoot: t.TempDir(), GoBinary: "/nonexistent/go", Getenv: func(string) string { return "" }}
	_, err := r.Resolve(context.Background())
	if !errors.Is(err, ErrNoGo) {
		t.Fatalf("Resolve() error = %v, want ErrNoGo", err)
	}
	for _, want := range []string{"kube-apiserver", "--binary", "Go 1.26"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// fakeGo is a stand-in go command: it records its arguments in logFile and
// writes the -o file, or with -o DIR/ one file per package named as go
// names it, so the build path (module files, ldflags, atomic rename,
// progress) is tested without compiling Kubernetes.
func fakeGo(logFile string) string {
	return `echo "$PWD $*" >> ` + logFile + `
out=""; pkgs=""
while [ $# -gt 0 ]; do
	case "$1" in -o) out=$2; shift;; -ldflags) shift;; build|-*) ;; *) pkgs="$pkgs $1";; esac
	shift
done
case "$out" in
*/) for p in $pkgs; do n=${p##*/}; case $n in v[0-9]*) q=${p%/*}; n=${q##*/};; esac; printf '#!/bin/sh\n' > "$out$n"; chmod +x "$out$n"; done;;
*) printf '#!/bin/sh\n' > "$out"; chmod +x "$out";;
esac`
}

// The control plane's seven binaries are one go build; Prometheus another.
func TestResolveBuildsMissingBinariesIntoTheCache(t *testing.T) {
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	logFile := filepath.Join(dir, "calls")
	writeExec(t, goBin, fakeGo(logFile))
	var events []progress.Event
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), GoBinary: goBin,
		Getenv: func(string) string { return "" }, Report: func(e progress.Event) { events = append(events, e) }}
	set, err := r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range All {
		got := set[b.Name]
		if got.Source != SourceBuilt || got.Path != filepath.Join(r.CacheDir(), b.Name) {
			t.Errorf("%s = %+v, want built into the cache", b.Name, got)
		}
		if _, err := os.Stat(got.Path + ".building"); !os.IsNotExist(err) {
			t.Errorf("%s: temporary file left behind", b.Name)
		}
	}
	calls, _ := os.ReadFile(logFile)
	if !strings.Contains(string(calls), "k8s.io/component-base/version.gitVersion="+r.Versions.Kubernetes) {
		t.Errorf("kube builds are not stamped with the version:\n%s", calls)
	}
	if !strings.Contains(string(calls), "github.com/prometheus/common/version.Version=") {
		t.Errorf("prometheus build is not stamped:\n%s", calls)
	}
	starts := 0
	for _, e := range events {
		if e.Kind == progress.Start {
			starts++
			if e.Estimate <= 0 {
				t.Errorf("step %q has no estimate", e.Step)
			}
		}
	}
	if starts != 2 {
		t.Errorf("%d build steps reported, want 2 (the control plane, then Prometheus)", starts)
	}
	if lines := strings.Split(strings.TrimSpace(string(calls)), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], "go.etcd.io/etcd/server/v3") || !strings.Contains(lines[0], "k8s.io/kubernetes/cmd/kube-apiserver") ||
		!strings.Contains(lines[0], "sigs.k8s.io/kwok/pkg/consts.Version=") {
		t.Errorf("builds:\n%s\nwant one of the whole control plane with every binary's ldflags, then Prometheus", calls)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(r.CacheDir(), ".building-*")); len(leftovers) > 0 {
		t.Errorf("temporary build folders left behind: %v", leftovers)
	}

	// A second resolve finds everything in the cache and builds nothing.
	if err := os.Remove(logFile); err != nil {
		t.Fatal(err)
	}
	set, err = r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if set[Prometheus].Source != SourceCache {
		t.Errorf("second resolve: prometheus source %s, want cache", set[Prometheus].Source)
	}
	if _, err := os.Stat(logFile); !os.IsNotExist(err) {
		t.Error("second resolve ran go build")
	}
}

func TestFailedBuildLeavesNothingInTheCache(t *testing.T) {
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	writeExec(t, goBin, `echo "compile error: boom" >&2; exit 1`)
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), GoBinary: goBin, Getenv: func(string) string { return "" }}
	_, err := r.Resolve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("Resolve() error = %v, want the build's stderr and the binary's name", err)
	}
	if entries, _ := os.ReadDir(r.CacheDir()); len(entries) != 0 {
		t.Errorf("cache holds %d entries after a failed build", len(entries))
	}
}

// metrics-server is built only when asked for (Also), into a folder named
// after its own version: the control plane's cache folder, named after
// the version set, does not change with it.
func TestMetricsServerIsBuiltOnDemandOutsideTheVersionSet(t *testing.T) {
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	logFile := filepath.Join(dir, "calls")
	writeExec(t, goBin, fakeGo(logFile))
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), GoBinary: goBin, Getenv: func(string) string { return "" }}
	for _, b := range All {
		writeExec(t, filepath.Join(r.CacheDir(), b.Name), "")
	}
	set, err := r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set[MetricsServer]; ok {
		t.Error("metrics-server resolved without being asked for")
	}
	ms, err := Lookup(MetricsServer)
	if err != nil {
		t.Fatal(err)
	}
	r.Also = []Binary{ms}
	set, err = r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(r.CacheRoot, "metrics-server-"+r.Versions.MetricsServer, "metrics-server")
	if got := set[MetricsServer]; got.Path != want || got.Source != SourceBuilt {
		t.Errorf("metrics-server = %+v, want built at %s", got, want)
	}
	calls, _ := os.ReadFile(logFile)
	if !strings.Contains(string(calls), "k8s.io/client-go/pkg/version.gitVersion="+r.Versions.MetricsServer) ||
		!strings.Contains(string(calls), "sigs.k8s.io/metrics-server/cmd/metrics-server") || strings.Count(string(calls), "\n") != 1 {
		t.Errorf("builds:\n%s\nwant one, of metrics-server, stamped with its version", calls)
	}
	if strings.Contains(r.Versions.SetName(), "metrics") {
		t.Errorf("SetName %s names metrics-server: pinning it would rebuild the control plane", r.Versions.SetName())
	}
	set, err = r.Resolve(context.Background())
	if err != nil || set[MetricsServer].Source != SourceCache {
		t.Errorf("second resolve: %+v, %v; want the cached build", set[MetricsServer], err)
	}
}

// fakeDebian puts stand-ins for apt-get and dpkg-deb first on PATH: apt-get
// download writes a prometheus .deb (or fails when fail is set), dpkg-deb
// reads its version and extracts usr/bin/prometheus. It returns the file
// apt-get logs its calls to.
func fakeDebian(t *testing.T, fail bool) string {
	t.Helper()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "apt-calls")
	download := `touch prometheus_2.42.0+ds-5+b5_amd64.deb`
	if fail {
		download = `echo "E: Unable to locate package prometheus" >&2; exit 100`
	}
	writeExec(t, filepath.Join(dir, "apt-get"), `echo "$*" >> `+logFile+`
case "$1" in download) `+download+`;; update) ;; esac`)
	writeExec(t, filepath.Join(dir, "dpkg-deb"), `case "$1" in
-f) echo 2.42.0+ds-5+b5;;
-x) mkdir -p "$3/usr/bin" && printf '#!/bin/sh\necho "prometheus, version 2.42.0+ds (branch: debian/sid)"\n' > "$3/usr/bin/prometheus";;
esac`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logFile
}

// auto takes Debian's Prometheus instead of building it, caches it beside
// the version sets, and finds it there the next time without apt.
func TestAutoTakesPrometheusFromDebiansPackage(t *testing.T) {
	aptLog := fakeDebian(t, false)
	dir := t.TempDir()
	goLog := filepath.Join(dir, "go-calls")
	writeExec(t, filepath.Join(dir, "go"), fakeGo(goLog))
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), GoBinary: filepath.Join(dir, "go"),
		Getenv: func(string) string { return "" }, PrometheusFrom: PrometheusAuto}
	set, err := r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := set[Prometheus]
	want := filepath.Join(r.CacheRoot, "prometheus-debian-2.42.0+ds-5+b5", Prometheus)
	if got.Source != SourceDebian || got.Path != want || got.Version != "v2.42.0" {
		t.Errorf("prometheus = %+v, want Debian's v2.42.0 at %s", got, want)
	}
	if calls, _ := os.ReadFile(goLog); strings.Contains(string(calls), "prometheus/cmd/prometheus") {
		t.Errorf("Prometheus was built as well:\n%s", calls)
	}
	if err := os.Remove(aptLog); err != nil {
		t.Fatal(err)
	}
	found, missing, err := r.Find()
	if err != nil || len(missing) != 0 || found[Prometheus].Source != SourceDebian {
		t.Errorf("second Find: %+v missing %v, %v; want Debian's from the cache", found[Prometheus], missing, err)
	}
	if _, err := os.Stat(aptLog); !os.IsNotExist(err) {
		t.Error("the second resolve ran apt-get")
	}
	// build ignores it and builds the pinned version.
	r.PrometheusFrom = PrometheusBuild
	if _, missing, _ := r.Find(); len(missing) != 1 || missing[0].Name != Prometheus {
		t.Errorf("with build, missing = %v, want the pinned Prometheus", missing)
	}
}

// Where apt cannot fetch the package, auto builds the pinned version and
// says why; debian fails and names the cause.
func TestDebianPrometheusUnavailable(t *testing.T) {
	fakeDebian(t, true)
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "go"), fakeGo(filepath.Join(dir, "go-calls")))
	var infos []string
	r := &Resolver{Versions: Pinned(), CacheRoot: filepath.Join(dir, "cache"), GoBinary: filepath.Join(dir, "go"),
		Getenv: func(string) string { return "" }, PrometheusFrom: PrometheusAuto,
		Report: func(e progress.Event) {
			if e.Kind == progress.Info {
				infos = append(infos, e.Message)
			}
		}}
	set, err := r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if set[Prometheus].Source != SourceBuilt {
		t.Errorf("prometheus = %+v, want the pinned build", set[Prometheus])
	}
	if !strings.Contains(strings.Join(infos, "\n"), "Unable to locate package prometheus") {
		t.Errorf("progress does not say why Debian's package was not used:\n%s", strings.Join(infos, "\n"))
	}

	r = &Resolver{Versions: Pinned(), CacheRoot: t.TempDir(), GoBinary: filepath.Join(dir, "go"),
		Getenv: func(string) string { return "" }, PrometheusFrom: PrometheusDebian}
	if _, err := r.Resolve(context.Background()); err == nil || !strings.Contains(err.Error(), "Unable to locate package prometheus") {
		t.Errorf("debian without a package: error %v, want apt's reason", err)
	}
}

func TestDebianUpstream(t *testing.T) {
	for in, want := range map[string]string{"2.42.0+ds-5+b5": "v2.42.0", "2.53.3+ds1-1": "v2.53.3", "1:2.45.0-1": "v2.45.0", "2.42.0": "v2.42.0"} {
		if got := debianUpstream(in); got != want {
			t.Errorf("debianUpstream(%q) = %q, want %q", in, got, want)
		}
	}
	if err := CheckPrometheusFrom("apt"); err == nil || !strings.Contains(err.Error(), `"apt"`) || !strings.Contains(err.Error(), "auto, build, debian") {
		t.Errorf("CheckPrometheusFrom(apt) = %v, want the value and what is allowed", err)
	}
}

// make build compiles GhostFleet with the control plane's flags, or a
// first run compiles the packages they share twice.
func TestMakeBuildUsesTheControlPlanesCompileFlags(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "build") && strings.Contains(l, "-o $(BIN)") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no `go build … -o $(BIN)` line in the Makefile")
	}
	for _, f := range append(CompileFlags, "GOGC=$${GOGC:-"+CompileGOGC+"}") {
		if !slices.Contains(strings.Fields(line), f) {
			t.Errorf("make build (%q) lacks %s", strings.TrimSpace(line), f)
		}
	}
}

// GhostFleet's own module requires what the control plane's pinned module
// does, wherever both require a module: a package compiled against other
// versions of its dependencies is compiled again, and on a first run the
// control plane's build would redo most of client-go (see CompileFlags).
// The exception is named with its reason.
func TestGhostFleetRequiresTheControlPlanesVersions(t *testing.T) {
	exceptions := map[string]string{
		"github.com/clipperhouse/uax29/v2": "terminal text widths, for the console's bubbles only; the control plane's packages do not import it",
	}
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := effectiveVersions("go.mod", data)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := effectiveVersions("controlplane.mod", controlPlaneMod)
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for path, v := range ours {
		cp, ok := theirs[path]
		if !ok {
			continue
		}
		shared++
		if v != cp && exceptions[path] == "" {
			t.Errorf("go.mod has %s %s, the control plane builds with %s: align them (go get %s@%s, or a replace)", path, v, cp, path, cp)
		}
	}
	if shared < 50 {
		t.Errorf("only %d modules in common: the comparison is broken", shared)
	}
}

// effectiveVersions maps each required module to the version a build uses:
// its replacement's where a replace names one.
func effectiveVersions(name string, data []byte) (map[string]string, error) {
	out, err := requires(name, data)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range f.Replace {
		if _, ok := out[r.Old.Path]; ok && r.New.Version != "" && (r.Old.Version == "" || r.Old.Version == out[r.Old.Path]) {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out, nil
}
