package fleet

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kwok/pkg/config"
)

// fakeCgroupRoot points cgroupRoot at a temporary folder laid out as the
// kernel's v1 or v2 hierarchy (its control files plain files).
func fakeCgroupRoot(t *testing.T, v2 bool) string {
	t.Helper()
	root := useCgroupRoot(t)
	if v2 {
		writeCgroupFile(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory pids")
	} else {
		writeCgroupFile(t, filepath.Join(root, "cpu", "cpu.cfs_quota_us"), "-1")
	}
	return root
}

// useCgroupRoot points cgroupRoot at an empty folder for the test.
func useCgroupRoot(t *testing.T) string {
	root := t.TempDir()
	old := cgroupRoot
	cgroupRoot = root
	t.Cleanup(func() { cgroupRoot = old })
	return root
}

func writeCgroupFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readCgroupFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A limit is CFS bandwidth in the component's own cgroup, with the
// process moved into it: cpu.max in v2 (the controller enabled on the way
// down), the quota and period in v1.
func TestCPULimitWritesTheCgroup(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		root := fakeCgroupRoot(t, v2)
		cg, err := findCPUCgroup()
		if err != nil || cg.v2 != v2 {
			t.Fatalf("v2 %v: found %+v, %v", v2, cg, err)
		}
		if err := cg.limit("gf", "kube-scheduler", 0.2, 4242); err != nil {
			t.Fatal(err)
		}
		dir := cg.dir("gf", "kube-scheduler")
		if got := readCgroupFile(t, filepath.Join(dir, "cgroup.procs")); got != "4242" {
			t.Errorf("v2 %v: cgroup.procs %q", v2, got)
		}
		if v2 {
			if got := readCgroupFile(t, filepath.Join(dir, "cpu.max")); got != "20000 100000" {
				t.Errorf("cpu.max %q", got)
			}
			for _, d := range []string{root, filepath.Join(root, "ghostfleet"), filepath.Join(root, "ghostfleet", "gf")} {
				if got := readCgroupFile(t, filepath.Join(d, "cgroup.subtree_control")); got != "+cpu" {
					t.Errorf("%s: subtree_control %q", d, got)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "cgroup.subtree_control")); !os.IsNotExist(err) {
				t.Errorf("the component's own cgroup has its controllers turned on for children: %v", err)
			}
		} else {
			if !strings.HasPrefix(dir, filepath.Join(root, "cpu", "ghostfleet")) {
				t.Errorf("v1 cgroup at %s", dir)
			}
			if q, p := readCgroupFile(t, filepath.Join(dir, "cpu.cfs_quota_us")), readCgroupFile(t, filepath.Join(dir, "cpu.cfs_period_us")); q != "20000" || p != "100000" {
				t.Errorf("quota %q period %q", q, p)
			}
		}
	}
}

// With no cpu controller, a profile with limits is refused before a fleet
// is made, naming what it limits; one without limits needs none. Where
// there is one, a probe cgroup is made with a limit and removed.
func TestCheckCPULimits(t *testing.T) {
	root := useCgroupRoot(t)
	p := ComponentProfile{Name: "capped", CPULimits: map[string]float64{"kube-scheduler": 0.2, "etcd": 1}}
	err := checkCPULimits(p)
	if err == nil || !strings.Contains(err.Error(), "profile capped limits etcd and kube-scheduler's CPU") || !strings.Contains(err.Error(), "no cpu cgroup controller") {
		t.Errorf("no controller: %v", err)
	}
	if err := checkCPULimits(ComponentProfile{Name: "free"}); err != nil {
		t.Errorf("no limits: %v", err)
	}
	writeCgroupFile(t, filepath.Join(root, "cgroup.controllers"), "memory pids")
	if err := checkCPULimits(p); err == nil || !strings.Contains(err.Error(), "has no cpu controller") {
		t.Errorf("v2 without cpu: %v", err)
	}
	// On a plain folder the probe's control file stays, so its removal
	// fails where the kernel's rmdir would not: that shows it was made.
	root = fakeCgroupRoot(t, true)
	probe := filepath.Join(root, "ghostfleet", ".probe-"+strconv.Itoa(os.Getpid()))
	err = checkCPULimits(p)
	if err == nil || !strings.Contains(err.Error(), "removing cgroup "+probe) {
		t.Errorf("probe: %v", err)
	}
	if got := readCgroupFile(t, filepath.Join(probe, "cpu.max")); got != "1000 100000" {
		t.Errorf("probe's cpu.max %q", got)
	}
}

