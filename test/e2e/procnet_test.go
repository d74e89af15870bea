//go:build e2e

package e2e

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

type listener struct{ process, addr string }

// listenersOf lists the TCP sockets in LISTEN state that the processes
// hold, one per process and socket.
func listenersOf(pids map[string]int) ([]listener, error) {
	seen := map[int]bool{}
	listening := map[string]string{} // socket inode → address
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := readListening(f, listening); err != nil {
			return nil, err
		}
	}
	var out []listener
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return nil, err
		}
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			if addr, ok := listening[inode]; ok {
				out = append(out, listener{process: strings.TrimSpace(string(comm)), addr: addr})
			}
		}
	}
	return out, nil
}

func readListening(path string, into map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		addr, err := decodeAddr(fields[1])
		if err != nil {
			return err
		}
		into[fields[9]] = addr
	}
	return sc.Err()
}

// decodeAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func decodeAddr(s string) (string, error) {
	hostHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("address %q", s)
	}
	raw, err := hex.DecodeString(hostHex)
	if err != nil {
		return "", err
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(net.IP(raw).String(), strconv.FormatUint(port, 10)), nil
}
