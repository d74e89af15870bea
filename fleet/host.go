package fleet

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// hostStates are /proc/stat's CPU states, in its order (guest time is
// counted in user's, and left out).
var hostStates = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// HostCPU returns the machine's CPU time so far by state, summed over its
// logical CPUs, from /proc/stat's first line, and how many logical CPUs
// it counts.
func HostCPU() (map[string]time.Duration, int, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, 0, err
	}
	return parseHostCPU(string(stat))
}

// parseHostCPU reads /proc/stat's first line, the machine's CPU states
// in ticks, and counts its lines of one logical CPU each ("cpu0"…).
func parseHostCPU(stat string) (map[string]time.Duration, int, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < len(hostStates)+1 || fields[0] != "cpu" {
		return nil, 0, fmt.Errorf("/proc/stat: first line %q, want \"cpu\" and %d states", line, len(hostStates))
	}
	out := map[string]time.Duration{}
	for i, state := range hostStates {
		ticks, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("/proc/stat: %s: %w", state, err)
		}
		out[state] = ticksDuration(ticks)
	}
	cpus := 0
	for l := range strings.Lines(stat) {
		if rest, ok := strings.CutPrefix(l, "cpu"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			cpus++
		}
	}
	return out, cpus, nil
}

// HostCPUTotals reads HostCPU as totals that never go down: per state,
// what it added since the last reading. The kernel's iowait can go down,
// and idle when a CPU goes offline; a fall adds nothing, rather than
// reading as the machine restarted.
func HostCPUTotals() func() (map[string]time.Duration, error) {
	return hostCPUTotals(HostCPU)
}

func hostCPUTotals(read func() (map[string]time.Duration, int, error)) func() (map[string]time.Duration, error) {
	var last map[string]time.Duration
	totals := map[string]time.Duration{}
	return func() (map[string]time.Duration, error) {
		now, _, err := read()
		if err != nil {
			return nil, err
		}
		for state, t := range now {
			if before, ok := last[state]; ok {
				totals[state] += max(t-before, 0)
			} else {
				totals[state] = 0
			}
		}
		last = now
		return maps.Clone(totals), nil
	}
}

// probeTrials is how many times SpeedProbe does each of its works: the
// fastest trial is the machine's speed, the median what the run's
// neighbours left.
const probeTrials = 7

// The probe's works by name (record.Probe's and SpeedSamples' keys), in
// the order each round of trials does them.
const (
	CacheWork  = "cache"
	MemoryWork = "memory"
	DRAMWork   = "dram"
)

// WorkNames are the probe's works in that order.
var WorkNames = []string{CacheWork, MemoryWork, DRAMWork}

// work is one of the probe's fixed works. None allocates or writes a
// pointer once made: the garbage collector, and its write barrier while
// it marks (GhostFleet's own process allocates as it watches the fleet),
// take no share of it.
type work interface {
	// do does the work once; an error says it did not do what it should.
	do() error
}

// probeWorks are the probe's works' data, made.
type probeWorks map[string]work

// newWorks makes the probe's works' data; close frees the DRAM work's.
func newWorks() (probeWorks, error) {
	c, err := newChase()
	if err != nil {
		return nil, err
	}
	return probeWorks{CacheWork: newProbeData(cacheWork), MemoryWork: newProbeData(memoryWork), DRAMWork: c}, nil
}

func (w probeWorks) close() { w[DRAMWork].(*chase).close() }

// probeWork is a work of names: keys names put into a map, each looked
// up, and a copy of them sorted, rounds times over.
type probeWork struct{ keys, rounds int }

// Two works of names, of as many in all: 2,000 fifty times over, whose
// names and map fit a core's own caches (its second level is 1 MiB
// here), and 100,000 once, whose spill into the cache the cores share,
// as a control plane's data do.
var (
	cacheWork  = probeWork{keys: 2000, rounds: 50}
	memoryWork = probeWork{keys: 100000, rounds: 1}
)

// probeKey is one name of a work, held in an array so that the work
// writes no pointer.
type probeKey [32]byte

// probeData is a work's names, map and sorted copy, made (and the work
// done once, so that its first timed trial finds their pages in place)
// before it is timed.
type probeData struct {
	probeWork
	names  []probeKey
	index  map[probeKey]int32
	sorted []probeKey
}

