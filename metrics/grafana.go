package metrics

import "encoding/json"

// GrafanaDashboard renders the catalog as an importable Grafana dashboard
// (schema 39): one time-series panel per query, two per row, SLO
// thresholds drawn as red threshold lines, the Prometheus data source
// chosen at import.
func GrafanaDashboard() ([]byte, error) {
	type target struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Datasource   any    `json:"datasource"`
	}
	ds := map[string]string{"type": "prometheus", "uid": "${datasource}"}
	units := map[string]string{"seconds": "s", "bytes": "bytes", "pods/s": "short", "requests/s": "reqps", "percent": "percent"}
	var panels []map[string]any
	for i, q := range Catalog {
		unit := units[q.Unit]
		if unit == "" {
			unit = "short"
		}
		thresholds := map[string]any{"mode": "absolute", "steps": []map[string]any{{"color": "green", "value": nil}}}
		custom := map[string]any{"thresholdsStyle": map[string]string{"mode": "off"}}
		if q.SLO != nil {
			thresholds["steps"] = []map[string]any{{"color": "green", "value": nil}, {"color": "red", "value": q.SLO.Threshold}}
			custom["thresholdsStyle"] = map[string]string{"mode": "dashed"}
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": "timeseries", "title": q.Title, "description": q.PromQL, "datasource": ds,
			"gridPos":     map[string]int{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": unit, "thresholds": thresholds, "custom": custom}},
			"targets":     []target{{RefID: "A", Expr: q.PromQL, LegendFormat: "__auto", Datasource: ds}},
		})
	}
	dash := map[string]any{
		"title": "GhostFleet control plane", "uid": "ghostfleet", "schemaVersion": 39, "version": 1,
		"tags": []string{"ghostfleet", "kubernetes", "scalability"}, "time": map[string]string{"from": "now-30m", "to": "now"},
		"refresh": "15s", "panels": panels,
		"templating": map[string]any{"list": []map[string]any{{
			"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
		}}},
	}
	return json.MarshalIndent(dash, "", "  ")
}
