package fleet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, 100 on every Linux GhostFleet runs on.
const clockTicks = 100

// ComponentCPU returns the CPU time (user + system) each of the cluster's
// processes has used so far, read from /proc, and GhostFleet's own (the
// load generator shares the machine): the difference of two calls shows
// where a run's time went.
func ComponentCPU(name string) (map[string]time.Duration, error) {
	pids, err := PIDs(name)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for component, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // not running
		}
		cpu, err := parseStatCPU(string(stat))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		out[component] = cpu
	}
	out[SelfComponent] = selfCPU()
	return out, nil
}

// PIDs maps each component of the cluster to its process id, from the pid
// files kwok's binary runtime keeps.
func PIDs(name string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(clusterWorkdir(name), "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	return pids, nil
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line; the command name in field 2 may contain spaces, so fields are
// counted after its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command field")
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return ticksDuration(ticks), nil
}

// ticksDuration is n clock ticks (a second's share first: a machine's
// summed ticks times a second's nanoseconds would overflow).
func ticksDuration(n int64) time.Duration {
	return time.Duration(n) * (time.Second / clockTicks)
}

// ProcessWaits are one process's threads' waits for a core so far, by
// thread id.
type ProcessWaits struct {
	PID     int
	Threads map[int]time.Duration
}

// ThreadRunQueueWaits returns how long each thread of the cluster's
// processes, and of GhostFleet's own, has waited for a core so far, by
// process: the time it was ready to run but not running (the kernel's
// run_delay, the second field of /proc/PID/task/TID/schedstat). On a
// machine with fewer cores than busy processes this is work that was
// ready and waited. Only threads alive now are read: compare two
// readings thread by thread. A process that is not running is left out.
func ThreadRunQueueWaits(name string) (map[string]ProcessWaits, error) {
	pids, err := PIDs(name)
	if err != nil {
		return nil, err
	}
	out := map[string]ProcessWaits{}
	for component, pid := range pids {
		waits, err := runQueueWaits(fmt.Sprintf("/proc/%d/task", pid))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not running
		}
		if err != nil {
			return nil, err
		}
		out[component] = ProcessWaits{PID: pid, Threads: waits}
	}
	self, err := runQueueWaits("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("GhostFleet's own threads' waits for a core (a kernel without scheduler statistics?): %w", err)
	}
	out[SelfComponent] = ProcessWaits{PID: os.Getpid(), Threads: self}
	return out, nil
}

// runQueueWaits reads run_delay of each thread of the task directory dir.
// A thread that ends while it is read is skipped; a process none of whose
// threads could be read (it ended, or the kernel keeps no scheduler
// statistics) is fs.ErrNotExist.
func runQueueWaits(dir string) (map[int]time.Duration, error) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int]time.Duration{}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return nil, err
		}
		wait, err := parseRunDelay(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		out[tid] = wait
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no thread's schedstat could be read: %w", dir, fs.ErrNotExist)
	}
	return out, nil
}

// parseRunDelay reads the second of a schedstat line's three fields: time
// on a core, time waiting on a run queue, timeslices; in nanoseconds.
func parseRunDelay(schedstat string) (time.Duration, error) {
	fields := strings.Fields(schedstat)
	if len(fields) != 3 {
		return 0, fmt.Errorf("%d fields, want 3 (on-cpu, run-queue wait, timeslices)", len(fields))
	}
	ns, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// SelfComponent names GhostFleet's own process (the load generator) in
// CPU figures.
const SelfComponent = "ghostfleet"

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUSince is the CPU each component used since before was taken.
func CPUSince(name string, before map[string]time.Duration) (map[string]float64, error) {
	after, err := ComponentCPU(name)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for c, t := range after {
		out[c] = (t - before[c]).Seconds()
	}
	return out, nil
}

// PeakRSS returns each of the cluster's processes' peak resident memory so
// far (VmHWM from /proc/PID/status), in MiB: what a run needed at most.
func PeakRSS(name string) (map[string]float64, error) {
	pids, err := PIDs(name)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for component, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue // not running
		}
		if kib, ok := statusKiB(string(status), "VmHWM:"); ok {
			out[component] = float64(kib) / 1024
		}
	}
	return out, nil
}

// statusKiB reads a "Field:   N kB" line of /proc/PID/status.
func statusKiB(status, field string) (int64, bool) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
