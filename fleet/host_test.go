package fleet

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ghostfleet/ghostfleet/fleet/record"
)

func TestParseHostCPU(t *testing.T) {
	stat := "cpu  1472590 743 383671 100000000000 13714 0 37088 4550 0 0\n" +
		"cpu0 736000 400 190000 50000000000 7000 0 18000 2300 0 0\n" +
		"cpu1 736590 343 193671 50000000000 6714 0 19088 2250 0 0\n" +
		"intr 123 4 5\nctxt 99\ncpu_extra_not_a_cpu 1\n"
	cpu, cpus, err := parseHostCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if cpus != 2 {
		t.Errorf("%d CPUs, want 2", cpus)
	}
	// idle is a billion seconds: ticks times a second's nanoseconds
	// would overflow.
	want := map[string]time.Duration{"user": 14725900 * time.Millisecond, "nice": 7430 * time.Millisecond, "system": 3836710 * time.Millisecond,
		"idle": 1e9 * time.Second, "iowait": 137140 * time.Millisecond, "irq": 0, "softirq": 370880 * time.Millisecond, "steal": 45500 * time.Millisecond}
	if !reflect.DeepEqual(cpu, want) {
		t.Errorf("states %v, want %v", cpu, want)
	}
	for _, bad := range []string{"intr 1 2\n", "cpu 1 2 3\n", "cpu 1 2 3 x 5 6 7 8\n"} {
		if _, _, err := parseHostCPU(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: error %v, want one naming /proc/stat", bad, err)
		}
	}
}

