// Package metrics reads the control plane's metrics: Prometheus's HTTP API
// (through client_golang's API client) and its scrape targets.
package metrics
