// Package tui will hold the Bubble Tea mission console (fleet map, GPU
// allocation, control-plane sparklines, keys that start runs). It is not
// built yet: every console action exists today as a subcommand, and the
// console will call the same fleet and workload code.
package tui
