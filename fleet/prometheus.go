package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
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
// the port recorded for it, and waited for until it scrapes every target.
// From then on kwokctl stops and starts it with the rest of the fleet.
// It picks up where an earlier call stopped: a component already in the
// configuration is not added twice, only started if it does not run.
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
	done := progress.Step(report, "prometheus", fmt.Sprintf("adding Prometheus on %s to fleet %s", state.PrometheusURL(), name), 5*time.Second)
	// Not cancelled half-way: kwokctl's configuration, prometheus.yaml and
	// the process go together.
	err = addPrometheusComponent(quietKwok(context.WithoutCancel(ctx)), name, p.Path, uint32(state.PrometheusPort))
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
// Prometheus at creation, on a cluster that runs; then it starts it.
func addPrometheusComponent(ctx context.Context, name, binary string, port uint32) error {
	kwokMu.Lock() // kwokctl's configuration is not edited by two at once
	defer kwokMu.Unlock()
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return err
	}
	if _, err := rt.GetComponent(ctx, consts.ComponentPrometheus); errors.Is(err, kwokruntime.ErrComponentNotFound) {
		if err := PortFree(int(port)); err != nil {
			return fmt.Errorf("prometheus port: %w (recorded for it at `up`): free it and run `ghostfleet up` again", err)
		}
		if err := savePrometheusComponent(ctx, rt, name, binary, port); err != nil {
			return err
		}
		if rt, err = loadRuntime(ctx, name); err != nil { // it holds the configuration it was loaded with
			return err
		}
	} else if err != nil {
		return err
	}
	if componentAlive(name, consts.ComponentPrometheus) {
		return nil
	}
	return rt.StartComponent(ctx, consts.ComponentPrometheus)
}

// savePrometheusComponent writes prometheus.yaml and a kwok.yaml with the
// Prometheus component in, keeping every other object of kwok.yaml (the
// kwok controller reads its own configuration from there).
func savePrometheusComponent(ctx context.Context, rt kwokruntime.Runtime, name, binary string, port uint32) error {
	conf, err := rt.Config(ctx)
	if err != nil {
		return err
	}
	v, err := utilsexec.ParseVersionFromBinary(ctx, binary)
	if err != nil {
		return fmt.Errorf("%s --version: %w", binary, err)
	}
	// Like kwokctl: the binary is linked into the cluster's bin/, and the
	// process's pid and log files are named after it.
	bin := rt.GetWorkdirPath(filepath.Join("bin", consts.ComponentPrometheus))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	_ = os.Remove(bin)
	if err := os.Symlink(binary, bin); err != nil {
		return err
	}
	has := func(component string) bool {
		return slices.ContainsFunc(conf.Components, func(c internalversion.Component) bool { return c.Name == component })
	}
	configPath := rt.GetWorkdirPath(kwokruntime.Prometheus)
	c, err := components.BuildPrometheusComponent(components.BuildPrometheusComponentConfig{
		Runtime:                      conf.Options.Runtime,
		Workdir:                      clusterWorkdir(name),
		Binary:                       bin,
		Version:                      v,
		BindAddress:                  conf.Options.BindAddress,
		Port:                         port,
		ConfigPath:                   configPath,
		Verbosity:                    log.LevelInfo,
		DisableKubeControllerManager: !has(consts.ComponentKubeControllerManager),
		DisableKubeScheduler:         !has(consts.ComponentKubeScheduler),
	})
	if err != nil {
		return err
	}
	kwokruntime.ApplyComponentPatches(ctx, &c, conf.ComponentsPatches)
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

	path := rt.GetWorkdirPath(kwokruntime.ConfigName)
	objs, err := config.Load(ctx, path)
	if err != nil {
		return err
	}
	objs = append([]config.InternalObject{conf}, config.FilterWithoutType[*internalversion.KwokctlConfiguration](objs)...)
	tmp := path + ".tmp"
	if err := config.Save(ctx, tmp, objs); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