func newProbeData(w probeWork) probeData {
	rng := rand.New(rand.NewPCG(1, 2)) // the same names in the same order on every run
	d := probeData{probeWork: w, names: make([]probeKey, w.keys), index: make(map[probeKey]int32, w.keys), sorted: make([]probeKey, w.keys)}
	for i := range d.names {
		copy(d.names[i][:], fmt.Sprintf("gpu-node-%06d/pod-%08x", i%1000, rng.Uint32()))
	}
	d.run()
	return d
}

// run does the work once and returns its lookups' sum.
func (d probeData) run() int {
	sum := 0
	for range d.rounds {
		clear(d.index)
		for i, k := range d.names {
			d.index[k] = int32(i)
		}
		for _, k := range d.names {
			sum += int(d.index[k])
		}
		copy(d.sorted, d.names)
		slices.SortFunc(d.sorted, func(a, b probeKey) int { return bytes.Compare(a[:], b[:]) })
	}
	return sum
}

func (d probeData) do() error {
	if sum, want := d.run(), d.rounds*d.keys*(d.keys-1)/2; sum != want {
		return fmt.Errorf("the speed probe's lookups summed %d, want %d", sum, want)
	}
	return nil
}

// The DRAM work: a chase through one cycle of chaseEntries indices
// (64 MiB, twice the cache the cores share here), chaseSteps a trial,
// each step's load waiting for the last's, so mostly for memory and the
// page walks its addresses need; each trial goes on where the last
// stopped, on entries not touched since.
const (
	chaseEntries = 1 << 24
	chaseSteps   = 100000
)

// chase is the DRAM work's cycle, next index by index, and where it
// stands. Its table is mapped outside Go's heap, so that the garbage
// collector neither scans it nor counts it towards its next cycle, and
// in small pages only, so that its page walks are the same every run.
type chase struct {
	mapped []byte
	next   []uint32
	at     uint32
}

// chaseNext is the cycle's step: a·i+c modulo the entries (a power of
// two), with c odd and a one more than a multiple of four, which visits
// every entry before it comes back (Hull and Dobell's full period), in
// an order no prefetcher follows.
func chaseNext(i uint32) uint32 {
	const a, c = 0x9E3779B1, 12345
	return uint32((a*uint64(i) + c) & (chaseEntries - 1))
}

// newChase lays the cycle out; close unmaps it.
func newChase() (*chase, error) {
	mapped, err := unix.Mmap(-1, 0, chaseEntries*4, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("the speed probe's 64 MiB: %w", err)
	}
	_ = unix.Madvise(mapped, unix.MADV_NOHUGEPAGE) // a kernel without transparent huge pages has none to refuse
	next := unsafe.Slice((*uint32)(unsafe.Pointer(&mapped[0])), chaseEntries)
	for i := range next {
		next[i] = chaseNext(uint32(i))
	}
	return &chase{mapped: mapped, next: next}, nil
}

func (c *chase) close() {
	_ = unix.Munmap(c.mapped)
	c.mapped, c.next = nil, nil
}

func (c *chase) do() error {
	at := c.at
	for range chaseSteps {
		at = c.next[at]
	}
	c.at = at
	return nil
}

// offCoreAtMost is how long a trial's thread may be off its core (its
// wall time less its CPU time) for the trial still to count as on it.
const offCoreAtMost = 100 * time.Microsecond

// trial does w once on the calling goroutine's thread, which must be
// locked to it, and returns the thread's CPU time and the wall time it
// took, and whether the thread kept its core throughout: the kernel did
// not take it off to run another (an involuntary context switch), and
// it was off its core no longer than offCoreAtMost in all (Go's runtime
// preempts a goroutine that runs 10 ms, and its locked thread then
// sleeps until the goroutine is run again, a voluntary switch). One
// that left its core may come back to caches another thread filled.
func trial(w work) (cpu, wall time.Duration, onCore bool, err error) {
	s0, err := threadSwitches()
	if err != nil {
		return 0, 0, false, err
	}
	c0, err := threadCPU()
	if err != nil {
		return 0, 0, false, err
	}
	w0 := time.Now()
	err = w.do()
	wall = time.Since(w0)
	if err != nil {
		return 0, 0, false, err
	}
	c1, err := threadCPU()
	if err != nil {
		return 0, 0, false, err
	}
	s1, err := threadSwitches()
	if err != nil {
		return 0, 0, false, err
	}
	cpu = c1 - c0
	return cpu, wall, s1 == s0 && wall-cpu <= offCoreAtMost, nil
}

