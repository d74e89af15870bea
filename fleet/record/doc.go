// Package record writes and reads run records: one new folder per run
// under the results root (see DefaultRoot), never reused, with files that
// appear whole or not at all. The committed runs are in the checkout's
// results/ folder; this package holds no runs itself.
package record
