package app

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/runs"
)

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

// env is where a command's run happens: the target cluster, the results
// folder, and p printing what the run reports.
func (g *globals) env(p *printer, prometheusURL string) runs.Env {
	return runs.Env{Target: g.target(), ResultsDir: g.resultsDir, PrometheusURL: prometheusURL, Reporter: cliReporter{p}, RealCluster: g.realOK}
}

// cliReporter hears a run for the command line: progress on standard
// error. Nobody changes a churn's rate from a shell.
type cliReporter struct{ *printer }

func (cliReporter) Live(runs.RateControl) {}

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
	if run.Warning != "" {
		fmt.Fprintf(g.streams.ErrOut, "warning: %s\n", run.Warning)
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
