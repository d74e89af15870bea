package fleet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

// The machine a run ran on: how its cores' time went (/proc/stat) and how
// fast one of them did a fixed work (SpeedProbe), read at the run's start
// and end. The same work can cost a process more CPU seconds on a slower
// machine (a busy host under a virtual one slows its cores without the
// guest seeing steal): a run's CPU seconds compare with another's only
// with the probe beside them.

// hostStates are /proc/stat's CPU states, in its order (guest time is
// counted in user's, and left out).
var hostStates = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// HostCPU returns the machine's CPU time so far by state, summed over its
// cores, from /proc/stat's first line.
func HostCPU() (map[string]time.Duration, error) {
	cpu, _, err := readHostCPU()
	return cpu, err
}

// readHostCPU is HostCPU and how many cores /proc/stat counts.
func readHostCPU() (map[string]time.Duration, int, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, 0, err
	}
	return parseHostCPU(string(stat))
}

// parseHostCPU reads /proc/stat's first line, the machine's CPU states
// in ticks, and counts its lines of one core each ("cpu0"…).
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
		out[state] = time.Duration(ticks) * time.Second / clockTicks
	}
	cores := 0
	for l := range strings.Lines(stat) {
		if rest, ok := strings.CutPrefix(l, "cpu"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			cores++
		}
	}
	return out, cores, nil
}

// probeTrials is how many times SpeedProbe does each of its works: the
// fastest trial is the machine's speed, the median what the run's
// neighbours left.
const probeTrials = 7

// probeWork is one of the probe's works: keys names put into a map,
// each looked up, and a copy of them sorted, rounds times over.
type probeWork struct{ keys, rounds int }

// The probe's two works, of as many names in all: 2,000 fifty times
// over, whose names and map fit a core's own caches (its second level is
// 1 MiB here), and 100,000 once, whose spill into the cache the cores
// share and into memory, as a control plane's data do.
var (
	cacheWork  = probeWork{keys: 2000, rounds: 50}
	memoryWork = probeWork{keys: 100000, rounds: 1}
)

// probeKey is one name of the probe's work, held in an array so that
// the work writes no pointer: with none, the garbage collector's write
// barrier, on while it marks (GhostFleet's own process allocates as it
// watches the fleet), does not slow it.
type probeKey [32]byte

// probeData is a work's names, map and sorted copy, made before it is
// timed.
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
	return d
}

// run does the work once and returns its lookups' sum, to check them.
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

// trial does the work once on the calling goroutine's thread, which must
// be locked to it, and returns the thread's CPU time and the wall time
// it took.
func (d probeData) trial() (cpu, wall time.Duration, err error) {
	c0, err := threadCPU()
	if err != nil {
		return 0, 0, err
	}
	w0 := time.Now()
	sum := d.run()
	wall = time.Since(w0)
	c1, err := threadCPU()
	if err != nil {
		return 0, 0, err
	}
	if want := d.rounds * d.keys * (d.keys - 1) / 2; sum != want {
		return 0, 0, fmt.Errorf("the speed probe's lookups summed %d, want %d", sum, want)
	}
	return c1 - c0, wall, nil
}

// SpeedProbe times the probe's two works, probeTrials times each in
// turn, on one locked thread, by that thread's CPU time and the wall
// clock. Neither allocates nor writes a pointer: the garbage collector
// takes no share of them. A trial's CPU time is the same on the same
// machine but for its host's other work: the cache work's shows how fast
// a core ran, the memory work's also what other cores (the machine's
// and, under a virtual machine, the host's) left of the caches and
// memory they share. A wall time above the CPU time is the thread's
// wait for a core.
func SpeedProbe() (record.Probe, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	works := []probeData{newProbeData(cacheWork), newProbeData(memoryWork)}
	cpu := [][]float64{make([]float64, probeTrials), make([]float64, probeTrials)}
	wall := [][]float64{make([]float64, probeTrials), make([]float64, probeTrials)}
	for t := range probeTrials {
		for i, d := range works {
			c, w, err := d.trial()
			if err != nil {
				return record.Probe{}, err
			}
			cpu[i][t], wall[i][t] = ms(c), ms(w)
		}
	}
	times := func(i int) record.ProbeTimes {
		slices.Sort(cpu[i])
		slices.Sort(wall[i])
		return record.ProbeTimes{CPUMsMin: cpu[i][0], CPUMsMedian: cpu[i][probeTrials/2], WallMsMedian: wall[i][probeTrials/2]}
	}
	return record.Probe{Trials: probeTrials, Cache: times(0), Memory: times(1)}, nil
}

// SpeedSampler does one trial of each of the probe's works at its start
// and then every interval, on a thread of its own, until stopped: how
// fast the machine ran all along a run, not only at its ends. It costs
// a core about 35 ms a trial of both (GhostFleet's own CPU holds it).
type SpeedSampler struct {
	mu     sync.Mutex
	totals SpeedTotals
	err    error
	stop   chan struct{}
	done   chan struct{}
}

// SpeedTotals are a sampler's trials so far and their CPU time, by work.
type SpeedTotals struct {
	Trials        int
	Cache, Memory time.Duration
}

// StartSpeedSampler starts sampling every interval.
func StartSpeedSampler(interval time.Duration) *SpeedSampler {
	s := &SpeedSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go s.sample(interval)
	return s
}

func (s *SpeedSampler) sample(interval time.Duration) {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cache, memory := newProbeData(cacheWork), newProbeData(memoryWork)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		c, _, err := cache.trial()
		var m time.Duration
		if err == nil {
			m, _, err = memory.trial()
		}
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.totals.Trials++
			s.totals.Cache += c
			s.totals.Memory += m
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// Totals are the trials so far, or why sampling stopped.
func (s *SpeedSampler) Totals() (SpeedTotals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals, s.err
}

// Stop ends the sampling and waits for its trial under way.
func (s *SpeedSampler) Stop() {
	close(s.stop)
	<-s.done
}

func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("this thread's CPU time: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// HostStart is the machine read at a run's start.
type HostStart struct {
	cpu   map[string]time.Duration
	cores int
	probe record.Probe
}

// ReadHost reads the machine's CPU time and probes its speed.
func ReadHost() (HostStart, error) {
	probe, err := SpeedProbe()
	if err != nil {
		return HostStart{}, err
	}
	cpu, cores, err := readHostCPU()
	return HostStart{cpu: cpu, cores: cores, probe: probe}, err
}

// Since reads the machine again and returns what it did since h: its
// cores' time by state, and the probe at both ends (the end's taken after
// the CPU time is read, so that the figures hold none of it).
func (h HostStart) Since() (record.Host, error) {
	cpu, err := HostCPU()
	if err != nil {
		return record.Host{}, err
	}
	probe, err := SpeedProbe()
	if err != nil {
		return record.Host{}, err
	}
	out := record.Host{CPUs: h.cores, CPUSeconds: map[string]float64{}, ProbeStart: h.probe, ProbeEnd: probe}
	for state, t := range cpu {
		out.CPUSeconds[state] = (t - h.cpu[state]).Seconds()
	}
	return out, nil
}
