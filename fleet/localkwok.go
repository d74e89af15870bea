package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The kwok controller of an attached cluster runs on this machine, as a
// process of its own that outlives the command that started it, with its
// pid file, log and kubeconfig in the attachment's folder.

// LocalKwokComponent names the local kwok controller in status.
const LocalKwokComponent = "kwok-controller (local)"

// AttachDir is the folder GhostFleet keeps an attached cluster's local
// processes in: $XDG_STATE_HOME/ghostfleet/attached/<host>-<hash> (default
// ~/.local/state/...), one per API server URL.
func AttachDir(server string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "state")
	}
	host := "cluster"
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		host = strings.NewReplacer(":", "-", "[", "", "]", "").Replace(u.Host)
	}
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(base, "ghostfleet", "attached", fmt.Sprintf("%s-%x", host, sum[:4]))
}

// LocalKwok is a local kwok controller of an attached cluster: shard
// Shard of Shards (see ShardSelector); one controller is shard 0 of 1.
type LocalKwok struct {
	Dir           string
	Shard, Shards int
}

func (k LocalKwok) name() string {
	if k.Shard == 0 {
		return "kwok-controller"
	}
	return fmt.Sprintf("kwok-controller-%d", k.Shard)
}

// PIDFile, LogFile, KubeconfigFile and ConfigFile are its files; the
// kubeconfig and configuration are shared by the shards.
func (k LocalKwok) PIDFile() string        { return filepath.Join(k.Dir, k.name()+".pid") }
func (k LocalKwok) LogFile() string        { return filepath.Join(k.Dir, k.name()+".log") }
func (k LocalKwok) KubeconfigFile() string { return filepath.Join(k.Dir, "kubeconfig.yaml") }
func (k LocalKwok) ConfigFile() string     { return filepath.Join(k.Dir, "kwok.yaml") }
func (k LocalKwok) infoFile() string       { return filepath.Join(k.Dir, "attach.json") }

// LocalKwokInfo is what the folder records about the process.
type LocalKwokInfo struct {
	Server     string    `json:"server"`
	Kubeconfig string    `json:"kubeconfig"`
	Context    string    `json:"context,omitempty"`
	Binary     string    `json:"binary"`
	Port       int       `json:"port"`
	Started    time.Time `json:"started"`
	// Shards is how many controllers share the nodes; the last Remote of
	// them run on other machines (ghostfleet kwok-shard), not here.
	Shards int `json:"shards,omitempty"`
	Remote int `json:"remote,omitempty"`
}

// Info reads the folder's record; ok is false when there is none.
func (k LocalKwok) Info() (LocalKwokInfo, bool) {
	var info LocalKwokInfo
	data, err := os.ReadFile(k.infoFile())
	if err != nil || json.Unmarshal(data, &info) != nil {
		return info, false
	}
	return info, true
}

// PID is the process's id when it is alive (not gone, not a zombie).
func (k LocalKwok) PID() (int, bool) {
	data, err := os.ReadFile(k.PIDFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, processAlive(pid, "kwok")
}

// processAlive says whether pid runs (not a zombie) a program whose
// command line starts with a path ending in prog: a pid file left by a
// process long gone may name another program now.
func processAlive(pid int, prog string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i <= 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(cmdline), "\x00")
	return strings.HasPrefix(filepath.Base(arg0), prog)
}

// WriteKubeconfig writes the one context of kubeconfig the controller
// uses, certificates inlined, readable by the owner only: kwok has no
// --context flag.
func (k LocalKwok) WriteKubeconfig(kubeconfig, context string) (server string, err error) {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if context != "" {
		if _, ok := raw.Contexts[context]; !ok {
			return "", fmt.Errorf("context %q is not in %s", context, kubeconfig)
		}
		raw.CurrentContext = context
	}
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	for _, c := range raw.Clusters {
		server = c.Server
	}
	if err := os.MkdirAll(k.Dir, 0o700); err != nil {
		return "", err
	}
	data, err := clientcmd.Write(*raw)
	if err != nil {
		return "", err
	}
	return server, writeFile0600(k.KubeconfigFile(), data)
}

