// Package runs is GhostFleet's run API: one function per kind of run,
// taking an options struct and returning a typed result, called alike by
// the command line (which prints it) and the console (which renders it).
package runs
