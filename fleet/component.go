package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Restart is what restarting a component did.
type Restart struct {
	Component string `json:"component"`
	// WasRunning is false when the process had died (killed, crashed).
	WasRunning bool `json:"wasRunning"`
	// Seconds is from the stop to the component answering again: its
	// process running, and for kube-apiserver /readyz ok.
	Seconds float64 `json:"seconds"`
}

// RestartComponent stops component of GhostFleet's fleet name if it still
// runs and starts it again, through kwokctl's own per-component stop and
// start (the same command line, flags and files as at up), then waits up
// to timeout for it to answer. The log of the run before is kept as
// logs/COMPONENT.previous.log (kwokctl truncates the log at start).
func RestartComponent(ctx context.Context, name, component string, timeout time.Duration) (Restart, error) {
	res := Restart{Component: component}
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return res, fmt.Errorf("fleet %q is not up (%v): run `ghostfleet up`", name, err)
	}
	names, err := ComponentNames(ctx, name)
	if err != nil {
		return res, err
	}
	if !slices.Contains(names, component) {
		return res, fmt.Errorf("component %q is not one of fleet %q's: allowed are %s", component, name, strings.Join(names, ", "))
	}
	start := time.Now()
	res.WasRunning = componentAlive(name, component)
	if res.WasRunning {
		if err := rt.StopComponent(ctx, component); err != nil {
			return res, err
		}
	} else {
		// kwokctl would take a zombie for a running process and not start
		// the component: forget the dead process first.
		forgetProcess(name, component)
	}
	// kwokctl truncates the log when it starts a component: keep the
	// last run's, which says why it died.
	_ = os.Rename(componentLog(name, component), previousLog(name, component))
	if err := rt.StartComponent(ctx, component); err != nil {
		return res, err
	}
	// The new process is outside its CPU limit's cgroup: moved in as
	// soon as it runs.
	limited, limitErr := false, error(nil)
	err = poll(ctx, timeout, func() (bool, error) {
		if !componentAlive(name, component) {
			return false, nil
		}
		if !limited {
			limited, limitErr = true, limitCPU(name, component)
		}
		if component != "kube-apiserver" {
			return true, nil
		}
		cs, err := Own(name).Clientset(false)
		if err != nil {
			return false, err
		}
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	res.Seconds = time.Since(start).Seconds()
	if err == nil {
		// A component that cannot start (its port taken by another
		// process while it was down) runs for a few milliseconds: see
		// that it is still there a moment later.
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(restartSettle):
			if !componentAlive(name, component) {
				err = fmt.Errorf("it exited right after starting: %s", lastLogLine(name, component))
			}
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s did not come back: %w (its log: %s)", component, err, componentLog(name, component))
	}
	if limitErr != nil {
		return res, fmt.Errorf("%s is back, but outside its CPU limit: %w", component, limitErr)
	}
	return res, nil
}

// restartSettle is how long a restarted component must keep running to
// count as back.
const restartSettle = 2 * time.Second

func componentLog(name, component string) string {
	return filepath.Join(clusterWorkdir(name), "logs", component+".log")
}

// previousLog is where restart keeps the log of the run before.
func previousLog(name, component string) string {
	return filepath.Join(clusterWorkdir(name), "logs", component+".previous.log")
}

// lastLogLine is the last line of component's log, which says why a
// component that exits at once did.
func lastLogLine(name, component string) string {
	data, err := os.ReadFile(componentLog(name, component))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return OneLine(errors.New(lines[len(lines)-1]))
}

// ComponentNames lists the processes of GhostFleet's fleet name, as
// kwokctl runs them (etcd, kube-apiserver, …, kwok-controller,
// prometheus).
func ComponentNames(ctx context.Context, name string) ([]string, error) {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("fleet %q is not up (%v): run `ghostfleet up`", name, err)
	}
	components, err := rt.ListComponents(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the components of %q: %w", name, err)
	}
	names := make([]string, 0, len(components))
	for _, c := range components {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return names, nil
}

// componentAlive reports whether component of fleet name runs: kwokctl's
// pid file names a process that exists and is not a zombie. A killed
// component whose parent has not reaped it (a console that brought the
// fleet up in-process, a test) stays in the process table as a zombie,
// which kwokctl counts as running.
func componentAlive(name, component string) bool {
	pid, ok := componentPID(name, component)
	if !ok {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')') // the command name may hold spaces
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

func componentPID(name, component string) (int, bool) {
	data, err := os.ReadFile(pidFile(name, component))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && pid > 0
}

func pidFile(name, component string) string {
	return filepath.Join(clusterWorkdir(name), "pids", component+".pid")
}

// forgetProcess reaps component's dead process if it is this process's
// child, and removes its pid file so that kwokctl starts it afresh.
func forgetProcess(name, component string) {
	if pid, ok := componentPID(name, component); ok {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
	_ = os.Remove(pidFile(name, component))
}

// DownComponents lists which of components (ComponentNames) of fleet name
// have no running process: pid files and /proc only, cheap enough for the
// console to ask every few seconds.
func DownComponents(name string, components []string) []string {
	var down []string
	for _, c := range components {
		if !componentAlive(name, c) {
			down = append(down, c)
		}
	}
	return down
}
