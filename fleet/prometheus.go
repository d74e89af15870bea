package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/kwok/pkg/consts"
	"sigs.k8s.io/kwok/pkg/kwokctl/components"
	kwokruntime "sigs.k8s.io/kwok/pkg/kwokctl/runtime"
	"sigs.k8s.io/kwok/pkg/log"
	utilsexec "sigs.k8s.io/kwok/pkg/utils/exec"

	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// ErrNoPendingPrometheus is returned by AddPrometheus for a fleet whose
// Prometheus is not waiting to be added.
var ErrNoPendingPrometheus = errors.New("no Prometheus is pending on this fleet")

// AddPrometheus gives fleet name, brought up before its Prometheus was
// built (UpOptions.PrometheusLater), the Prometheus at p: it is added to
// kwokctl's configuration as it would have been at creation (the same
// component, and a prometheus.yaml scraping every component), started on
// the port reserved for it, and waited for until it scrapes every target.
// From then on kwokctl stops and starts it with the rest of the fleet.
func AddPrometheus(ctx context.Context, name string, p binaries.Resolved, report progress.Func) (State, error) {
	if report == nil {
		report = progress.Discard
	}
	state, err := UpState(name)
	if err != nil {
		return state, err
	}
	if !state.PrometheusPending {
		return state, fmt.Errorf("fleet %q: %w", name, ErrNoPendingPrometheus)
	}
	if err := PortFree(state.PrometheusPort); err != nil {
		return state, fmt.Errorf("prometheus port: %w (reserved for it at `up`): free it and run `ghostfleet up` again", err)
	}
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return state, err
	}
	done := progress.Step(report, "prometheus", fmt.Sprintf("adding Prometheus on %s to fleet %s", state.PrometheusURL(), name), 5*time.Second)
	// Not cancelled half-way: kwokctl's configuration, prometheus.yaml and
	// the process go together.
	err = addPrometheusComponent(quietKwok(context.WithoutCancel(ctx)), rt, name, p.Path, uint32(state.PrometheusPort))
	done()
	if err != nil {
		return state, fmt.Errorf("adding Prometheus to fleet %q: %w", name, err)
	}
	state.PrometheusPending = false
	if p.Source == binaries.SourceDebian {
		state.DebianPrometheus = p.Version
	}
	if err := saveState(state); err != nil {
		return state, err
	}
	return state, waitTargets(ctx, state, report)
}

// addPrometheusComponent is what kwokctl's binary runtime does for
// Prometheus at creation, on a cluster that runs.
func addPrometheusComponent(ctx context.Context, rt kwokruntime.Runtime, name, binary string, port uint32) error {
	conf, err := rt.Config(ctx)
	if err != nil {
		return err
	}
	v, err := utilsexec.ParseVersionFromBinary(ctx, binary)
	if err != nil {
		return fmt.Errorf("%s --version: %w", binary, err)
	}
	configPath := rt.GetWorkdirPath(kwokruntime.Prometheus)
	c, err := components.BuildPrometheusComponent(components.BuildPrometheusComponentConfig{
		Runtime:     conf.Options.Runtime,
		Workdir:     clusterWorkdir(name),
		Binary:      binary,
		Version:     v,
		BindAddress: conf.Options.BindAddress,
		Port:        port,
		ConfigPath:  configPath,
		Verbosity:   log.LevelInfo,
	})
	if err != nil {
		return err
	}
	conf.Components = append(conf.Components, c)
	data, err := components.BuildPrometheus(components.BuildPrometheusConfig{Components: conf.Components})
	if err != nil {
		return fmt.Errorf("writing prometheus.yaml: %w", err)
	}
	if err := os.WriteFile(configPath, []byte(data), 0o644); err != nil {
		return err
	}
	conf.Options.PrometheusPort = port
	conf.Options.PrometheusBinary = binary
	if err := rt.SetConfig(ctx, conf); err != nil {
		return err
	}
	if err := rt.Save(ctx); err != nil {
		return err
	}
	return rt.StartComponent(ctx, consts.ComponentPrometheus)
}
