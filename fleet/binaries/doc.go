// Package binaries finds the control-plane executables (flags, environment,
// per-version cache) and builds missing ones from the pinned Go modules
// embedded in this package.
package binaries