// remove takes the fleet's cgroups away (their control files are the
// kernel's, so the folders are empty to rmdir) and leaves other fleets'.
func TestCPULimitRemove(t *testing.T) {
	fakeCgroupRoot(t, false)
	cg, _ := findCPUCgroup()
	for _, d := range []string{cg.dir("gf", "kube-scheduler"), cg.dir("gf", "etcd"), cg.dir("other", "etcd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := cg.remove("gf"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dir("gf", "")); !os.IsNotExist(err) {
		t.Errorf("gf's cgroup left: %v", err)
	}
	if _, err := os.Stat(cg.dir("other", "etcd")); err != nil {
		t.Errorf("another fleet's cgroup: %v", err)
	}
	if err := cg.remove("never"); err != nil {
		t.Errorf("a fleet without cgroups: %v", err)
	}
}

// limitCPU moves the running processes of the components the fleet's
// state limits, only the one asked for when one is named, and leaves a
// component that is not running to the start that brings it back. A
// fleet that limits nothing needs no cpu controller at all.
func TestLimitCPU(t *testing.T) {
	old := config.ClustersDir
	config.ClustersDir = t.TempDir()
	t.Cleanup(func() { config.ClustersDir = old })
	useCgroupRoot(t) // no controller

	if err := os.MkdirAll(filepath.Join(clusterWorkdir("free"), "pids"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := saveState(State{Name: "free"}); err != nil {
		t.Fatal(err)
	}
	if err := limitCPU("free", ""); err != nil {
		t.Errorf("a fleet without limits: %v", err)
	}

	if err := os.MkdirAll(filepath.Join(clusterWorkdir("gf"), "pids"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := saveState(State{Name: "gf", CPULimits: map[string]float64{"kube-scheduler": 0.2, "etcd": 0.5, "kube-apiserver": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := limitCPU("gf", "metrics-server"); err != nil {
		t.Errorf("a component the fleet does not limit: %v", err)
	}
	if err := limitCPU("gf", ""); err == nil || !strings.Contains(err.Error(), "no cpu cgroup controller") {
		t.Errorf("limits without a controller: %v", err)
	}

	fakeCgroupRoot(t, false)
	cg, _ := findCPUCgroup()
	self := os.Getpid() // a running process to stand for the components
	writeCgroupFile(t, pidFile("gf", "kube-scheduler"), strconv.Itoa(self))
	writeCgroupFile(t, pidFile("gf", "etcd"), strconv.Itoa(self))
	// kube-apiserver has no pid file: not running.
	if err := limitCPU("gf", "kube-scheduler"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dir("gf", "etcd")); !os.IsNotExist(err) {
		t.Errorf("etcd limited when only the scheduler was asked for: %v", err)
	}
	if err := limitCPU("gf", ""); err != nil {
		t.Fatal(err)
	}
	for c, quota := range map[string]string{"kube-scheduler": "20000", "etcd": "50000"} {
		if got := readCgroupFile(t, filepath.Join(cg.dir("gf", c), "cpu.cfs_quota_us")); got != quota {
			t.Errorf("%s: quota %q, want %s", c, got, quota)
		}
		if got := readCgroupFile(t, filepath.Join(cg.dir("gf", c), "cgroup.procs")); got != strconv.Itoa(self) {
			t.Errorf("%s: cgroup.procs %q", c, got)
		}
	}
	if _, err := os.Stat(cg.dir("gf", "kube-apiserver")); !os.IsNotExist(err) {
		t.Errorf("a component not running got a cgroup: %v", err)
	}
}
