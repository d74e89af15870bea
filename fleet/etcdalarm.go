package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdRecoverCommand is what GhostFleet tells the user to run when etcd
// raised an alarm; status, the console and run records all name it.
const EtcdRecoverCommand = "ghostfleet etcd recover"

// Alarms etcd raises and GhostFleet reports. NOSPACE: the database
// reached --quota-backend-bytes and etcd refuses every write (reads and
// deletes still work) until the alarm is disarmed. CORRUPT: a member's
// data differs from the others'.
const (
	AlarmNoSpace = "NOSPACE"
	AlarmCorrupt = "CORRUPT"
)

// EtcdSpace is what etcd says of its alarms and its database's size.
type EtcdSpace struct {
	Endpoint string `json:"endpoint"`
	// Alarms are the alarms raised (NOSPACE, CORRUPT), none when healthy.
	Alarms []string `json:"alarms"`
	// DBSize is the database file's size; DBSizeInUse the part holding
	// live data (what a defragmentation would shrink the file to).
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
	// Quota is --quota-backend-bytes as the running etcd reports it (0
	// when it does not: etcd before 3.6).
	Quota    int64 `json:"quota,omitempty"`
	Revision int64 `json:"revision"`
}

// NoSpace reports whether etcd refuses writes for lack of space.
func (s EtcdSpace) NoSpace() bool { return slices.Contains(s.Alarms, AlarmNoSpace) }

// Message says in one line what the alarms mean and what to do, "" when
// none is raised.
func (s EtcdSpace) Message() string {
	switch {
	case s.NoSpace():
		return fmt.Sprintf("etcd: NOSPACE alarm — writes refused (database %s of its %s quota); recover with `%s`", MiB(s.DBSize), MiB(s.Quota), EtcdRecoverCommand)
	case len(s.Alarms) > 0:
		return fmt.Sprintf("etcd: %s alarm raised; `%s` disarms it once the cause is gone", strings.Join(s.Alarms, ", "), EtcdRecoverCommand)
	}
	return ""
}

// MiB writes a byte count in MiB, "?" for an unknown (0) one.
func MiB(n int64) string {
	if n <= 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// alarmNames turns etcd's alarm members into sorted, distinct names.
func alarmNames(members []*pb.AlarmMember) []string {
	names := []string{}
	for _, m := range members {
		if m == nil || m.Alarm == pb.AlarmType_NONE {
			continue
		}
		name := m.Alarm.String()
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// etcdEndpoint is the client URL of the fleet's etcd, from the cluster's
// kwok configuration (the binary runtime serves it over plain HTTP on
// the bind address).
func etcdEndpoint(ctx context.Context, name string) (string, error) {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return "", fmt.Errorf("fleet %q is not up (%v): run `ghostfleet up`", name, err)
	}
	conf, err := rt.Config(ctx)
	if err != nil {
		return "", fmt.Errorf("reading fleet %q's configuration: %w", name, err)
	}
	o := conf.Options
	if o.EtcdPort == 0 {
		return "", fmt.Errorf("fleet %q's configuration names no etcd port", name)
	}
	host := o.BindAddress
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.FormatUint(uint64(o.EtcdPort), 10)), nil
}

// etcdTimeout bounds each call to etcd: a status must not hang on an
// etcd that is down.
const etcdTimeout = 5 * time.Second

// dialEtcd opens a client to the fleet's etcd. The client dials lazily;
// each call has its own timeout.
func dialEtcd(ctx context.Context, name string) (*clientv3.Client, string, error) {
	ep, err := etcdEndpoint(ctx, name)
	if err != nil {
		return nil, "", err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{ep}, DialTimeout: etcdTimeout, Context: ctx,
		Logger: zap.NewNop(), // its errors come back as errors
	})
	if err != nil {
		return nil, ep, fmt.Errorf("etcd at %s: %w", ep, err)
	}
	return c, ep, nil
}

// EtcdStatus asks the fleet's etcd for its alarms and its database's
// size through etcd's Maintenance API.
func EtcdStatus(ctx context.Context, name string) (EtcdSpace, error) {
	c, ep, err := dialEtcd(ctx, name)
	if err != nil {
		return EtcdSpace{Endpoint: ep}, err
	}
	defer c.Close()
	return etcdSpace(ctx, c, ep)
}

func etcdSpace(ctx context.Context, c *clientv3.Client, ep string) (EtcdSpace, error) {
	s := EtcdSpace{Endpoint: ep, Alarms: []string{}}
	cctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	st, err := c.Status(cctx, ep)
	if err != nil {
		return s, fmt.Errorf("etcd at %s: status: %w", ep, err)
	}
	s.DBSize, s.DBSizeInUse, s.Quota = st.DbSize, st.DbSizeInUse, st.DbSizeQuota
	if st.Header != nil {
		s.Revision = st.Header.Revision
	}
	alarms, err := c.AlarmList(cctx)
	if err != nil {
		return s, fmt.Errorf("etcd at %s: alarm list: %w", ep, err)
	}
	s.Alarms = alarmNames(alarms.Alarms)
	return s, nil
}

