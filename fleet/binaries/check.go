package binaries

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ReportedVersion asks the binary for its version (--version; etcdctl
// has a version subcommand instead) and returns the first line.
func ReportedVersion(ctx context.Context, b Binary, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	arg := "--version"
	if b.Name == Etcdctl {
		arg = "version"
	}
	out, err := exec.CommandContext(ctx, path, arg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", path, arg, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first, nil
}

// VersionMatches reports whether a --version line names the wanted version
// (with or without its leading v).
func VersionMatches(line, want string) bool {
	return strings.Contains(line, strings.TrimPrefix(want, "v"))
}

// GoVersion returns `go version` of the toolchain the resolver would build
// with.
func (r *Resolver) GoVersion(ctx context.Context) (string, error) {
	goBin, err := r.goBinary()
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, goBin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %v", goBin, err)
	}
	return strings.TrimSpace(string(out)), nil
}
