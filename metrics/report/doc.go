// Package report turns run records and metrics into files a person reads:
// snapshots (every catalog query over a window and an SLO verdict each),
// self-contained HTML reports, comparisons of two snapshots, ClusterLoader2's
// own report read back, and the static site indexing every run folder.
package report
