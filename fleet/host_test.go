package fleet

import (
	"runtime"

	"github.com/ghostfleet/ghostfleet/fleet/record"
	"strings"
	"testing"
	"time"
)

func TestParseHostCPU(t *testing.T) {
	stat := "cpu  1472590 743 383671 7241966 13714 0 37088 4550 0 0\n" +
		"cpu0 736000 400 190000 3620000 7000 0 18000 2300 0 0\n" +
		"cpu1 736590 343 193671 3621966 6714 0 19088 2250 0 0\n" +
		"intr 123 4 5\nctxt 99\ncpu_extra_not_a_core 1\n"
	cpu, cores, err := parseHostCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if cores != 2 {
		t.Errorf("%d cores, want 2", cores)
	}
	want := map[string]time.Duration{"user": 14725900 * time.Millisecond, "nice": 7430 * time.Millisecond, "system": 3836710 * time.Millisecond,
		"idle": 72419660 * time.Millisecond, "iowait": 137140 * time.Millisecond, "irq": 0, "softirq": 370880 * time.Millisecond, "steal": 45500 * time.Millisecond}
	for state, d := range want {
		if cpu[state] != d {
			t.Errorf("%s %v, want %v", state, cpu[state], d)
		}
	}
	if len(cpu) != len(want) {
		t.Errorf("states %v, want only %d", cpu, len(want))
	}
	for _, bad := range []string{"intr 1 2\n", "cpu 1 2 3\n", "cpu 1 2 3 x 5 6 7 8\n"} {
		if _, _, err := parseHostCPU(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: error %v, want one naming /proc/stat", bad, err)
		}
	}
}

// The probe times its work on this thread's CPU clock: every trial costs
// some, the fastest no more than the median. What it costs is the
// machine's, not asserted.
func TestSpeedProbe(t *testing.T) {
	p, err := SpeedProbe()
	if err != nil {
		t.Fatal(err)
	}
	if p.Trials != probeTrials {
		t.Errorf("probe %+v; want %d trials", p, probeTrials)
	}
	for name, w := range map[string]record.ProbeTimes{"cache": p.Cache, "memory": p.Memory} {
		if w.CPUMsMin <= 0 || w.CPUMsMin > w.CPUMsMedian || w.WallMsMedian <= 0 {
			t.Errorf("%s work %+v; want CPU time above 0, the fastest at most the median", name, w)
		}
	}
}

// The machine's CPU time over a stretch counts the work done in it.
func TestHostSince(t *testing.T) {
	h, err := ReadHost()
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := threadCPU()
	if err != nil {
		t.Fatal(err)
	}
	for { // a fifth of a second of this thread's CPU
		if now, _ := threadCPU(); now-start > 200*time.Millisecond {
			break
		}
	}
	got, err := h.Since()
	if err != nil {
		t.Fatal(err)
	}
	if got.CPUs < 1 || got.CPUSeconds["user"]+got.CPUSeconds["system"] < 0.1 || got.ProbeStart.Memory.CPUMsMin <= 0 || got.ProbeEnd.Cache.CPUMsMin <= 0 {
		t.Errorf("host %+v; want at least 0.1 s of user and system time over 0.2 s of work, and a probe at both ends", got)
	}
}

// The sampler times both works at its start and at each interval, and
// once stopped adds no more.
func TestSpeedSampler(t *testing.T) {
	s := StartSpeedSampler(10 * time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Totals()
		if err != nil {
			t.Fatal(err)
		}
		if got.Trials >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d trials after 30 s at one each 10 ms", got.Trials)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Stop()
	stopped, _ := s.Totals()
	time.Sleep(50 * time.Millisecond)
	later, _ := s.Totals()
	if stopped.Cache <= 0 || stopped.Memory <= 0 || later != stopped {
		t.Errorf("totals %+v when stopped, %+v later; want CPU time on both works, and none added once stopped", stopped, later)
	}
}
