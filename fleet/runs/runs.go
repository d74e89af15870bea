package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

// Reporter hears a run while it runs: its progress events (steps,
// counts, warnings) and, for a run whose rate can change as it goes
// (churn), the control of that rate.
type Reporter interface {
	Report(progress.Event)
	Live(RateControl)
}

// RateControl changes a running churn's rate.
type RateControl interface {
	SetRate(rate float64) error
	Rate() float64
}

// Discard is a Reporter that hears nothing.
var Discard Reporter = discard{}

type discard struct{}

func (discard) Report(progress.Event) {}
func (discard) Live(RateControl)      {}

// Env is where a run happens and where it is recorded.
type Env struct {
	Target fleet.Target
	// ResultsDir is where the run folder is written (see
	// record.DefaultRoot).
	ResultsDir string
	// PrometheusURL is an attached cluster's Prometheus; a GhostFleet
	// fleet's own is read from its state.
	PrometheusURL string
	// Reporter hears the run; nil hears nothing.
	Reporter Reporter
	// RealCluster is the user's consent (--i-know-this-is-real) to load
	// or fault an attached cluster that has nodes which are not kwok fake
	// nodes; see attachedWrite.
	RealCluster bool
}

func (e Env) reporter() Reporter {
	if e.Reporter == nil {
		return Discard
	}
	return e.Reporter
}

func (e Env) report(ev progress.Event) { e.reporter().Report(ev) }

func (e Env) warn(format string, args ...any) {
	e.report(progress.Event{Kind: progress.Warn, Message: fmt.Sprintf(format, args...)})
}

// Outcomes of a run (failures read "failed: …").
const (
	Completed   = "completed"
	Interrupted = "interrupted"
	TimedOut    = "timed out"
)

// Run is what every run returns besides its own figures.
type Run struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Dir is the run folder; empty when none was written.
	Dir string `json:"dir,omitempty"`
	// Outcome is Completed, Interrupted, TimedOut or "failed: …".
	Outcome string `json:"outcome"`
	// Left says what an interrupted or failed run left on the cluster,
	// and how to remove it; empty when nothing.
	Left string `json:"left,omitempty"`
	// Warning is the record's warnings in one line ("; " between them):
	// what the run met that its figures alone would not say (etcd's
	// NOSPACE refusing its writes), with what to do. A string keeps Run
	// comparable.
	Warning string `json:"warning,omitempty"`
}

// Failed reports whether the run failed or timed out (interrupted,
// completed, and findings such as a training run that stalled are not
// failures).
func (r Run) Failed() bool {
	return r.Outcome == TimedOut || strings.HasPrefix(r.Outcome, "failed")
}

// Result is every run's typed result: the run itself and a one-line
// summary of its figures for the console's activity pane.
type Result interface {
	Header() Run
	Summary() string
}

// Header returns the run; embedding Run makes a result a Result's half.
func (r Run) Header() Run { return r }

// session is an opened fleet: its clients (none from recorder), profile
// and Prometheus, and the machine at the run's start.
type session struct {
	env     Env
	clients workload.Clients
	profile string
	// settings is the fleet's profile as it ran it (fleet.ClusterProfile);
	// nil on an attached cluster, or with settingsErr when it cannot be
	// read (its file is missing from the fleet's folder, does not parse,
	// or names another profile).
	settings      *fleet.ComponentProfile
	settingsErr   error
	prometheusURL string
	// host is the machine read when the session opened (nil when it
	// could not be), for the record's Host.
	host *fleet.HostStart
	// prometheusPending: the fleet came up before its Prometheus was
	// built (fleet.State.PrometheusPending), which may be building now.
	prometheusPending bool
}

// open opens env's cluster: a GhostFleet fleet must be up; an attached
// cluster is taken as it is.
func open(env Env) (session, error) {
	s, err := recorder(env)
	if err != nil {
		return s, err
	}
	s.clients, err = workload.NewClients(env.Target)
	return s, err
}

// recorder reads what a run's record is completed with (the fleet's
// profile and its settings, the machine at the start) without the
// cluster's clients, for runs that must not need the apiserver (restart,
// etcd recover, save, restore) and for open.
func recorder(env Env) (session, error) {
	s := session{env: env, prometheusURL: env.PrometheusURL}
	if err := record.CheckRoot(env.ResultsDir); err != nil {
		return s, err // before the cluster: a run that cannot be recorded does not start
	}
	if !env.Target.Attached() {
		st, err := fleet.UpState(env.Target.Name)
		if err != nil {
			return s, err
		}
		s.profile, s.prometheusPending = st.Profile, st.PrometheusPending
		if p, err := fleet.ClusterProfile(env.Target.Name, st.Profile); err != nil {
			s.settingsErr = err // the record says so (complete); train, which reads them, fails with it
		} else {
			s.settings = &p
		}
		if !st.PrometheusPending { // none answers yet: the run goes without, as on a fleet with none
			s.prometheusURL = st.PrometheusURL()
		}
	}
	s.host = startHost(env, "the run's record")
	return s, nil
}