// EtcdAlarms returns the alarms the fleet's etcd has raised: for the
// console's poller, which asks each round from one goroutine. The first
// call dials one client that every later call reuses (gRPC reconnects it
// when etcd comes back), closed when that first call's context ends: a
// client per round cost a new gRPC connection and a read of the fleet's
// configuration every 5 s.
func EtcdAlarms(name string) func(context.Context) ([]string, error) {
	var c *clientv3.Client
	var ep string
	return func(ctx context.Context) ([]string, error) {
		if c == nil {
			dialed, endpoint, err := dialEtcd(ctx, name)
			if err != nil {
				return nil, err
			}
			c, ep = dialed, endpoint
			context.AfterFunc(ctx, func() { dialed.Close() })
		}
		s, err := etcdSpace(ctx, c, ep)
		return s.Alarms, err
	}
}

// EtcdRecovery is what a recovery did: etcd before and after, and each
// step's time.
type EtcdRecovery struct {
	Before EtcdSpace `json:"before"`
	After  EtcdSpace `json:"after"`
	// CompactedTo is the revision history was compacted to; 0 when there
	// was nothing to recover.
	CompactedTo  int64 `json:"compactedTo,omitempty"`
	Defragmented bool  `json:"defragmented"`
	// Disarmed are the alarms disarmed.
	Disarmed []string `json:"disarmed,omitempty"`
	Seconds  float64  `json:"seconds"`
	// StillFull says the live data alone still fills the quota: the
	// alarm comes back at the next write until data is deleted.
	StillFull bool `json:"stillFull,omitempty"`
	// Down are the fleet's components not running after the recovery:
	// ones that exited while etcd refused their writes need a restart.
	Down []string `json:"down,omitempty"`
}

// RecoverEtcd brings the fleet's etcd back from an alarm the way etcd's
// own guide does: compact the history to the current revision, defragment
// to hand the freed pages back, then disarm the alarms. With no alarm
// raised it does nothing. A cancelled context stops it between steps:
// each step is one of etcd's own, safe to stop after and to run again.
func RecoverEtcd(ctx context.Context, name string, report func(step, message string)) (EtcdRecovery, error) {
	start := time.Now()
	var r EtcdRecovery
	c, ep, err := dialEtcd(ctx, name)
	if err != nil {
		return r, err
	}
	defer c.Close()
	if r.Before, err = etcdSpace(ctx, c, ep); err != nil {
		return r, err
	}
	r.After = r.Before
	if len(r.Before.Alarms) == 0 {
		return r, nil
	}
	if report == nil {
		report = func(string, string) {}
	}
	step := func(name, what string, fn func(context.Context) error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		report(name, what)
		// Defragmenting rewrites the whole file: give it more than a status.
		cctx, cancel := context.WithTimeout(ctx, 10*etcdTimeout)
		defer cancel()
		if err := fn(cctx); err != nil {
			return fmt.Errorf("etcd at %s: %s: %w", ep, what, err)
		}
		return nil
	}
	err = step("compact", fmt.Sprintf("compacting the history to revision %d", r.Before.Revision), func(ctx context.Context) error {
		_, err := c.Compact(ctx, r.Before.Revision, clientv3.WithCompactPhysical())
		if isCompacted(err) {
			return nil // the apiserver's own compaction got there first
		}
		return err
	})
	if err == nil {
		r.CompactedTo = r.Before.Revision
		err = step("defrag", "defragmenting the database", func(ctx context.Context) error {
			_, err := c.Defragment(ctx, ep)
			return err
		})
	}
	if err == nil {
		r.Defragmented = true
		err = step("disarm", "disarming "+fmt.Sprint(r.Before.Alarms), func(ctx context.Context) error {
			_, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{}) // the zero member: every alarm raised
			return err
		})
	}
	if err == nil {
		r.Disarmed = r.Before.Alarms
	}
	r.Seconds = time.Since(start).Seconds()
	after, aerr := etcdSpace(context.WithoutCancel(ctx), c, ep)
	if aerr == nil {
		r.After = after
		r.StillFull = r.After.Quota > 0 && r.After.DBSizeInUse >= r.After.Quota*95/100
	}
	r.Down = downComponents(context.WithoutCancel(ctx), name)
	return r, errors.Join(err, aerr)
}

// downComponents lists the fleet's components whose process is gone.
func downComponents(ctx context.Context, name string) []string {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return nil
	}
	components, err := rt.ListComponents(ctx)
	if err != nil {
		return nil
	}
	var down []string
	for _, c := range components {
		if !componentAlive(name, c.Name) {
			down = append(down, c.Name)
		}
	}
	slices.Sort(down)
	return down
}

// isCompacted reports etcd's "required revision has been compacted":
// someone compacted to the revision (or past it) already.
func isCompacted(err error) bool {
	return err != nil && errors.Is(err, rpctypes.ErrCompacted)
}
