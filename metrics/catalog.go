package metrics

import "fmt"

// Query is one named question about the control plane: the seed's PromQL
// cheat sheet and the upstream scalability SLIs, in one place for the
// console, snapshots and reports.
type Query struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit"` // seconds, pods/s, requests/s, bytes, requests
	// PromQL may group by labels; each resulting series is charted apart.
	PromQL string `json:"promql"`
	// SLO is the upstream threshold on every series, when there is one.
	SLO *SLO `json:"slo,omitempty"`
}

// SLO is a threshold the series must stay at or under.
type SLO struct {
	Threshold   float64 `json:"threshold"`
	Description string  `json:"description"`
}

func slo(threshold float64, description string) *SLO {
	return &SLO{Threshold: threshold, Description: description}
}

// sliWindow is the window the upstream SLOs are defined over.
const sliWindow = "5m"

// Catalog lists every query, in the order reports show them.
var Catalog = []Query{
	{
		ID: "apiserver-p99-by-verb", Title: "API call latency p99 by verb", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(apiserver_request_duration_seconds_bucket{verb!~"WATCH|CONNECT"}[1m])) by (verb, le))`,
	},
	{
		ID: "sli-mutating-p99", Title: "Mutating API calls p99 (SLI) by resource and verb", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(apiserver_request_sli_duration_seconds_bucket{verb=~"POST|PUT|PATCH|DELETE"}[` + sliWindow + `])) by (resource, subresource, verb, le))`,
		SLO:    slo(1, "mutating API calls: p99 ≤ 1s per resource and verb over 5 minutes"),
	},
	{
		ID: "sli-read-single-p99", Title: "Single-object reads p99 (SLI) by resource", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(apiserver_request_sli_duration_seconds_bucket{verb="GET"}[` + sliWindow + `])) by (resource, subresource, le))`,
		SLO:    slo(1, "single-object reads: p99 ≤ 1s per resource over 5 minutes"),
	},
	{
		ID: "sli-list-p99", Title: "List calls p99 (SLI) by resource and scope", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(apiserver_request_sli_duration_seconds_bucket{verb="LIST"}[` + sliWindow + `])) by (resource, scope, le))`,
		SLO:    slo(30, "list calls: p99 ≤ 30s per resource (cluster scope) over 5 minutes"),
	},
	{
		ID: "scheduler-throughput", Title: "Scheduler throughput", Unit: "pods/s",
		PromQL: `sum(rate(scheduler_schedule_attempts_total{result="scheduled"}[1m]))`,
	},
	{
		ID: "scheduler-pending", Title: "Pods waiting in the scheduler by queue", Unit: "pods",
		PromQL: `sum(scheduler_pending_pods) by (queue)`,
	},
	{
		ID: "scheduling-sli-p99", Title: "End-to-end scheduling latency p99", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(scheduler_pod_scheduling_sli_duration_seconds_bucket[` + sliWindow + `])) by (le))`,
		SLO:    slo(5, "pod scheduling, the control plane's part of pod startup: p99 ≤ 5s over 5 minutes"),
	},
	{
		ID: "etcd-request-p99", Title: "etcd request latency p99 by operation", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(etcd_request_duration_seconds_bucket[1m])) by (operation, le))`,
	},
	{
		ID: "etcd-db-size", Title: "etcd database size", Unit: "bytes",
		PromQL: `max(etcd_mvcc_db_total_size_in_bytes)`,
	},
	{
		ID: "apf-dispatched", Title: "APF dispatched requests by priority level", Unit: "requests/s",
		PromQL: `sum(rate(apiserver_flowcontrol_dispatched_requests_total[1m])) by (priority_level)`,
	},
	{
		ID: "apf-rejected", Title: "APF rejected requests by priority level and reason", Unit: "requests/s",
		PromQL: `sum(rate(apiserver_flowcontrol_rejected_requests_total[1m])) by (priority_level, reason)`,
	},
	{
		ID: "apf-wait-p99", Title: "APF queue wait p99 by priority level", Unit: "seconds",
		PromQL: `histogram_quantile(0.99, sum(rate(apiserver_flowcontrol_request_wait_duration_seconds_bucket[1m])) by (priority_level, le))`,
	},
	{
		// The seed's apiserver_registered_watchers is gone from current
		// apiservers; open WATCH requests per resource answer the same.
		ID: "watchers", Title: "Watches by resource", Unit: "watchers",
		PromQL: `sum(apiserver_registered_watchers) by (kind) or sum(apiserver_longrunning_requests{verb="WATCH"}) by (resource)`,
	},
	{
		ID: "inflight", Title: "Requests in flight by kind", Unit: "requests",
		PromQL: `sum(apiserver_current_inflight_requests) by (request_kind)`,
	},
	{
		// DCGM series exist on fleets brought up with --dcgm (kwok's
		// Metric resource); elsewhere this query has no data.
		ID: "gpu-util", Title: "Fleet GPU utilisation (DCGM, all GPUs)", Unit: "percent",
		PromQL: `avg(DCGM_FI_DEV_GPU_UTIL)`,
	},
}

// Lookup returns the catalog query with the given id.
func Lookup(id string) (Query, error) {
	for _, q := range Catalog {
		if q.ID == id {
			return q, nil
		}
	}
	return Query{}, fmt.Errorf("unknown query %q", id)
}
