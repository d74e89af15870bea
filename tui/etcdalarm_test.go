package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// The strip leads with etcd's alarm while one is raised, even when the
// metrics failed, and drops it when the alarm is gone.
func TestStripShowsEtcdAlarm(t *testing.T) {
	s := newSLOStrip(&shared{th: NewTheme(false)}, 1)
	s.SetSize(120, 1)
	m := metricsAt(time.Now(), 0.1)
	m.EtcdAlarms = []string{"NOSPACE"}
	s.observe(m, nil)
	line := s.View()
	if !strings.HasPrefix(line, "✗ etcd NOSPACE alarm — writes refused; recover: ghostfleet etcd recover · SLOs") || ansi.StringWidth(line) != 120 {
		t.Errorf("strip %q, want it to lead with the alarm and the command, 120 cells", line)
	}
	m.Err = "connection refused"
	s.observe(m, nil)
	if line := s.View(); !strings.Contains(line, "etcd NOSPACE") || !strings.Contains(line, "metrics unavailable") {
		t.Errorf("strip %q, want the alarm beside the metrics' failure", line)
	}
	m.Err, m.EtcdAlarms = "", nil
	s.observe(m, nil)
	if line := s.View(); strings.Contains(line, "etcd") {
		t.Errorf("strip %q after the alarm was disarmed", line)
	}
}
