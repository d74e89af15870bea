package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A killed component nobody reaped is a zombie: kwokctl counts it as
// running, GhostFleet must not, and a restart must forget it.
func TestComponentAliveSeesZombies(t *testing.T) {
	name := fmt.Sprintf("ghostfleet-unit-zombie-%d", os.Getpid())
	dir := filepath.Join(clusterWorkdir(name), "pids")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(clusterWorkdir(name)) })

	if componentAlive(name, "etcd") {
		t.Error("alive without a pid file")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidFile(name, "etcd"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	if !componentAlive(name, "etcd") {
		t.Fatal("a running process is not alive")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for componentAlive(name, "etcd") { // not reaped: it turns zombie
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped process still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the test expected a zombie, the process is gone: %v", err)
	}
	forgetProcess(name, "etcd")
	if _, err := os.Stat(pidFile(name, "etcd")); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err == nil {
		t.Error("the zombie was not reaped")
	}
}