// A state that goes down (iowait may) adds nothing: the totals never
// fall, and the rest go on counting.
func TestHostCPUTotals(t *testing.T) {
	reads := []map[string]time.Duration{
		{"idle": 10 * time.Second, "iowait": 5 * time.Second},
		{"idle": 20 * time.Second, "iowait": 3 * time.Second},
		{"idle": 25 * time.Second, "iowait": 4 * time.Second},
	}
	n := 0
	totals := hostCPUTotals(func() (map[string]time.Duration, int, error) {
		n++
		return reads[n-1], 2, nil
	})
	var got []map[string]time.Duration
	for range reads {
		r, err := totals()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []map[string]time.Duration{
		{"idle": 0, "iowait": 0},
		{"idle": 10 * time.Second, "iowait": 0},
		{"idle": 15 * time.Second, "iowait": time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("totals %v, want %v", got, want)
	}
}

func TestProbeTimes(t *testing.T) {
	got := probeTimes([]float64{5, 1, 3, 9, 2}, []float64{30, 9, 6, 8, 7})
	if want := (record.ProbeTimes{CPUMsMin: 1, CPUMsMedian: 3, WallMsMedian: 8}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// The probe's works allocate nothing once their data are made, from
// their first timed trial on, so the garbage collector takes no share of
// their time.
func TestProbeWorkAllocatesNothing(t *testing.T) {
	works, err := newWorks()
	if err != nil {
		t.Fatal(err)
	}
	defer works.close()
	for _, name := range WorkNames {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := works[name].do()
		runtime.ReadMemStats(&after)
		if n := after.Mallocs - before.Mallocs; err != nil || n != 0 {
			t.Errorf("%s work's first trial: %v, %d allocations; want none", name, err, n)
		}
	}
}

// The DRAM work's chase is one cycle through every entry: its step comes
// back to where it started after exactly as many steps as there are
// entries, and its table holds that step.
func TestChaseIsOneCycle(t *testing.T) {
	at, steps := chaseNext(0), 1
	for ; at != 0 && steps <= chaseEntries; steps++ {
		at = chaseNext(at)
	}
	if steps != chaseEntries {
		t.Errorf("back at 0 after %d steps, want %d", steps, chaseEntries)
	}
	c, err := newChase()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, i := range []uint32{0, 1, 12345, chaseEntries / 2, chaseEntries - 1} {
		if c.next[i] != chaseNext(i) {
			t.Errorf("next[%d] = %d, want %d", i, c.next[i], chaseNext(i))
		}
	}
}

// The probe times its works on this thread's CPU clock: every trial
// costs some, the fastest no more than the median. What they cost is the
// machine's, not asserted.
func TestSpeedProbe(t *testing.T) {
	p, err := SpeedProbe()
	if err != nil {
		t.Fatal(err)
	}
	if p.Trials != probeTrials {
		t.Errorf("probe %+v; want %d trials", p, probeTrials)
	}
	for name, w := range map[string]record.ProbeTimes{"cache": p.Cache, "memory": p.Memory, "dram": p.DRAM} {
		if w.CPUMsMin <= 0 || w.CPUMsMin > w.CPUMsMedian || w.WallMsMedian <= 0 {
			t.Errorf("%s work %+v; want CPU time above 0, the fastest at most the median", name, w)
		}
	}
}

// holdToCPU holds the thread to the one CPU asked for, and refuses one
// the process may not run on, naming those it may.
func TestHoldToCPU(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("allowed CPUs %v, %v", allowed, err)
	}
	cpu := allowed[len(allowed)-1]
	type held struct {
		mask []int
		err  error
	}
	out := make(chan held, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the held thread ends with this goroutine
		if err := holdToCPU(cpu); err != nil {
			out <- held{err: err}
			return
		}
		mask, err := AllowedCPUs()
		out <- held{mask, err}
	}()
	if h := <-out; h.err != nil || !reflect.DeepEqual(h.mask, []int{cpu}) {
		t.Errorf("held to CPU %d: the thread may run on %v (%v); want only %d", cpu, h.mask, h.err, cpu)
	}
	err = holdToCPU(1024) // on the test's own thread: refused before anything changes
	if err == nil || !strings.Contains(err.Error(), "CPU 1024 is not one this process may run on") || !strings.HasSuffix(err.Error(), "allowed are "+CPUList(allowed)) {
		t.Errorf("CPU 1024: %v; want it refused naming %s", err, CPUList(allowed))
	}
}

// ProbeOn leaves the caller's thread as it was, stops at once when its
// context is done, and passes on a refused CPU.
func TestProbeOn(t *testing.T) {
	runtime.LockOSThread() // the same thread before and after
	defer runtime.UnlockOSThread()
	before, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProbeOn(context.Background(), 2, before[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.Trials != 2 || p.Cache.CPUMsMin <= 0 {
		t.Errorf("probe %+v; want 2 trials timed", p)
	}
	if after, _ := AllowedCPUs(); !reflect.DeepEqual(after, before) {
		t.Errorf("the caller's thread may run on %v after the probe, want %v as before", after, before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := ProbeOn(ctx, 5, -1); err != nil || p.Trials != 0 {
		t.Errorf("a done context: probe %+v, %v; want no trial and no error", p, err)
	}
	if _, err := ProbeOn(context.Background(), 1, 1024); err == nil {
		t.Error("CPU 1024: probed; want it refused")
	}
}

// The machine's CPU time over a stretch counts the work done in it, and
// no more than its CPUs had in that time.
func TestHostSince(t *testing.T) {
	start := time.Now()
	h, err := ReadHost()
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	from, err := threadCPU()
	if err != nil {
		t.Fatal(err)
	}
	for { // a fifth of a second of this thread's CPU
		if now, _ := threadCPU(); now-from > 200*time.Millisecond {
			break
		}
	}
	got, err := h.Since()
	if err != nil {
		t.Fatal(err)
	}
	all := 0.0
	for _, s := range got.CPUSeconds {
		all += s
	}
	most := float64(got.CPUs)*time.Since(start).Seconds() + 0.1 // a tick a state, rounded
	if got.CPUs < 1 || got.CPUSeconds["user"]+got.CPUSeconds["system"] < 0.1 || all > most || got.ProbeStart.Memory.CPUMsMin <= 0 || got.ProbeEnd.Cache.CPUMsMin <= 0 {
		t.Errorf("host %+v; want at least 0.1 s of user and system time over 0.2 s of work, at most %.2f s in all, and a probe at both ends", got, most)
	}
}

// The sampler times both works at its start and at each interval, and
// once stopped adds no more; stopping it again does nothing.
func TestSpeedSampler(t *testing.T) {
	s := StartSpeedSampler(10 * time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Totals()
		if err != nil {
			t.Fatal(err)
		}
		if got[MemoryWork].Trials >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%+v after 30 s at a trial each 10 ms", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Stop()
	stopped, _ := s.Totals()
	time.Sleep(50 * time.Millisecond)
	s.Stop()
	later, _ := s.Totals()
	for _, w := range WorkNames {
		if got := stopped[w]; got.CPU <= 0 || got.OnCore > got.Trials || got.OnCoreCPU > got.CPU {
			t.Errorf("%s: %+v; want CPU time, and no more trials or time on core than in all", w, got)
		}
	}
	if !reflect.DeepEqual(later, stopped) {
		t.Errorf("totals %+v when stopped, %+v later; want none added once stopped", stopped, later)
	}
}
