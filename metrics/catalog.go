package metrics

import (
	"fmt"
	"time"
)

// Query is one named question about the control plane: the seed's PromQL
// cheat sheet and the upstream scalability SLIs, in one place for the
// console, snapshots and reports.
type Query struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit"` // seconds, pods/s, requests/s, bytes, requests
	// PromQL may group by labels; each resulting series is charted apart.
	// It is generated from Expr, the one definition both sources answer.
	PromQL string `json:"promql"`
	Expr   Expr   `json:"-"`
	// Component is whose /metrics answers it (ComponentAPIServer, …):
	// where that one is hidden the query is not available.
	Component string `json:"component"`
	// SLO is the upstream threshold on every series, when there is one.
	SLO *SLO `json:"slo,omitempty"`
}

// SLO is a threshold the series must stay at or under.
type SLO struct {
	Threshold   float64 `json:"threshold"`
	Description string  `json:"description"`
	// Origin says whose target this is: OriginUpstream (sig-scalability's
	// SLO documents, Source links the definition) or OriginGhostFleet (a
	// target of our own, not an upstream SLO).
	Origin string `json:"origin"`
	Source string `json:"source,omitempty"`
}

// SLO origins.
const (
	OriginUpstream   = "upstream"
	OriginGhostFleet = "ghostfleet"
)

// The upstream definitions the SLOs are taken from.
const (
	SourceAPICallLatency    = "https://github.com/kubernetes/community/blob/master/sig-scalability/slos/api_call_latency.md"
	SourcePodStartupLatency = "https://github.com/kubernetes/community/blob/master/sig-scalability/slos/pod_startup_latency.md"
)

// upstreamAPISLO is one of the API call latency SLO's thresholds.
func upstreamAPISLO(threshold float64, description string) *SLO {
	return &SLO{Threshold: threshold, Description: description, Origin: OriginUpstream, Source: SourceAPICallLatency}
}

// ownTarget is a threshold GhostFleet sets itself; reports label it so.
func ownTarget(threshold float64, description string) *SLO {
	return &SLO{Threshold: threshold, Description: description, Origin: OriginGhostFleet}
}

// sliWindow is the window the upstream SLOs are defined over.
const sliWindow = 5 * time.Minute

func p99(histogram string, window time.Duration, by []string, m ...Matcher) Expr {
	return Expr{Kind: QuantileOfRate, Quantile: 0.99, Metric: histogram, Window: window, By: by, Matchers: m}
}

func sumRate(counter string, by []string, m ...Matcher) Expr {
	return Expr{Kind: SumOfRate, Metric: counter, Window: time.Minute, By: by, Matchers: m}
}

func sumGauge(gauge string, by []string, m ...Matcher) Expr {
	return Expr{Kind: GaugeSum, Metric: gauge, By: by, Matchers: m}
}

func labels(l ...string) []string { return l }

