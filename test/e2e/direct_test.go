//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/metrics"
	"github.com/ghostfleet/ghostfleet/metrics/report"
)

const directCluster = "gf-direct-e2e"

// TestDirectScrape checks the direct scrape source against the fleet's
// own Prometheus, then takes a snapshot with Prometheus stopped.
//
// The two sources cannot be compared point for point on live data: they
// scrape at different instants. So the comparison is split in two. (1)
// Same samples, same answers: Prometheus's raw samples of every family
// the catalog reads are loaded into a recording, and the direct source's
// evaluation of every catalog query must equal Prometheus's own PromQL
// answer at the same times, to float precision. (2) Live: the direct
// source's own scrapes (its endpoints and credentials, the parser) must
// agree with Prometheus within what their different scrape instants
// allow: etcd's database size lies between Prometheus's samples before
// and after each direct scrape (it only grows), the rates of counters over
// the same 90 seconds of steady churn agree within 20%, and inflight
// requests have the same kinds and medians within 3.
func TestDirectScrape(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// A fleet left by an interrupted run would keep its old Prometheus port.
	ghostfleet(t, ctx, "clean", "--name", directCluster)
	t.Cleanup(func() { ghostfleet(t, context.Background(), "clean", "--name", directCluster) })
	port := freePort(t)
	if r := ghostfleet(t, ctx, "up", "--name", directCluster, "--nodes", "100", "--prometheus-port", fmt.Sprint(port)); r.code != 0 {
		t.Fatalf("up: %s", r.errOut)
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	client, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		t.Fatal(err)
	}
	prom := promv1.NewAPI(client)
	resultsDir := t.TempDir()

	t.Run("live scrapes agree with Prometheus", func(t *testing.T) {
		// Steady churn for the whole sampling period, so that rates are
		// not dominated by where each source's scrapes fall.
		churnDone := make(chan result, 1)
		go func() {
			churnDone <- ghostfleet(t, ctx, "churn", "10", "170s", "--name", directCluster, "--results-dir", resultsDir)
		}()
		defer func() {
			if r := <-churnDone; r.code != 0 {
				t.Errorf("churn: exit %d: %s", r.code, r.errOut)
			}
		}()
		time.Sleep(30 * time.Second) // churn up to speed; not an assertion

		endpoints, err := fleet.MetricsEndpoints(ctx, fleet.Own(directCluster))
		if err != nil {
			t.Fatal(err)
		}
		var jobs []string
		for _, e := range endpoints {
			jobs = append(jobs, e.Job)
		}
		if strings.Join(jobs, ",") != "etcd,kube-apiserver,kube-controller-manager,kube-scheduler" {
			t.Errorf("endpoints %v", jobs)
		}
		rec, failures, err := metrics.Sample(ctx, metrics.SampleOptions{Endpoints: endpoints, Period: 90 * time.Second, Step: 15 * time.Second})
		if err != nil || len(failures) > 0 {
			t.Fatalf("sampling: %v, failed scrapes %v", err, failures)
		}
		scrapes := rec.Scrapes()
		first, last := scrapes[0], scrapes[len(scrapes)-1]
		// Prometheus has scraped once more after the last direct scrape.
		time.Sleep(20 * time.Second)

		t.Run("etcd database size", func(t *testing.T) {
			q, _ := metrics.Lookup("etcd-db-size")
			direct := points(t, rec, q.Expr, first, last)
			raw := rawSamples(t, ctx, prom, "etcd_mvcc_db_total_size_in_bytes", time.Now(), 4*time.Minute)
			if len(direct) != len(scrapes) || len(raw) != 1 {
				t.Fatalf("%d direct points for %d scrapes, %d Prometheus series", len(direct), len(scrapes), len(raw))
			}
			for i, at := range scrapes {
				before, after := bracket(raw[0].Values, at)
				d := direct[keyAt("{}", at)]
				t.Logf("%s: direct %.0f, Prometheus %.0f before, %.0f after", at.Format("15:04:05"), d, before, after)
				if d < before*0.99 || d > after*1.01 {
					t.Errorf("scrape %d: direct %.0f outside Prometheus's %.0f … %.0f", i, d, before, after)
				}
			}
		})

		t.Run("counter rates over the same 90s", func(t *testing.T) {
			compared := 0
			for _, id := range []string{"scheduler-throughput", "apf-dispatched"} {
				q, _ := metrics.Lookup(id)
				e := q.Expr
				e.Window = last.Sub(first) // the whole sampling period
				direct := points(t, rec, e, last, last)
				res, _, err := prom.Query(ctx, e.PromQL(), last)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range res.(model.Vector) {
					key := keyAt(labelsText(s.Metric), last)
					p, d := float64(s.Value), direct[key]
					t.Logf("%s %s: direct %.3f/s, Prometheus %.3f/s", id, key, d, p)
					if p < 1 { // a handful of requests: edges dominate
						continue
					}
					compared++
					if math.Abs(d-p) > 0.2*p {
						t.Errorf("%s %s: direct %.3f/s, Prometheus %.3f/s: more than 20%% apart", id, key, d, p)
					}
				}
			}
			if compared < 2 {
				t.Errorf("only %d rates of 1/s or more to compare: did the churn run?", compared)
			}
		})

		t.Run("inflight requests", func(t *testing.T) {
			q, _ := metrics.Lookup("inflight")
			direct := map[string][]float64{}
			series, err := rec.Range(ctx, q.PromQL, first, last, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range series {
				for _, p := range s.Points {
					direct[labelsText(toModel(s.Labels))] = append(direct[labelsText(toModel(s.Labels))], p[1])
				}
			}
			res, _, err := prom.QueryRange(ctx, q.PromQL, promv1.Range{Start: first, End: last, Step: 15 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			promVals := map[string][]float64{}
			for _, s := range res.(model.Matrix) {
				for _, v := range s.Values {
					promVals[labelsText(s.Metric)] = append(promVals[labelsText(s.Metric)], float64(v.Value))
				}
			}
			if fmt.Sprint(sortedKeys(direct)) != fmt.Sprint(sortedKeys(promVals)) {
				t.Errorf("request kinds: direct %v, Prometheus %v", sortedKeys(direct), sortedKeys(promVals))
			}
			for k, d := range direct {
				dm, pm := median(d), median(promVals[k])
				t.Logf("inflight %s: direct %v (median %g), Prometheus %v (median %g)", k, d, dm, promVals[k], pm)
				if math.Abs(dm-pm) > 3 {
					t.Errorf("inflight %s: medians %g and %g", k, dm, pm)
				}
			}
		})
	})

	t.Run("same samples give the same answers", func(t *testing.T) {
		// Evaluate over the last two minutes, on whole seconds as
		// Prometheus's range API reports them; load samples from far
		// enough back for the 5m windows and the gauges' lookback.
		end := time.Now().Add(-20 * time.Second).Truncate(time.Second)
		start := end.Add(-2 * time.Minute)
		rec := metrics.NewRecording()
		for _, name := range families() {
			for _, s := range rawSamples(t, ctx, prom, name, end, 11*time.Minute) {
				l := map[string]string{}
				for k, v := range s.Metric {
					l[string(k)] = string(v)
				}
				for _, p := range s.Values {
					rec.AddPoint(l, p.Timestamp.Time(), float64(p.Value))
				}
			}
		}
		p, err := metrics.NewPrometheus(promURL)
		if err != nil {
			t.Fatal(err)
		}
		withData := 0
		for _, q := range metrics.Catalog {
			want, err := p.Range(ctx, q.PromQL, start, end, 15*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rec.Range(ctx, q.PromQL, start, end, 15*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) > 0 {
				withData++
			}
			wantPts, gotPts := flatten(want), flatten(got)
			mismatches := 0
			for k, w := range wantPts {
				g, ok := gotPts[k]
				if !ok || math.Abs(g-w) > 1e-6*math.Max(1, math.Abs(w)) {
					if mismatches++; mismatches <= 5 {
						t.Errorf("%s %s: direct %v (present %v), Prometheus %v", q.ID, k, g, ok, w)
					}
				}
			}
			for k, g := range gotPts {
				if _, ok := wantPts[k]; !ok {
					if mismatches++; mismatches <= 5 {
						t.Errorf("%s %s: direct %v, Prometheus has no point", q.ID, k, g)
					}
				}
			}
			t.Logf("%-22s %3d series, %4d points compared, %d mismatches", q.ID, len(want), len(wantPts), mismatches)
		}
		if withData < 10 {
			t.Errorf("only %d of %d queries had data to compare", withData, len(metrics.Catalog))
		}
	})

	t.Run("snapshot with Prometheus stopped", func(t *testing.T) {
		pids, err := fleet.PIDs(directCluster)
		if err != nil || pids["prometheus"] == 0 {
			t.Fatalf("pids %v, %v", pids, err)
		}
		if err := syscall.Kill(pids["prometheus"], syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Wait for its port to close: the process may linger as a zombie
		// of this test process, which started it through kwokctl.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Fatal("Prometheus still answers a minute after SIGTERM")
			}
		}
		dir := t.TempDir()
		if r := ghostfleet(t, ctx, "snapshot", "--name", directCluster, "--source", "prometheus", "--results-dir", dir); r.code == 0 || !strings.Contains(r.errOut, "is unreachable") || !strings.Contains(r.errOut, "nothing was written") {
			t.Errorf("--source prometheus: exit %d, %q", r.code, r.errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("a refused snapshot wrote %d entries", len(entries))
		}
		r := ghostfleet(t, ctx, "snapshot", "--name", directCluster, "--results-dir", dir, "--sample", "30s")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		if !strings.Contains(r.errOut, "is unreachable") || !strings.Contains(r.out, "direct scrape") || !strings.Contains(r.out, "not --since") {
			t.Errorf("the output does not say the snapshot came from a direct scrape:\n%s\n%s", r.out, r.errOut)
		}
		dirs, _ := filepath.Glob(filepath.Join(dir, "snapshot-*"))
		if len(dirs) != 1 {
			t.Fatalf("snapshot folders %v", dirs)
		}
		var run report.SnapshotRun
		readFile(t, filepath.Join(dirs[0], "run.json"), &run)
		if run.Source != metrics.DirectSourceName || !strings.Contains(run.Note, "not --since") || run.Fleet.Nodes != 100 {
			t.Errorf("run.json: source %q, note %q, fleet %+v", run.Source, run.Note, run.Fleet)
		}
		// The window is the sampling period: 30s from the first scrape to
		// the last (later when scrapes are slow; never shorter).
		if w := run.Window.End.Sub(run.Window.Start); w < 29*time.Second {
			t.Errorf("window %s, want the 30s sampling period", w)
		}
		var verdicts []report.Verdict
		readFile(t, filepath.Join(dirs[0], "slo.json"), &verdicts)
		for _, v := range verdicts {
			if v.ID != "pod-startup-p99" && v.Source != metrics.DirectSourceName {
				t.Errorf("verdict %s: source %q", v.ID, v.Source)
			}
		}
		var ms []report.QuerySeries
		readFile(t, filepath.Join(dirs[0], "metrics.json"), &ms)
		for _, q := range ms {
			switch q.ID {
			case "apiserver-p99-by-verb", "etcd-db-size":
				if len(q.Series) == 0 || len(q.Series[0].Points) == 0 || q.Error != "" {
					t.Errorf("%s: %d series, error %q", q.ID, len(q.Series), q.Error)
				}
				for _, s := range q.Series {
					for _, p := range s.Points {
						if !(p[1] > 0) {
							t.Errorf("%s %v: point %v", q.ID, s.Labels, p)
						}
					}
				}
			}
		}
		if r := ghostfleet(t, ctx, "report", dirs[0]); r.code != 0 {
			t.Fatalf("report: %s", r.errOut)
		}
		html, err := os.ReadFile(filepath.Join(dirs[0], "report.html"))
		if err != nil || !strings.Contains(string(html), `<b class="source">direct scrape</b>`) {
			t.Errorf("the report does not name the direct source (%v)", err)
		}
		// No run overlaps the sampling window: the charts must draw anyway.
		screenshot(t, filepath.Join(dirs[0], "report.html"))
	})

	// Components killed and brought back (issue #16), on the same fleet.
	t.Run("restart Prometheus", func(t *testing.T) { chaosRestartPrometheus(t, ctx, directCluster, resultsDir) })
	t.Run("kill the apiserver mid-churn", func(t *testing.T) { chaosKillAPIServer(t, ctx, directCluster, resultsDir) })
}

// families lists the metric families the catalog reads, as stored.
func families() []string {
	seen := map[string]bool{}
	var out []string
	for _, q := range metrics.Catalog {
		for e := &q.Expr; e != nil; e = e.Or {
			name := e.Metric
			if e.Kind == metrics.QuantileOfRate {
				name += "_bucket"
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// rawSamples are Prometheus's stored samples of name over the window
// before at.
func rawSamples(t *testing.T, ctx context.Context, prom promv1.API, name string, at time.Time, window time.Duration) model.Matrix {
	t.Helper()
	res, _, err := prom.Query(ctx, fmt.Sprintf("%s[%s]", name, model.Duration(window)), at)
	if err != nil {
		t.Fatalf("raw samples of %s: %v", name, err)
	}
	return res.(model.Matrix)
}

// bracket returns the last sample at or before at and the first after.
func bracket(vals []model.SamplePair, at time.Time) (before, after float64) {
	before, after = math.NaN(), math.NaN()
	for _, v := range vals {
		if !v.Timestamp.Time().After(at) {
			before = float64(v.Value)
		} else if math.IsNaN(after) {
			after = float64(v.Value)
		}
	}
	return before, after
}

func points(t *testing.T, rec *metrics.Recording, e metrics.Expr, start, end time.Time) map[string]float64 {
	t.Helper()
	series, err := rec.Eval(context.Background(), e, start, end, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range series {
		for _, p := range s.Points {
			out[fmt.Sprintf("%s@%.3f", labelsText(toModel(s.Labels)), p[0])] = p[1]
		}
	}
	return out
}

func keyAt(labels string, at time.Time) string {
	return fmt.Sprintf("%s@%.3f", labels, float64(at.UnixMilli())/1000)
}

func flatten(series []metrics.Series) map[string]float64 {
	out := map[string]float64{}
	for _, s := range series {
		for _, p := range s.Points {
			out[fmt.Sprintf("%s@%.0f", labelsText(toModel(s.Labels)), p[0])] = p[1]
		}
	}
	return out
}

func toModel(l map[string]string) model.Metric {
	m := model.Metric{}
	for k, v := range l {
		m[model.LabelName(k)] = model.LabelValue(v)
	}
	return m
}

func labelsText(m model.Metric) string {
	delete(m, model.MetricNameLabel)
	return m.String()
}

func sortedKeys(m map[string][]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
