// Package metrics holds the catalog of control-plane queries and the two
// sources that answer it: Prometheus's HTTP API (through client_golang's
// API client) and a direct scrape of the components' /metrics, evaluated
// the way Prometheus would.
package metrics