// Catalog lists every query, in the order reports show them.
var Catalog = withPromQL([]Query{
	{
		ID: "apiserver-p99-by-verb", Component: ComponentAPIServer, Title: "API call latency p99 by verb", Unit: "seconds",
		Expr: p99("apiserver_request_duration_seconds", time.Minute, labels("verb"), notRe("verb", "WATCH|CONNECT")),
	},
	{
		ID: "sli-mutating-p99", Component: ComponentAPIServer, Title: "Mutating API calls p99 (SLI) by resource and verb", Unit: "seconds",
		Expr: p99("apiserver_request_sli_duration_seconds", sliWindow, labels("resource", "subresource", "verb"), re("verb", "POST|PUT|PATCH|DELETE"), eq("scope", "resource")),
		SLO:  upstreamAPISLO(1, "mutating API calls on single objects (scope resource, creates included): p99 ≤ 1s per resource and verb over 5 minutes"),
	},
	{
		ID: "sli-read-single-p99", Component: ComponentAPIServer, Title: "Single-object reads p99 (SLI) by resource", Unit: "seconds",
		Expr: p99("apiserver_request_sli_duration_seconds", sliWindow, labels("resource", "subresource"), eq("verb", "GET"), eq("scope", "resource")),
		SLO:  upstreamAPISLO(1, "read-only calls on a single object (scope resource): p99 ≤ 1s per resource over 5 minutes"),
	},
	{
		// Upstream judges read-only calls per (resource, scope): a LIST
		// within one namespace gets 5s, only a cluster-wide one 30s.
		// ClusterLoader2's APIResponsivenessPrometheus allows 30s for both.
		ID: "sli-list-namespace-p99", Component: ComponentAPIServer, Title: "Namespace-scoped list calls p99 (SLI) by resource", Unit: "seconds",
		Expr: p99("apiserver_request_sli_duration_seconds", sliWindow, labels("resource", "scope"), eq("verb", "LIST"), eq("scope", "namespace")),
		SLO:  upstreamAPISLO(5, "namespace-scoped read-only calls (LIST in one namespace): p99 ≤ 5s per resource over 5 minutes"),
	},
	{
		ID: "sli-list-cluster-p99", Component: ComponentAPIServer, Title: "Cluster-scoped list calls p99 (SLI) by resource", Unit: "seconds",
		Expr: p99("apiserver_request_sli_duration_seconds", sliWindow, labels("resource", "scope"), eq("verb", "LIST"), eq("scope", "cluster")),
		SLO:  upstreamAPISLO(30, "cluster-scoped read-only calls (LIST across namespaces): p99 ≤ 30s per resource over 5 minutes"),
	},
	{
		ID: "scheduler-throughput", Component: ComponentScheduler, Title: "Scheduler throughput", Unit: "pods/s",
		Expr: sumRate("scheduler_schedule_attempts_total", nil, eq("result", "scheduled")),
	},
	{
		ID: "scheduler-pending", Component: ComponentScheduler, Title: "Pods waiting in the scheduler by queue", Unit: "pods",
		Expr: sumGauge("scheduler_pending_pods", labels("queue")),
	},
	{
		ID: "scheduling-sli-p99", Component: ComponentScheduler, Title: "End-to-end scheduling latency p99", Unit: "seconds",
		Expr: p99("scheduler_pod_scheduling_sli_duration_seconds", sliWindow, nil),
		SLO:  ownTarget(5, "scheduling latency (scheduler_pod_scheduling_sli_duration_seconds): p99 ≤ 5s over 5 minutes"),
	},
	{
		// The apiserver's own timing of its etcd calls: it answers where
		// etcd's /metrics is hidden.
		ID: "etcd-request-p99", Component: ComponentAPIServer, Title: "etcd request latency p99 by operation", Unit: "seconds",
		Expr: p99("etcd_request_duration_seconds", time.Minute, labels("operation")),
	},
	{
		ID: "etcd-db-size", Component: ComponentEtcd, Title: "etcd database size", Unit: "bytes",
		Expr: Expr{Kind: GaugeMax, Metric: "etcd_mvcc_db_total_size_in_bytes"},
	},
	{
		// The running etcd's --quota-backend-bytes: past it etcd raises
		// NOSPACE and refuses writes (kwokctl starts etcd with 8 GiB).
		ID: "etcd-quota", Component: ComponentEtcd, Title: "etcd backend quota", Unit: "bytes",
		Expr: Expr{Kind: GaugeMax, Metric: "etcd_server_quota_backend_bytes"},
	},
	{
		ID: "apf-dispatched", Component: ComponentAPIServer, Title: "APF dispatched requests by priority level", Unit: "requests/s",
		Expr: sumRate("apiserver_flowcontrol_dispatched_requests_total", labels("priority_level")),
	},
	{
		ID: "apf-rejected", Component: ComponentAPIServer, Title: "APF rejected requests by priority level and reason", Unit: "requests/s",
		Expr: sumRate("apiserver_flowcontrol_rejected_requests_total", labels("priority_level", "reason")),
	},
	{
		ID: "apf-wait-p99", Component: ComponentAPIServer, Title: "APF queue wait p99 by priority level", Unit: "seconds",
		Expr: p99("apiserver_flowcontrol_request_wait_duration_seconds", time.Minute, labels("priority_level")),
	},
	{
		// The seed's apiserver_registered_watchers is gone from current
		// apiservers; open WATCH requests per resource answer the same.
		ID: "watchers", Component: ComponentAPIServer, Title: "Watches by resource", Unit: "watchers",
		Expr: func() Expr {
			e := sumGauge("apiserver_registered_watchers", labels("kind"))
			fallback := sumGauge("apiserver_longrunning_requests", labels("resource"), eq("verb", "WATCH"))
			e.Or = &fallback
			return e
		}(),
	},
	{
		ID: "inflight", Component: ComponentAPIServer, Title: "Requests in flight by kind", Unit: "requests",
		Expr: sumGauge("apiserver_current_inflight_requests", labels("request_kind")),
	},
	{
		// DCGM series exist on fleets brought up with --dcgm (kwok's
		// Metric resource); elsewhere this query has no data.
		ID: "gpu-util", Component: ComponentKwok, Title: "Fleet GPU utilisation (DCGM, all GPUs)", Unit: "percent",
		Expr: Expr{Kind: GaugeAvg, Metric: "DCGM_FI_DEV_GPU_UTIL"},
	},
})

// withPromQL compiles every query's expression and renders its PromQL: a
// malformed catalog entry stops the program at start, not mid-snapshot.
func withPromQL(qs []Query) []Query {
	for i := range qs {
		if qs[i].Component == "" {
			panic(fmt.Sprintf("catalog query %s: no component", qs[i].ID))
		}
		if err := qs[i].Expr.compile(); err != nil {
			panic(fmt.Sprintf("catalog query %s: %v", qs[i].ID, err))
		}
		qs[i].PromQL = qs[i].Expr.PromQL()
	}
	return qs
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
