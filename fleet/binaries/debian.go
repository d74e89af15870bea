package binaries

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// Where Prometheus comes from when no --binary or variable names one
// and the pinned build is not in the cache (Resolver.PrometheusFrom).
const (
	// PrometheusAuto takes Debian's package where apt can fetch it (a
	// few seconds, against some 7 minutes for the pinned build on 2
	// cores), and builds the pinned version otherwise.
	PrometheusAuto = "auto"
	// PrometheusBuild always builds the pinned version.
	PrometheusBuild = "build"
	// PrometheusDebian takes Debian's package, or fails.
	PrometheusDebian = "debian"
)

// PrometheusFromValues lists the allowed values of Resolver.PrometheusFrom.
var PrometheusFromValues = []string{PrometheusAuto, PrometheusBuild, PrometheusDebian}

// SourceDebian marks Prometheus taken from Debian's package.
const SourceDebian Source = "debian package"

// CheckPrometheusFrom says which values are allowed when from is not one.
func CheckPrometheusFrom(from string) error {
	for _, v := range PrometheusFromValues {
		if from == v {
			return nil
		}
	}
	return fmt.Errorf("prometheus source %q is not one of %s", from, strings.Join(PrometheusFromValues, ", "))
}

// debianPrefix names the cache folders of Debian's Prometheus:
// prometheus-debian-<package version>/prometheus, beside the version sets.
const debianPrefix = "prometheus-debian-"

// findDebianPrometheus returns Debian's Prometheus fetched by an earlier
// run, the most recently fetched if there are several.
func (r *Resolver) findDebianPrometheus() (Resolved, bool) {
	b, _ := Lookup(Prometheus)
	dirs, _ := filepath.Glob(filepath.Join(r.CacheRoot, debianPrefix+"*"))
	var best Resolved
	var bestTime time.Time
	for _, dir := range dirs {
		p := filepath.Join(dir, Prometheus)
		st, err := os.Stat(p)
		if err != nil || executable(p) != nil || st.ModTime().Before(bestTime) {
			continue
		}
		best = Resolved{Binary: b, Path: p, Source: SourceDebian, Version: debianUpstream(strings.TrimPrefix(filepath.Base(dir), debianPrefix))}
		bestTime = st.ModTime()
	}
	return best, best.Path != ""
}

// oldestDebianPrometheus is the oldest Debian release GhostFleet takes:
// 2.42 (Debian 12) is the one known to work with kwokctl's configuration
// and GhostFleet's queries; older ones are built from the pinned module
// instead.
const oldestDebianPrometheus = "v2.42.0"

// debianUpstream is the upstream release of a Debian package version:
// 2.42.0+ds-5+b5 → v2.42.0.
func debianUpstream(pkgVersion string) string {
	v := pkgVersion
	if i := strings.IndexAny(v, "+-~"); i >= 0 {
		v = v[:i]
	}
	if _, after, ok := strings.Cut(v, ":"); ok { // an epoch
		v = after
	}
	return "v" + v
}

// fetchDebianPrometheus takes the prometheus binary out of Debian's
// package (apt-get download, dpkg-deb -x: nothing is installed, so no
// service starts listening on every interface) into the cache. When the
// download fails and it runs as root, it runs `apt-get update` and tries
// once more. It gives up after fetchTimeout (a mirror that does not
// answer must not hold `up` for apt's retries).
func (r *Resolver) fetchDebianPrometheus(ctx context.Context) (Resolved, error) {
	b, _ := Lookup(Prometheus)
	done := progress.Step(r.report, "fetch prometheus", fmt.Sprintf("taking Prometheus from Debian's package (apt-get download; building the pinned %s would take ~%.0f minutes)",
		r.Versions.Prometheus, b.Typical.Minutes()), 30*time.Second)
	defer done()
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Resolved{}, fmt.Errorf("prometheus from Debian's package: %s not found (not a Debian system)", tool)
		}
	}
	tmp, err := os.MkdirTemp("", "ghostfleet-prometheus-deb-")
	if err != nil {
		return Resolved{}, err
	}
	defer os.RemoveAll(tmp)
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %v: %s", strings.Join(args, " "), err, lastLines(strings.TrimSpace(out.String()), 3))
		}
		return nil
	}
	if err := apt("download", "-qq", "prometheus"); err != nil {
		if os.Geteuid() != 0 {
			return Resolved{}, fmt.Errorf("prometheus from Debian's package: %w (as root, `apt-get update` may help)", err)
		}
		if uerr := apt("update", "-qq"); uerr != nil {
			return Resolved{}, fmt.Errorf("prometheus from Debian's package: %w", uerr)
		}
		if err := apt("download", "-qq", "prometheus"); err != nil {
			return Resolved{}, fmt.Errorf("prometheus from Debian's package: %w", err)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "prometheus_*.deb"))
	if len(debs) != 1 {
		return Resolved{}, fmt.Errorf("prometheus from Debian's package: apt-get download left %d .deb files", len(debs))
	}
	version, err := exec.CommandContext(ctx, "dpkg-deb", "-f", debs[0], "Version").Output()
	if err != nil {
		return Resolved{}, fmt.Errorf("prometheus from Debian's package: reading its version: %v", err)
	}
	extracted := filepath.Join(tmp, "x")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], extracted).CombinedOutput(); err != nil {
		return Resolved{}, fmt.Errorf("prometheus from Debian's package: dpkg-deb -x: %v: %s", err, out)
	}
	pkgVersion := strings.TrimSpace(string(version))
	if upstream := debianUpstream(pkgVersion); semver.Compare(upstream, oldestDebianPrometheus) < 0 {
		return Resolved{}, fmt.Errorf("the Debian prometheus package is %s, older than %s, the oldest known to work", pkgVersion, oldestDebianPrometheus)
	}
	data, err := os.ReadFile(filepath.Join(extracted, "usr", "bin", Prometheus))
	if err != nil {
		return Resolved{}, fmt.Errorf("the Debian prometheus package has no usr/bin/prometheus: %w", err)
	}
	dir := filepath.Join(r.CacheRoot, debianPrefix+pkgVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Resolved{}, err
	}
	// Written under a name of its own and renamed: two fleets coming up
	// at once never see half a binary, nor take each other's file.
	f, err := os.CreateTemp(dir, ".fetching-")
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	out := filepath.Join(dir, Prometheus)
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		if f != nil {
			_ = os.Remove(f.Name())
		}
		return Resolved{}, fmt.Errorf("caching Debian's prometheus: %w", err)
	}
	return Resolved{Binary: b, Path: out, Source: SourceDebian, Version: debianUpstream(pkgVersion)}, nil
}

// fetchTimeout bounds fetchDebianPrometheus.
const fetchTimeout = 2 * time.Minute
