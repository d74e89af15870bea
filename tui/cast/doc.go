// Package cast records what a terminal program draws as an asciinema v2
// cast, the format every terminal-recording player reads: the console's
// --record wraps its output writer with one.
package cast
