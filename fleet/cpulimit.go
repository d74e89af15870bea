package fleet

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CPU limits: a profile may hold a component to a share of the machine's
// cores (cpuLimits), as a container's CPU limit does: the kernel's CFS
// bandwidth control, through a cpu cgroup GhostFleet makes for each
// limited component of a fleet (ghostfleet/<fleet>/<component>). A
// process started later by kwokctl is not in it: every place GhostFleet
// starts components calls limitCPU again.

// cfsPeriod is the bandwidth period, the kernel's default: a component
// limited to c cores runs at most c × 100 ms in each 100 ms.
const cfsPeriod = 100_000 // µs

// CPU limits a profile may set, in cores: the kernel's smallest quota is
// 1 ms a period; above the bound a limit would be a typing error.
const (
	minCPULimit = 0.01
	maxCPULimit = 1024
)

// cpuCgroup is the machine's cpu controller: cgroup v2's unified
// hierarchy, or v1's cpu hierarchy.
type cpuCgroup struct {
	root string
	v2   bool
}

// cgroupRoot is where the kernel's cgroup file systems are mounted;
// tests point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// findCPUCgroup finds a cpu controller GhostFleet may make cgroups in.
func findCPUCgroup() (cpuCgroup, error) {
	if data, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		if !slices.Contains(strings.Fields(string(data)), "cpu") {
			return cpuCgroup{}, fmt.Errorf("cgroup v2 at %s has no cpu controller (its cgroup.controllers: %q)", cgroupRoot, strings.TrimSpace(string(data)))
		}
		return cpuCgroup{root: cgroupRoot, v2: true}, nil
	}
	v1 := filepath.Join(cgroupRoot, "cpu")
	if _, err := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); err != nil {
		return cpuCgroup{}, fmt.Errorf("no cpu cgroup controller at %s (cgroup v2 with cpu, or v1's cpu hierarchy with CFS bandwidth control)", cgroupRoot)
	}
	return cpuCgroup{root: v1}, nil
}

// checkCPULimits says, before a fleet is made, whether its profile's CPU
// limits can be kept on this machine: a cgroup can be made and removed.
func checkCPULimits(p ComponentProfile) error {
	if len(p.CPULimits) == 0 {
		return nil
	}
	cg, err := findCPUCgroup()
	if err == nil {
		dir := filepath.Join(cg.root, "ghostfleet")
		if err = cg.enable(cg.root); err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
	}
	if err != nil {
		return fmt.Errorf("profile %s limits %s's CPU, which this machine cannot do: %w", p.Name, strings.Join(slices.Sorted(maps.Keys(p.CPULimits)), " and "), err)
	}
	return nil
}

// dir is the cgroup of a fleet's component, or of the fleet's when
// component is "".
func (c cpuCgroup) dir(fleet, component string) string {
	return filepath.Join(c.root, "ghostfleet", fleet, component)
}

// enable turns the cpu controller on for dir's children (v2 only; in v1
// every cgroup of the hierarchy has it).
func (c cpuCgroup) enable(dir string) error {
	if !c.v2 {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
}

// limit holds process pid to cores, in the component's cgroup.
func (c cpuCgroup) limit(fleet, component string, cores float64, pid int) error {
	dir := c.dir(fleet, component)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if c.v2 {
		for _, d := range []string{c.root, filepath.Dir(filepath.Dir(dir)), filepath.Dir(dir)} {
			if err := c.enable(d); err != nil {
				return err
			}
		}
	}
	quota := cpuQuota(cores)
	var writes [][2]string
	if c.v2 {
		writes = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriod)}}
	} else {
		writes = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod)}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}}
	}
	writes = append(writes, [2]string{"cgroup.procs", strconv.Itoa(pid)})
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cpuQuota is a limit of cores as CFS bandwidth: µs a period.
func cpuQuota(cores float64) int { return int(math.Round(cores * cfsPeriod)) }

// remove deletes the fleet's cgroups, once their processes are gone.
func (c cpuCgroup) remove(fleet string) error {
	entries, err := os.ReadDir(c.dir(fleet, ""))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, os.Remove(c.dir(fleet, e.Name())))
		}
	}
	errs = append(errs, os.Remove(c.dir(fleet, "")))
	return errors.Join(errs...)
}

// limitCPU moves the running processes of the components fleet name's
// profile limits into their cgroups (only component, when it is not ""):
// again after anything started them, since a new process is not in its
// cgroup. A fleet whose profile limits nothing costs a file read.
func limitCPU(name, component string) error {
	state, err := LoadState(name)
	if err != nil {
		return err
	}
	p, err := ClusterProfile(name, state.Profile)
	if err != nil || len(p.CPULimits) == 0 {
		return err
	}
	cg, err := findCPUCgroup()
	if err != nil {
		return err
	}
	pids, err := PIDs(name)
	if err != nil {
		return err
	}
	for _, c := range slices.Sorted(maps.Keys(p.CPULimits)) {
		if component != "" && c != component {
			continue
		}
		pid, ok := pids[c]
		if !ok {
			return fmt.Errorf("limiting %s's CPU: fleet %s runs no %s", c, name, c)
		}
		if err := cg.limit(name, c, p.CPULimits[c], pid); err != nil {
			return fmt.Errorf("limiting %s's CPU to %g cores: %w", c, p.CPULimits[c], err)
		}
	}
	return nil
}

// removeCPULimits deletes a deleted fleet's cgroups, if it had any.
func removeCPULimits(name string) error {
	cg, err := findCPUCgroup()
	if err != nil {
		return nil // none were made
	}
	return cg.remove(name)
}
