// Package tui is the Bubble Tea mission console: the fleet map, GPU
// allocation, control-plane sparklines and the runs in progress, drawn
// from what fleet/watch and metrics/poll send, with keys that start the
// same runs the command line does.
package tui
