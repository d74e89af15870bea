package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kwok/pkg/kwokctl/runtime"
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
// to timeout for it to answer.
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
	status, _ := rt.InspectComponent(ctx, component)
	res.WasRunning = status == runtime.ComponentStatusReady || status == runtime.ComponentStatusRunning
	if res.WasRunning {
		if err := rt.StopComponent(ctx, component); err != nil {
			return res, err
		}
	}
	if err := rt.StartComponent(ctx, component); err != nil {
		return res, err
	}
	err = poll(ctx, timeout, func() (bool, error) {
		if s, _ := rt.InspectComponent(ctx, component); s != runtime.ComponentStatusReady && s != runtime.ComponentStatusRunning {
			return false, nil
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
	if err != nil {
		return res, fmt.Errorf("%s did not come back: %w (its log: %s/logs/%s.log)", component, err, clusterWorkdir(name), component)
	}
	return res, nil
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
