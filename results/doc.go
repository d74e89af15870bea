// Package results writes runs under results/: one new folder per run,
// never reused, with files that appear whole or not at all. Committed run
// folders live beside this file on purpose.
package results