// SpeedProbe times the probe's works, probeTrials times each in turn,
// on one locked thread, by that thread's CPU time and the wall clock. A
// trial's CPU time is the same on the same machine but for its host's
// other work: the cache work's shows how fast a core ran; the memory
// work's also what other cores (the machine's and, under a virtual
// machine, the host's) left of the cache they share; the DRAM work's
// what they left of memory. A wall time above the CPU time is the
// thread's wait for a core.
func SpeedProbe() (record.Probe, error) {
	return ProbeOn(context.Background(), probeTrials, -1)
}

// ProbeOn is SpeedProbe with trials per work, its thread held to logical
// CPU cpu (any the process may use when cpu is negative), ending early
// when ctx is done: the probe then holds the rounds done (Trials), none
// when not one was. It runs on a goroutine of its own whose thread ends
// with it, so neither the caller's thread nor where the caller's stack
// stands takes part, and no thread held to one CPU goes back to Go's
// pool.
func ProbeOn(ctx context.Context, trials, cpu int) (record.Probe, error) {
	type result struct {
		probe record.Probe
		err   error
	}
	out := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		p, err := probeHere(ctx, trials, cpu)
		out <- result{p, err}
	}()
	r := <-out
	return r.probe, r.err
}

// probeHere is ProbeOn on the calling goroutine's thread, which it holds
// to cpu for good.
func probeHere(ctx context.Context, trials, cpu int) (record.Probe, error) {
	if cpu >= 0 {
		if err := holdToCPU(cpu); err != nil {
			return record.Probe{}, err
		}
	}
	works, err := newWorks()
	if err != nil {
		return record.Probe{}, err
	}
	defer works.close()
	cpuMs, wallMs := map[string][]float64{}, map[string][]float64{}
	done := 0
	for ; done < trials && ctx.Err() == nil; done++ {
		for _, name := range WorkNames {
			c, w, _, err := trial(works[name])
			if err != nil {
				return record.Probe{}, err
			}
			cpuMs[name], wallMs[name] = append(cpuMs[name], ms(c)), append(wallMs[name], ms(w))
		}
	}
	if done == 0 {
		return record.Probe{}, nil
	}
	return record.Probe{Trials: done, Cache: probeTimes(cpuMs[CacheWork], wallMs[CacheWork]),
		Memory: probeTimes(cpuMs[MemoryWork], wallMs[MemoryWork]), DRAM: probeTimes(cpuMs[DRAMWork], wallMs[DRAMWork])}, nil
}

// holdToCPU holds the calling thread, which must stay locked to its
// goroutine until that ends, to logical CPU cpu.
func holdToCPU(cpu int) error {
	var only unix.CPUSet
	only.Set(cpu) // out of the set's range sets nothing, which the kernel refuses
	if err := unix.SchedSetaffinity(0, &only); err != nil {
		allowed, _ := AllowedCPUs()
		return fmt.Errorf("CPU %d is not one this process may run on (%v): allowed are %s", cpu, err, CPUList(allowed))
	}
	return nil
}

// AllowedCPUs are the logical CPUs the calling thread may run on: the
// process's, as taskset or a container's cpuset set them, on any thread
// GhostFleet has not held to one (only a probe's, which ends with it).
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("this process's CPUs: %w", err)
	}
	var cpus []int
	for i := range len(set) * int(unsafe.Sizeof(set[0])) * 8 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// CPUList names CPUs as a comma-separated list: 0,1,3.
func CPUList(cpus []int) string {
	ids := make([]string, len(cpus))
	for i, c := range cpus {
		ids[i] = strconv.Itoa(c)
	}
	return strings.Join(ids, ",")
}