func writeFile0600(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// localKwokConfig is the controller's configuration: kwok's own file
// format, with the parallelism GhostFleet's fleets use, so that
// ~/.kwok/kwok.yaml is never read.
const localKwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  nodeLeaseParallelism: 32
  nodePlayStageParallelism: 32
  podPlayStageParallelism: 32
`

// args are the controller's flags: the nodes of its shard of
// KwokNodeSelector only, kwok's configuration from ConfigFile (never
// ~/.kwok/kwok.yaml), its health and metrics on 127.0.0.1:port.
func (k LocalKwok) args(port int) []string {
	return []string{
		"--kubeconfig=" + k.KubeconfigFile(),
		"--config=" + k.ConfigFile(),
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=" + ShardSelector(k.Shard, k.Shards),
		"--enable-crds=" + strings.Join(KwokCRDKinds(), ","),
		"--node-lease-duration-seconds=" + strconv.Itoa(localKwokLeaseSeconds),
		"--server-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--node-name=localhost",
	}
}

// localKwokLeaseSeconds is the node leases' duration: a lease not renewed
// for that long is a node whose controller stopped.
const localKwokLeaseSeconds = 40

// command is the controller's process, not yet started: configuration
// written, a free port, its output to a fresh LogFile (the last one kept
// as .previous: why it ended). The caller closes logf once started.
func (k LocalKwok) command(binary string) (cmd *exec.Cmd, port int, logf *os.File, err error) {
	if err := writeFile0600(k.ConfigFile(), []byte(localKwokConfig)); err != nil {
		return nil, 0, nil, err
	}
	if port, err = freeLoopbackPort(); err != nil {
		return nil, 0, nil, err
	}
	if prev, err := os.ReadFile(k.LogFile()); err == nil && len(prev) > 0 {
		_ = os.WriteFile(k.LogFile()+".previous", prev, 0o600)
	}
	logf, err = os.OpenFile(k.LogFile(), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, 0, nil, err
	}
	cmd = exec.Command(binary, k.args(port)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = k.Dir
	return cmd, port, logf, nil
}

// Start starts the controller against the kubeconfig written by
// WriteKubeconfig, managing only the nodes of its shard of
// KwokNodeSelector, and records it (shard 0 writes the record, with
// info's Server, Kubeconfig, Context and Remote). A controller already
// running is left as it is.
func (k LocalKwok) Start(binary string, info LocalKwokInfo) (pid int, already bool, err error) {
	if pid, ok := k.PID(); ok {
		return pid, true, nil
	}
	cmd, port, logf, err := k.command(binary)
	if err != nil {
		return 0, false, err
	}
	defer logf.Close()
	// Its own session: Ctrl-C in the terminal that attached does not
	// reach it; detach stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("starting kwok controller %s: %w", binary, err)
	}
	pid = cmd.Process.Pid
	// Reap it if it ends while this process lives (a test, the console).
	go func() { _ = cmd.Wait() }()
	if err := writeFile0600(k.PIDFile(), []byte(strconv.Itoa(pid))); err != nil {
		return pid, false, err
	}
	if k.Shard > 0 {
		return pid, false, nil
	}
	info.Binary, info.Port, info.Started, info.Shards = binary, port, time.Now().UTC(), max(k.Shards, 1)
	data, _ := json.MarshalIndent(info, "", "  ")
	return pid, false, writeFile0600(k.infoFile(), data)
}

// Run runs the controller in the foreground until ctx ends, then stops it
// with SIGTERM: a shard on another machine than the one that attached
// (ghostfleet kwok-shard). started is told its pid. Run returns an error
// only when the controller ended by itself.
func (k LocalKwok) Run(ctx context.Context, binary string, started func(pid int)) error {
	cmd, _, logf, err := k.command(binary)
	if err != nil {
		return err
	}
	defer logf.Close()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kwok controller %s: %w", binary, err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			err = fmt.Errorf("exit status 0")
		}
		return fmt.Errorf("the kwok controller (shard %d/%d) ended by itself (%v); log %s", k.Shard+1, k.Shards, err, k.LogFile())
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// Stop ends the controller (SIGTERM, then SIGKILL after timeout) and
// removes its pid file; stopped is false when none was running.
func (k LocalKwok) Stop(timeout time.Duration) (stopped bool, err error) {
	pid, ok := k.PID()
	if !ok {
		_ = os.Remove(k.PIDFile())
		return false, nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(timeout)
	for processAlive(pid, "kwok") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if processAlive(pid, "kwok") {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return false, fmt.Errorf("stopping kwok controller (pid %d): %w", pid, err)
		}
	}
	return true, os.Remove(k.PIDFile())
}

// Health is the controller as status shows it.
func (k LocalKwok) Health() ComponentHealth {
	h := ComponentHealth{Name: LocalKwokComponent}
	if k.Shards > 1 {
		h.Name = fmt.Sprintf("kwok-controller (local, shard %d/%d)", k.Shard+1, k.Shards)
	}
	pid, ok := k.PID()
	if !ok {
		h.Detail = "process not running (ghostfleet attach starts it); log " + k.LogFile()
		return h
	}
	h.Running, h.Healthy = true, true
	h.Detail = fmt.Sprintf("pid %d, log %s", pid, k.LogFile())
	return h
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// AttachedComponents are an attached cluster's local processes, for
// status: the kwok controller when GhostFleet attached it from here.
func AttachedComponents(t Target) []ComponentHealth {
	server, err := t.Server()
	if err != nil {
		return nil
	}
	var out []ComponentHealth
	for _, k := range LocalKwoks(AttachDir(server)) {
		out = append(out, k.Health())
	}
	return out
}

// LocalKwoks are the controllers the attachment in dir runs (or ran) on
// this machine: as many shards as its record says, less the remote ones;
// none without a record.
func LocalKwoks(dir string) []LocalKwok {
	info, ok := LocalKwok{Dir: dir}.Info()
	if !ok {
		return nil
	}
	n := max(info.Shards, 1)
	out := make([]LocalKwok, n-info.Remote)
	for i := range out {
		out[i] = LocalKwok{Dir: dir, Shard: i, Shards: n}
	}
	return out
}

// RemoteKwokHealth is, for status, each shard the attachment runs on
// another machine (attach --remote-shards, ghostfleet kwok-shard there):
// not a process GhostFleet can see from here, so judged by its nodes'
// leases in kube-node-lease, which only its controller renews. It is
// healthy when every node of its blocks renewed its lease within the
// lease's duration.
func RemoteKwokHealth(ctx context.Context, t Target, cs kubernetes.Interface) []ComponentHealth {
	server, err := t.Server()
	if err != nil {
		return nil
	}
	info, ok := LocalKwok{Dir: AttachDir(server)}.Info()
	if !ok || info.Remote == 0 {
		return nil
	}
	leases, err := cs.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
	var byNode map[string]coordinationv1.Lease
	if err == nil {
		byNode = make(map[string]coordinationv1.Lease, len(leases.Items))
		for _, l := range leases.Items {
			byNode[l.Name] = l
		}
	}
	var out []ComponentHealth
	for i := info.Shards - info.Remote; i < info.Shards; i++ {
		h := ComponentHealth{Name: fmt.Sprintf("kwok-controller (remote, shard %d/%d)", i+1, info.Shards)}
		run := fmt.Sprintf("ghostfleet kwok-shard --shard %d --of %d", i+1, info.Shards)
		nodes, nerr := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: ShardSelector(i, info.Shards)})
		switch {
		case err != nil || nerr != nil:
			h.Detail = fmt.Sprintf("its nodes' leases could not be read (%v): `%s` runs it on another machine", errors.Join(err, nerr), run)
		case len(nodes.Items) == 0:
			h.Healthy = true
			h.Detail = fmt.Sprintf("no nodes of its blocks yet, so nothing tells whether it runs: `%s` on another machine", run)
		default:
			fresh := 0
			for _, n := range nodes.Items {
				if l, ok := byNode[n.Name]; ok && l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < localKwokLeaseSeconds*time.Second {
					fresh++
				}
			}
			h.Running, h.Healthy = fresh > 0, fresh == len(nodes.Items)
			h.Detail = fmt.Sprintf("%d/%d of its nodes renewed their lease in the last %ds (`%s` on another machine)", fresh, len(nodes.Items), localKwokLeaseSeconds, run)
		}
		out = append(out, h)
	}
	return out
}

// StopLocalKwoks stops every controller of dir, shards left from an
// earlier attach with more of them included; stopped counts those that
// were running.
func StopLocalKwoks(dir string, timeout time.Duration) (stopped int, err error) {
	pids, _ := filepath.Glob(filepath.Join(dir, "kwok-controller*.pid"))
	for _, p := range pids {
		name := strings.TrimSuffix(filepath.Base(p), ".pid")
		shard := 0
		if rest, ok := strings.CutPrefix(name, "kwok-controller-"); ok {
			if shard, err = strconv.Atoi(rest); err != nil {
				continue
			}
		}
		ok, err := LocalKwok{Dir: dir, Shard: shard}.Stop(timeout)
		if err != nil {
			return stopped, err
		}
		if ok {
			stopped++
		}
	}
	return stopped, nil
}

// Server is the API server URL of the target's context.
func (t Target) Server() (string, error) {
	raw, err := clientcmd.LoadFromFile(t.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", t.Kubeconfig, err)
	}
	ctxName := t.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	c, ok := raw.Contexts[ctxName]
	if !ok {
		return "", fmt.Errorf("context %q is not in %s", ctxName, t.Kubeconfig)
	}
	cl, ok := raw.Clusters[c.Cluster]
	if !ok {
		return "", fmt.Errorf("context %q of %s names cluster %q, which is not in it", ctxName, t.Kubeconfig, c.Cluster)
	}
	return cl.Server, nil
}
