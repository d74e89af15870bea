package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	kwokctlcmd "sigs.k8s.io/kwok/pkg/kwokctl/cmd"
	"sigs.k8s.io/kwok/pkg/kwokctl/runtime"
	"sigs.k8s.io/kwok/pkg/log"

	// The binary runtime runs every component as a local process: no
	// container engine needed.
	_ "sigs.k8s.io/kwok/pkg/kwokctl/runtime/binary"

	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

// kwokMu serialises kwokctl calls: kwok keeps its configuration in
// process-wide state, so two calls in flight would see each other's.
var kwokMu sync.Mutex

// kwokctl runs a kwokctl command in this process, the way kwokctl's own
// main prepares it (logger and configuration in the context), with its log
// lines turned into progress events. configure, when set, edits the
// configuration objects in the context before the command reads them:
// options kwokctl has no flag for (the bind address, the kwok controller's
// parallelism) are set there. An error from it stops the command.
func kwokctl(ctx context.Context, report progress.Func, configure func(context.Context) error, args ...string) error {
	kwokMu.Lock()
	defer kwokMu.Unlock()

	logs := lineWriter(func(line string) {
		report(progress.Event{Kind: progress.Info, Message: "kwokctl: " + line})
	})
	defer logs.Close()

	ctx = log.NewContext(ctx, log.NewLogger(logs, log.LevelInfo))
	ctx, err := withKwokConfig(ctx)
	if err != nil {
		return err
	}
	if configure != nil {
		if err := configure(ctx); err != nil {
			return err
		}
	}

	cmd := kwokctlcmd.NewCommand(ctx)
	cmd.SetArgs(args)
	cmd.SetOut(logs)
	cmd.SetErr(logs)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	return cmd.ExecuteContext(ctx)
}

// withKwokConfig loads ~/.kwok/kwok.yaml (kwok's convention) into the
// context, where kwokctl's commands look for their configuration.
func withKwokConfig(ctx context.Context) (context.Context, error) {
	flagset := pflag.NewFlagSet("kwokctl", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}
	flagset.SetOutput(io.Discard)
	return config.InitFlags(ctx, flagset)
}

// checkUserKwokConfig fails when ~/.kwok/kwok.yaml sets what would
// replace the profile's settings or be dropped because of them, so that
// up fails before it builds or creates anything.
func checkUserKwokConfig(ctx context.Context, p ComponentProfile) error {
	kwokMu.Lock()
	defer kwokMu.Unlock()
	ctx, err := withKwokConfig(quietKwok(ctx))
	if err != nil {
		return fmt.Errorf("reading kwok's configuration %s: %w", kwokConfigPath(), err)
	}
	return checkKwokctlConfig(config.GetKwokctlConfiguration(ctx), p, kwokConfigPath())
}

// loadRuntime opens an existing kwok cluster; it fails when there is none.
func loadRuntime(ctx context.Context, name string) (runtime.Runtime, error) {
	return runtime.DefaultRegistry.Load(quietKwok(ctx), name, clusterWorkdir(name))
}

// quietKwok gives kwok's code called with ctx a logger that drops all but
// errors: without one, kwok warns on standard error (over the console).
func quietKwok(ctx context.Context) context.Context {
	return log.NewContext(ctx, log.NewLogger(io.Discard, log.LevelError))
}

// fleetConfig is the kwokctl configuration the fleet name was created
// with: its ports and options.
func fleetConfig(ctx context.Context, name string) (*internalversion.KwokctlConfiguration, error) {
	rt, err := loadRuntime(ctx, name)
	if err != nil {
		return nil, err
	}
	return rt.Config(ctx)
}

func clusterWorkdir(name string) string {
	return config.ClustersDir + "/" + name
}

// lineWriter calls fn for each complete line written to it.
type lineSink struct {
	pw   *io.PipeWriter
	done chan struct{}
}

func lineWriter(fn func(string)) *lineSink {
	pr, pw := io.Pipe()
	s := &lineSink{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				fn(line)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return s
}

func (s *lineSink) Write(p []byte) (int, error) { return s.pw.Write(p) }

func (s *lineSink) Close() error {
	err := s.pw.Close()
	<-s.done
	return err
}