// startHost reads the machine at a run's start for its record (what, in
// the warning when it cannot be read: then nil).
func startHost(env Env, what string) *fleet.HostStart {
	h, err := fleet.ReadHost()
	if err != nil {
		env.warn("%s will not hold the machine's speed and CPU time: %v", what, err)
		return nil
	}
	return &h
}

// openWorkload opens the cluster for a workload and returns what it
// offers, refusing fleets where pods could land on real nodes.
func openWorkload(ctx context.Context, env Env) (session, workload.Capacity, error) {
	s, err := open(env)
	if err != nil {
		return s, workload.Capacity{}, err
	}
	if err := attachedWrite(ctx, env, s.clients.Admin, "create GhostFleet's workload (namespaces, pods, Deployments or Jobs)", true); err != nil {
		return s, workload.Capacity{}, err
	}
	c, err := workload.CheckFleet(ctx, s.clients.Admin)
	return s, c, err
}

// cluster names the cluster in records.
func (s session) cluster() string {
	if s.env.Target.Attached() {
		return s.env.Target.String()
	}
	return s.env.Target.Name
}

// complete fills in what the session knows of rec: the cluster, the
// profile and its settings, the machine it ran on, when it ended if it
// does not say, and the warnings its result and the fleet call for.
func (s session) complete(rec *record.Record) {
	rec.Cluster, rec.Profile = s.cluster(), s.profile
	if s.settings != nil {
		rec.ProfileSettings = s.settings.Settings()
	} else if s.settingsErr != nil {
		rec.Warnings = append(rec.Warnings, "the record does not hold its profile's settings: "+s.settingsErr.Error())
	}
	if rec.Ended.IsZero() {
		rec.Ended = time.Now().UTC()
	}
	endHost(rec, s.host)
	rec.Warnings = append(rec.Warnings, etcdWarnings(rec.Result)...)
	if s.prometheusPending {
		rec.Warnings = append(rec.Warnings, "the fleet's Prometheus was not built yet when the run began: "+
			"if the console was building it, the compiler shared the machine's cores with the control plane (run `ghostfleet up` first to measure)")
	}
}

// endHost sets rec's Host: the machine from h (read at the run's start)
// to now; a warning in rec when it cannot be read, nothing when h is nil.
func endHost(rec *record.Record, h *fleet.HostStart) {
	if h == nil {
		return
	}
	if end, err := h.Since(); err != nil {
		rec.Warnings = append(rec.Warnings, "the machine's speed and CPU time at the run's end could not be read: "+err.Error())
	} else {
		rec.Host = &end
	}
}

// write completes rec, writes it into a new run folder and returns the
// Run naming it.
func (s session) write(rec record.Record) (Run, error) {
	s.complete(&rec)
	run := Run{ID: rec.ID, Kind: rec.Kind, Outcome: rec.Outcome, Warning: strings.Join(rec.Warnings, "; ")}
	dir, err := record.WriteRecord(s.env.ResultsDir, rec)
	if err != nil {
		return run, fmt.Errorf("writing the run record: %w", err)
	}
	run.Dir = dir
	if run.ID == "" {
		run.ID = filepath.Base(dir) // WriteRecord names an unnamed record after its folder
	}
	return run, nil
}

// NewID names a run of kind started now: <kind>-<UTC time>.
func NewID(kind string) string {
	return kind + "-" + time.Now().UTC().Format("20060102-150405")
}

// Int reads a whole number typed for name (an argument or a form field);
// ranges are the options' Validate's to check.
func Int(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number", name, s)
	}
	return n, nil
}

// Float reads a number typed for name.
func Float(name, s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", name, s)
	}
	return f, nil
}

// Duration reads a duration typed for name: Go form (10m, 90s) or whole
// seconds (the seed's "churn 200 600").
func Duration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil {
			return time.Duration(n) * time.Second, nil
		}
		return 0, fmt.Errorf("%s %q is not a duration: use seconds (600) or Go form (10m, 90s)", name, s)
	}
	return d, nil
}
