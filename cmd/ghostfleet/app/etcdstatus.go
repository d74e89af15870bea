package app

import (
	"fmt"
	"io"

	"github.com/ghostfleet/ghostfleet/fleet"
)

// printEtcd is status's etcd line, among the control plane's: the alarm
// and what to do, else the database's size against its quota.
func printEtcd(w io.Writer, s *fleet.EtcdSpace) {
	if s == nil {
		return
	}
	if msg := s.Message(); msg != "" {
		fmt.Fprintf(w, "  FAIL %s\n", msg)
		return
	}
	fmt.Fprintf(w, "  ok   %-24s database %s (%s in use) of its %s quota, no alarm\n", "etcd space", fleet.MiB(s.DBSize), fleet.MiB(s.DBSizeInUse), fleet.MiB(s.Quota))
}
