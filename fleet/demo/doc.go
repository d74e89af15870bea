// Package demo plays scripted demos for talks: a Demo file's steps, each
// a run through the run API (fleet/runs) with a one-line caption, advanced
// by a presenter's key or, in auto mode, by a condition, a time or the
// run's end. The console shows the captions; this package never draws.
package demo
