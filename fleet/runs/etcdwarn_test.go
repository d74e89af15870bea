package runs

import (
	"errors"
	"strings"
	"testing"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
	"github.com/ghostfleet/ghostfleet/fleet/workload"
)

func TestEtcdWarnings(t *testing.T) {
	nospace := map[string]int{requests.ErrEtcdNoSpace: 3, requests.ErrServer: 1}
	tests := []struct {
		name   string
		result any
		want   string // "" for no warning
	}{
		{"load", workload.LoadResult{Requests: requests.Stats{Errors: nospace}}, "etcd refused 3 writes"},
		{"load without", workload.LoadResult{Requests: requests.Stats{Errors: map[string]int{requests.ErrServer: 4}}}, ""},
		{"churn counts its calls and the transport's once", workload.ChurnResult{Errors: nospace, Requests: &requests.Stats{Errors: map[string]int{requests.ErrEtcdNoSpace: 2}}}, "etcd refused 3 writes"},
		{"train", workload.TrainResult{Requests: requests.Stats{Errors: map[string]int{requests.ErrEtcdNoSpace: 1}}}, "etcd refused 1 write "},
		{"binpack", workload.BinpackResult{Requests: requests.Stats{Errors: nospace}}, "etcd refused 3 writes"},
		{"not a workload", fleet.Restart{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := etcdWarnings(tt.result)
			if tt.want == "" {
				if len(got) != 0 {
					t.Errorf("warnings = %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "NOSPACE") || !strings.Contains(got[0], fleet.EtcdRecoverCommand) {
				t.Errorf("warnings = %q, want one saying %q, naming NOSPACE and %q", got, tt.want, fleet.EtcdRecoverCommand)
			}
		})
	}
}

func TestEtcdRecoverSummary(t *testing.T) {
	quota := int64(24 << 20)
	tests := []struct {
		name   string
		r      fleet.EtcdRecovery
		want   []string
		advice int
	}{
		{"no alarm", fleet.EtcdRecovery{Before: fleet.EtcdSpace{Alarms: []string{}, DBSize: 1 << 20, DBSizeInUse: 1 << 20, Quota: quota}},
			[]string{"no alarm raised: nothing to do", "1.0 MiB"}, 0},
		{"recovered", fleet.EtcdRecovery{
			Before:      fleet.EtcdSpace{Alarms: []string{fleet.AlarmNoSpace}, DBSize: quota, Quota: quota},
			After:       fleet.EtcdSpace{Alarms: []string{}, DBSize: 2 << 20, DBSizeInUse: 2 << 20, Quota: quota},
			CompactedTo: 449, Defragmented: true, Disarmed: []string{fleet.AlarmNoSpace}, Seconds: 0.8,
			Down: []string{"kube-scheduler"},
		}, []string{"etcd NOSPACE: database 24.0 MiB → 2.0 MiB of its 24.0 MiB quota in 0.8s", "compacted to revision 449, defragmented, disarmed NOSPACE"}, 1},
		{"still full", fleet.EtcdRecovery{
			Before:      fleet.EtcdSpace{Alarms: []string{fleet.AlarmNoSpace}, DBSize: quota, Quota: quota},
			After:       fleet.EtcdSpace{Alarms: []string{fleet.AlarmNoSpace}, DBSize: quota, DBSizeInUse: quota, Quota: quota},
			CompactedTo: 9, Defragmented: true, StillFull: true,
		}, []string{"still raised: NOSPACE"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := EtcdRecoverResult{EtcdRecovery: tt.r}
			s := res.Summary()
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("Summary = %q, want it to say %q", s, w)
				}
			}
			if got := res.Advice(); len(got) != tt.advice {
				t.Errorf("Advice = %q, want %d lines", got, tt.advice)
			}
		})
	}
}

func TestExplainEtcd(t *testing.T) {
	if ExplainEtcd(nil) != nil {
		t.Error("nil must stay nil")
	}
	other := errors.New("creating namespace gf-load: forbidden")
	if ExplainEtcd(other) != other {
		t.Error("another error must come back as it is")
	}
	nospace := errors.New("creating namespace gf-load: etcdserver: mvcc: database space exceeded")
	got := ExplainEtcd(nospace)
	if !errors.Is(got, nospace) || !strings.Contains(got.Error(), "NOSPACE alarm is raised") || !strings.Contains(got.Error(), fleet.EtcdRecoverCommand) {
		t.Errorf("ExplainEtcd = %v, want the error, the alarm and %q", got, fleet.EtcdRecoverCommand)
	}
}
