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
	"syscall"
	"time"
)

// CPU limits: a profile may hold a component to a share of the machine's
// cores (cpuLimits), as a container's CPU limit does: the kernel's CFS
// bandwidth control, through a cpu cgroup GhostFleet makes for each
// limited component of a fleet (ghostfleet/<fleet>/<component>). A
// process kwokctl starts later is not in it: every place GhostFleet
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
// limits can be kept on this machine: it makes a cgroup with a limit and
// removes it again.
func checkCPULimits(p ComponentProfile) error {
	if len(p.CPULimits) == 0 {
		return nil
	}
	cg, err := findCPUCgroup()
	if err == nil {
		probe := fmt.Sprintf(".probe-%d", os.Getpid())
		err = cg.set(probe, "", minCPULimit)
		err = errors.Join(err, cg.remove(probe))
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

// set makes the component's cgroup (the fleet's, for "") with a limit of
// cores; in v2 it turns the cpu controller on for the children of each
// cgroup on the way down (in v1 every cgroup of the hierarchy has it).
func (c cpuCgroup) set(fleet, component string, cores float64) error {
	dir := c.dir(fleet, component)
	rel, err := filepath.Rel(c.root, dir)
	if err != nil {
		return err
	}
	d := c.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if c.v2 {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
				if errors.Is(err, syscall.EBUSY) {
					err = fmt.Errorf("%w: cgroup v2 turns a controller on only for the children of a cgroup without processes of its own, and %s has some", err, d)
				}
				return err
			}
		}
		d = filepath.Join(d, part)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	if c.v2 {
		return os.WriteFile(filepath.Join(dir, "cpu.max"), fmt.Appendf(nil, "%d %d", cpuQuota(cores), cfsPeriod), 0o644)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cfsPeriod)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(cpuQuota(cores))), 0o644)
}

// cpuQuota is a limit of cores as CFS bandwidth: µs a period.
func cpuQuota(cores float64) int { return int(math.Round(cores * cfsPeriod)) }

// limit holds process pid to cores, in the component's cgroup.
func (c cpuCgroup) limit(fleet, component string, cores float64, pid int) error {
	if err := c.set(fleet, component, cores); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir(fleet, component), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// remove deletes the fleet's cgroups. A process killed a moment ago may
// not have left its cgroup yet (the kernel says EBUSY): it is given 2 s.
func (c cpuCgroup) remove(fleet string) error {
	entries, err := os.ReadDir(c.dir(fleet, ""))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, c.dir(fleet, e.Name()))
		}
	}
	var errs []error
	for _, d := range append(dirs, c.dir(fleet, "")) {
		deadline := time.Now().Add(2 * time.Second)
		err := os.Remove(d)
		for errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			err = os.Remove(d)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// limitCPU moves the running processes of the components fleet name
// limits (its state's CPULimits, from its profile) into their cgroups;
// only component's, when it is not "". It is called again after anything
// starts components, since a new process is not in its cgroup; one not
// running is left for the start that brings it back. A fleet that limits
// nothing costs a read of its state.
func limitCPU(name, component string) error {
	state, err := LoadState(name)
	if err != nil || len(state.CPULimits) == 0 {
		return err
	}
	if _, limited := state.CPULimits[component]; component != "" && !limited {
		return nil
	}
	cg, err := findCPUCgroup()
	if err != nil {
		return err
	}
	for _, c := range slices.Sorted(maps.Keys(state.CPULimits)) {
		if component != "" && c != component {
			continue
		}
		pid, ok := componentPID(name, c)
		if !ok || !componentAlive(name, c) {
			continue
		}
		if err := cg.limit(name, c, state.CPULimits[c], pid); err != nil {
			return fmt.Errorf("limiting %s's CPU to %g cores: %w", c, state.CPULimits[c], err)
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
