package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
	"github.com/ghostfleet/ghostfleet/tui"
)

// runEnv is what every workload command needs: the clients, the fleet's
// profile and Prometheus, and where run records go.
type runEnv struct {
	target        fleet.Target
	clients       workload.Clients
	profile       string
	prometheusURL string
}

func (g *globals) runEnv(prometheusURL string) (runEnv, error) {
	t := g.target()
	env := runEnv{target: t, prometheusURL: prometheusURL}
	if !t.Attached() {
		st, err := fleet.LoadState(t.Name)
		if err != nil {
			return env, fmt.Errorf("fleet %q is not up: run `ghostfleet up` first", t.Name)
		}
		env.profile, env.prometheusURL = st.Profile, st.PrometheusURL()
	}
	var err error
	env.clients, err = workload.NewClients(t)
	return env, err
}

// startWorkload checks what every workload command checks first: the
// output format, the fleet (up, attached) and its capacity, refusing
// fleets where pods could land on real nodes.
func (g *globals) startWorkload(ctx context.Context, output, prometheusURL string) (runEnv, workload.Capacity, error) {
	if err := checkOutput(output); err != nil {
		return runEnv{}, workload.Capacity{}, err
	}
	env, err := g.runEnv(prometheusURL)
	if err != nil {
		return env, workload.Capacity{}, err
	}
	capacity, err := workload.CheckFleet(ctx, env.clients.Admin)
	return env, capacity, err
}

func (e runEnv) clusterName() string {
	if e.target.Attached() {
		return e.target.String()
	}
	return e.target.Name
}

// writeRecord completes and writes a run record; it returns the folder.
func (e runEnv) writeRecord(root string, rec record.Record) (string, error) {
	rec.Cluster, rec.Profile = e.clusterName(), e.profile
	if rec.Ended.IsZero() {
		rec.Ended = time.Now().UTC()
	}
	return record.WriteRecord(root, rec)
}

func runID(kind string) string {
	return kind + "-" + time.Now().UTC().Format("20060102-150405")
}

func parseCount(name, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number: allowed are %d-%d", name, s, lo, hi)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s %d is out of range: allowed are %d-%d", name, n, lo, hi)
	}
	return n, nil
}

func parseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q is not a number: allowed are more than 0 and at most 5000 pods/s", s)
	}
	return r, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil {
			return time.Duration(n) * time.Second, nil // the seed's "churn 200 600": seconds
		}
		return 0, fmt.Errorf("duration %q is not a duration: use seconds (600) or Go form (10m, 90s)", s)
	}
	return d, nil
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("--output %q is not supported: allowed are text, json", o)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// report ends every workload command alike: write the run record, print
// the result (JSON, or text by printText), say where the record is and
// what an interrupted run left in namespace ns (none when ns is empty: the
// run cleaned up), and exit 130 if it was interrupted.
func (e runEnv) report(ctx context.Context, s Streams, output, resultsDir, ns string, rec record.Record, res any, printText func(io.Writer)) error {
	dir, err := e.writeRecord(resultsDir, rec)
	if err != nil {
		return fmt.Errorf("writing the run record: %w", err)
	}
	if output == "json" {
		if err := writeJSON(s.Out, res); err != nil {
			return err
		}
	} else {
		printText(s.Out)
	}
	fmt.Fprintf(s.ErrOut, "run record: %s\n", dir)
	if ctx.Err() != nil {
		if ns != "" {
			fmt.Fprintf(s.ErrOut, "interrupted: the run's pods are left in namespace %s; `ghostfleet unload` removes every GhostFleet workload\n", ns)
		}
		return exitError{code: 130}
	}
	return nil
}

// env is where a command's run happens: the target cluster, the results
// folder, and p (with the console's forwarding, when it runs the command)
// hearing the run.
func (g *globals) env(p *printer, prometheusURL string) runs.Env {
	return runs.Env{Target: g.target(), ResultsDir: g.resultsDir, PrometheusURL: prometheusURL, Reporter: cliReporter{p, g.streams.Live}}
}

// cliReporter hears a run for the command line: progress on standard
// error; a churn's rate control goes to the console when it runs the
// command.
type cliReporter struct {
	*printer
	live func(tui.RateControl)
}

func (r cliReporter) Live(c runs.RateControl) {
	if r.live != nil {
		r.live(c)
	}
}

// finish ends every run command alike: it prints the typed result (-o
// json: exactly the result; text: printText), says where the run folder
// is and what an interrupted run left behind, and exits 130 when the run
// was interrupted.
func (g *globals) finish(res runs.Result, output string, printText func(io.Writer)) error {
	if output == "json" {
		if err := writeJSON(g.streams.Out, res); err != nil {
			return err
		}
	} else {
		printText(g.streams.Out)
	}
	run := res.Header()
	if run.Dir != "" {
		fmt.Fprintf(g.streams.ErrOut, "run record: %s\n", run.Dir)
	}
	if run.Outcome == runs.Interrupted {
		if run.Left != "" {
			fmt.Fprintf(g.streams.ErrOut, "interrupted: %s\n", run.Left)
		}
		return exitError{code: 130}
	}
	return nil
}

// printRequests says what the run's requests met: every 429 is one API
// Priority and Fairness sent and the run lost (none is retried).
func printRequests(w io.Writer, s requests.Stats) {
	sent := 0
	for _, n := range s.Sent {
		sent += n
	}
	line := fmt.Sprintf("  requests: %d sent, %d ok, %d rejected by APF (429)", sent, s.Succeeded, s.Rejected)
	for _, kind := range slices.Sorted(maps.Keys(s.Errors)) {
		if kind != requests.ErrTooManyRequests {
			line += fmt.Sprintf(", %d %s", s.Errors[kind], kind)
		}
	}
	if s.Cancelled > 0 {
		line += fmt.Sprintf(", %d cancelled", s.Cancelled)
	}
	fmt.Fprintln(w, line+"; no 429 or 5xx retried")
}