// probeTimes are a work's trials' fastest and median CPU milliseconds
// and their median wall milliseconds; it sorts both.
func probeTimes(cpu, wall []float64) record.ProbeTimes {
	slices.Sort(cpu)
	slices.Sort(wall)
	return record.ProbeTimes{CPUMsMin: cpu[0], CPUMsMedian: cpu[len(cpu)/2], WallMsMedian: wall[len(wall)/2]}
}

// SpeedSampler does one trial of each of the probe's works as soon as
// it has made their data and then every interval, on a thread of its
// own, until stopped: how fast the machine ran all along a run, not only
// at its ends. Its time counts in GhostFleet's own CPU.
type SpeedSampler struct {
	mu       sync.Mutex
	totals   map[string]WorkTotals
	err      error
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// WorkTotals are a sampler's trials of one work so far and their CPU
// time, all of them and those whose thread kept its core throughout.
type WorkTotals struct {
	Trials, OnCore int
	CPU, OnCoreCPU time.Duration
}

// StartSpeedSampler starts sampling every interval.
func StartSpeedSampler(interval time.Duration) *SpeedSampler {
	s := &SpeedSampler{totals: map[string]WorkTotals{}, stop: make(chan struct{}), done: make(chan struct{})}
	go s.sample(interval)
	return s
}

func (s *SpeedSampler) sample(interval time.Duration) {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	works, err := newWorks()
	if err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return
	}
	defer works.close()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, name := range WorkNames {
			cpu, _, onCore, err := trial(works[name])
			s.mu.Lock()
			if err != nil {
				s.err = err
				s.mu.Unlock()
				return
			}
			t := s.totals[name]
			t.Trials++
			t.CPU += cpu
			if onCore {
				t.OnCore++
				t.OnCoreCPU += cpu
			}
			s.totals[name] = t
			s.mu.Unlock()
		}
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// Totals are the trials so far by work, or why sampling stopped.
func (s *SpeedSampler) Totals() (map[string]WorkTotals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.totals), s.err
}

// Stop ends the sampling and waits for its trial under way; stopping it
// again does nothing.
func (s *SpeedSampler) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// HostStart is the machine a run ran on, read at its start: how its
// CPUs' time went (/proc/stat) and how fast one of them did a fixed work
// (SpeedProbe), to be read again at its end (Since). The same work can
// cost a process more CPU seconds on a slower machine (a busy host under
// a virtual one slows its cores without the guest seeing steal): a run's
// CPU seconds compare with another's only with the probe beside them.
type HostStart struct {
	cpu   map[string]time.Duration
	cpus  int
	probe record.Probe
}

// ReadHost reads the machine's CPU time and probes its speed.
func ReadHost() (HostStart, error) {
	probe, err := SpeedProbe()
	if err != nil {
		return HostStart{}, err
	}
	cpu, cpus, err := HostCPU()
	return HostStart{cpu: cpu, cpus: cpus, probe: probe}, err
}

// Since reads the machine again and returns what it did since h: its
// cores' time by state, and the probe at both ends (the end's taken after
// the CPU time is read, so that the figures hold none of it).
func (h HostStart) Since() (record.Host, error) {
	cpu, _, err := HostCPU()
	if err != nil {
		return record.Host{}, err
	}
	probe, err := SpeedProbe()
	if err != nil {
		return record.Host{}, err
	}
	return record.Host{CPUs: h.cpus, CPUSeconds: CPUSecondsBetween(h.cpu, cpu), ProbeStart: h.probe, ProbeEnd: probe}, nil
}

// CPUSecondsBetween is the machine's CPU seconds by state from one
// HostCPU reading to a later one; a state that went down, as iowait can
// (HostCPUTotals), counts 0.
func CPUSecondsBetween(before, after map[string]time.Duration) map[string]float64 {
	out := make(map[string]float64, len(after))
	for state, t := range after {
		out[state] = max(t-before[state], 0).Seconds()
	}
	return out
}

// threadSwitches is how many times the kernel has taken the calling
// thread off its core to run another (its involuntary context switches).
func threadSwitches() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("this thread's context switches: %w", err)
	}
	return ru.Nivcsw, nil
}

// threadCPU is the calling thread's CPU time so far.
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("this thread's CPU time: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
