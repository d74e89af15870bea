package metrics

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite dashboards/ghostfleet.json from the catalog")

// The committed dashboard is the catalog's: a catalog change without
// `go test ./metrics -update` fails here.
func TestGrafanaDashboardMatchesTheCatalog(t *testing.T) {
	got, err := GrafanaDashboard()
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(got, &dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.Panels) != len(Catalog) {
		t.Fatalf("%d panels for %d queries", len(dash.Panels), len(Catalog))
	}
	for i, p := range dash.Panels {
		if p.Title != Catalog[i].Title || p.Targets[0].Expr != Catalog[i].PromQL {
			t.Errorf("panel %d %q does not match query %s", i, p.Title, Catalog[i].ID)
		}
	}
	path := filepath.Join("..", "dashboards", "ghostfleet.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./metrics -update)", err)
	}
	if string(committed) != string(got)+"\n" {
		t.Errorf("%s is out of date: run go test ./metrics -update", path)
	}
}
