//go:build e2e

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// checkLoopbackOnly reads the real listening sockets (/proc/net/tcp and
// tcp6) of every process of the fleet called clusterName — those kwokctl
// records a pid for (apiserver, etcd, scheduler, controller-manager, the
// kwok controller, Prometheus) and any other process whose command line
// names the fleet's folder — and fails for each one not on 127.0.0.1 or
// ::1 (#16 item 5). A fleet must listen on at least six sockets, so a
// check that found nothing does not pass.
func checkLoopbackOnly(t *testing.T, clusterName string) {
	t.Helper()
	pids, err := fleet.PIDs(clusterName)
	if err != nil {
		t.Fatal(err)
	}
	// Processes kwokctl keeps no pid file for but started for this fleet.
	workdir := filepath.Dir(fleet.Own(clusterName).Kubeconfig)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(cmdline), workdir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids["pid-"+strconv.Itoa(pid)] = pid
		}
	}
	listeners, err := listenersOf(pids)
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners) < 6 {
		t.Errorf("found %d listening sockets of fleet %s's processes, want at least 6: %v", len(listeners), clusterName, listeners)
	}
	for _, l := range listeners {
		host, _, err := net.SplitHostPort(l.addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("%s listens on %s, not on 127.0.0.1 or ::1", l.process, l.addr)
		}
	}
	t.Logf("fleet %s: %d listening sockets, all on loopback: %v", clusterName, len(listeners), listeners)
}
