package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/ghostfleet/ghostfleet/metrics/poll"
)

// hiddenMetrics is sampleMetrics on a cluster whose scheduler and etcd
// /metrics cannot be read: their charts have no values and say why; the
// apiserver's charts are unaffected.
func hiddenMetrics() poll.MetricsView {
	m := sampleMetrics()
	m.Throughput, m.EtcdBytes, m.EtcdQuota = nil, nil, 0
	m.Unavailable = map[string]string{
		poll.QueryThroughput: "scheduler /metrics unreachable: no pod labelled component=kube-scheduler in kube-system to reach through the apiserver (a managed or hidden control plane)",
		poll.QueryEtcdSize:   "etcd /metrics hidden: attached with --metrics apiserver-only",
	}
	return m
}

func TestGoldenFramesWithUnavailableSeries(t *testing.T) {
	pinProfile(t, termenv.Ascii)
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			frame := Frame(testConfig(false), sampleFleet(100), hiddenMetrics(), sz.w, sz.h)
			if strings.Contains(frame, "no data yet") {
				t.Errorf("a hidden component's chart says no data yet:\n%s", frame)
			}
			if !strings.Contains(frame, "not available on") {
				t.Errorf("no chart says not available:\n%s", frame)
			}
			golden(t, fmt.Sprintf("plain-%dx%d-unavailable", sz.w, sz.h), frame)
		})
	}
}

// The scheduler's chart of a hidden scheduler is not a flat zero, while
// APF rejections with no series yet are one (the apiserver is there).
func TestUnavailableIsNotZero(t *testing.T) {
	sp := sparks(hiddenMetrics(), 0)
	if sp[1].values != nil || !strings.HasPrefix(sp[1].note, "not available on this cluster (scheduler /metrics unreachable") {
		t.Errorf("scheduler chart %+v", sp[1])
	}
	m := hiddenMetrics()
	m.Rejected = nil
	if sp := sparks(m, 0); len(sp[2].values) == 0 || sp[2].values[0] != 0 {
		t.Errorf("APF rejected without series: %v, want a flat zero", sp[2].values)
	}
}
