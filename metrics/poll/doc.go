// Package poll queries the metrics catalog's sparkline series at a bounded
// rate and sends each round as a MetricsView on a channel, for the
// console's charts.
package poll
