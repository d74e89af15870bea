package fleet

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestAlarmNames(t *testing.T) {
	tests := []struct {
		name    string
		members []*pb.AlarmMember
		want    string
	}{
		{"none", nil, ""},
		{"nospace", []*pb.AlarmMember{{MemberID: 1, Alarm: pb.AlarmType_NOSPACE}}, "NOSPACE"},
		{"each once, sorted", []*pb.AlarmMember{
			{MemberID: 1, Alarm: pb.AlarmType_NOSPACE}, {MemberID: 2, Alarm: pb.AlarmType_CORRUPT},
			{MemberID: 3, Alarm: pb.AlarmType_NOSPACE}, {MemberID: 4, Alarm: pb.AlarmType_NONE}, nil,
		}, "CORRUPT,NOSPACE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := alarmNames(tt.members)
			if got == nil || strings.Join(got, ",") != tt.want {
				t.Errorf("alarmNames = %#v, want %q (never nil: -o json says [])", got, tt.want)
			}
		})
	}
}

func TestEtcdSpaceMessage(t *testing.T) {
	tests := []struct {
		name string
		s    EtcdSpace
		want []string // substrings; none: no message
	}{
		{"healthy", EtcdSpace{DBSize: 1 << 20, Quota: 24 << 20}, nil},
		{"nospace", EtcdSpace{Alarms: []string{AlarmNoSpace}, DBSize: 24 << 20, Quota: 24 << 20},
			[]string{"etcd: NOSPACE alarm — writes refused", "24.0 MiB of its 24.0 MiB quota", "`ghostfleet etcd recover`"}},
		{"corrupt", EtcdSpace{Alarms: []string{AlarmCorrupt}}, []string{"etcd: CORRUPT alarm raised", EtcdRecoverCommand}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.s.Message()
			if len(tt.want) == 0 && msg != "" {
				t.Errorf("Message = %q, want none", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Message = %q, want it to say %q", msg, w)
				}
			}
			if tt.s.NoSpace() != (tt.name == "nospace") {
				t.Errorf("NoSpace = %t", tt.s.NoSpace())
			}
		})
	}
}

func TestMiB(t *testing.T) {
	for n, want := range map[int64]string{0: "?", -1: "?", 1 << 20: "1.0 MiB", 25165824: "24.0 MiB", 17301504: "16.5 MiB"} {
		if got := MiB(n); got != want {
			t.Errorf("MiB(%d) = %q, want %q", n, got, want)
		}
	}
}
