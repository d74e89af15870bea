package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/binaries"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
)

type checkOptions struct {
	*globals
	bins           binaryFlags
	prometheusPort int
	build          []string // --build: binaries to build now if missing
}

// checkRow is one line of `ghostfleet check`.
type checkRow struct {
	name, status, detail, fix string
}

const (
	statusOK      = "ok"
	statusMissing = "missing"
	statusFail    = "FAIL"
)

// Minimums for a 1,000-node, 8,000-pod fleet; see docs/requirements.
const (
	minBuildDiskGiB = 8 // module cache + build cache + binaries: 7.9 GB measured on a cold build
	minRunDiskGiB   = 1
	minMemoryGiB    = 3 // apiserver ~0.9 GB, scheduler ~0.4, etcd ~0.15, Prometheus, kwok
)

func newCheckCommand(g *globals) *cobra.Command {
	o := &checkOptions{globals: g}
	cmd := &cobra.Command{
		Use:     "check",
		Aliases: []string{"check_tools"},
		Short:   "Check every dependency and say how to fix what is missing",
		Long: `Check the Go toolchain, each control-plane binary (where it would come
from and the version it reports), the Prometheus port, free disk for the
first build and free memory for a 1,000-node fleet. Exits 1 when anything
is not ok; each such line says the exact fix.

--build NAME builds (or fetches) the named binaries first if they are
missing, those built only on demand too: ` + strings.Join(onDemandNames(), ", ") + `
(e.g. before going offline, or for scripts that drive kwokctl).`,
		Example: `  ghostfleet check
  ghostfleet check --build kwokctl,etcdctl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	o.bins.add(cmd.Flags())
	cmd.Flags().IntVar(&o.prometheusPort, "prometheus-port", fleet.DefaultPrometheusPort, "port the fleet's Prometheus will use")
	cmd.Flags().StringSliceVar(&o.build, "build", nil, "build these binaries first if missing, comma-separated: "+strings.Join(binaries.Names(), ", "))
	return cmd
}

func onDemandNames() []string {
	names := make([]string, len(binaries.OnDemand))
	for i, b := range binaries.OnDemand {
		names[i] = b.Name
	}
	return names
}

func (o *checkOptions) run(ctx context.Context) error {
	var build []binaries.Binary
	for _, name := range o.build {
		b, err := binaries.Lookup(name)
		if err != nil {
			return fmt.Errorf("--build: %w", err)
		}
		build = append(build, b)
	}
	if len(build) > 0 {
		p := o.streams.printer(false)
		r, err := o.bins.resolver(p.Report)
		if err != nil {
			p.Close()
			return err
		}
		for _, b := range build {
			path, err := r.ResolveOne(ctx, b)
			if err != nil {
				p.Close()
				return fmt.Errorf("--build %s: %w", b.Name, err)
			}
			p.Report(progress.Event{Kind: progress.Info, Message: b.Name + ": " + path})
		}
		p.Close()
	}
	r, err := o.bins.resolver(nil)
	if err != nil {
		return err
	}
	var rows []checkRow
	goRow := checkRow{name: "go toolchain"}
	if v, err := r.GoVersion(ctx); err != nil {
		goRow.status, goRow.detail = statusMissing, err.Error()
		goRow.fix = "install Go 1.26+ (only needed to build missing binaries)"
	} else {
		goRow.status, goRow.detail = statusOK, v
	}
	rows = append(rows, goRow)

	found, missing, err := r.Find()
	if err != nil {
		return err
	}
	for _, b := range binaries.All {
		row := checkRow{name: b.Name}
		res, ok := found[b.Name]
		if !ok {
			row.status = statusMissing
			row.detail = "not in " + r.CacheDir()
			row.fix = fmt.Sprintf("`ghostfleet up` builds it (~%s cold), or --binary %s=PATH", round(b.Typical), b.Name)
			switch {
			case b.Name != binaries.Prometheus:
			case r.PrometheusFrom == binaries.PrometheusBuild:
				row.fix = fmt.Sprintf("`ghostfleet up` builds it (~%s cold), or takes Debian's package in seconds with --prometheus-from auto, or --binary %s=PATH", round(b.Typical), b.Name)
			case r.PrometheusFrom == binaries.PrometheusAuto:
				row.fix = fmt.Sprintf("`ghostfleet up` takes it from Debian's package where apt can fetch it, or else builds it (~%s cold), or --binary %s=PATH", round(b.Typical), b.Name)
			case r.PrometheusFrom == binaries.PrometheusDebian:
				row.fix = fmt.Sprintf("`ghostfleet up` takes it from Debian's package (--prometheus-from debian), or --binary %s=PATH", b.Name)
			}
			rows = append(rows, row)
			continue
		}
		want := r.Versions.VersionOf(b.Name)
		if res.Version != "" {
			want = res.Version
		}
		line, err := binaries.ReportedVersion(ctx, b, res.Path)
		switch {
		case err != nil:
			row.status, row.detail = statusFail, err.Error()
			row.fix = "remove it so `ghostfleet up` rebuilds it: rm " + res.Path
		case !binaries.VersionMatches(line, want):
			row.status, row.detail = statusFail, fmt.Sprintf("%q is not %s (%s)", line, want, res.Source)
			row.fix = "point --binary at a " + want + " build, or remove " + res.Path
		default:
			row.status, row.detail = statusOK, fmt.Sprintf("%s (%s: %s)", want, res.Source, res.Path)
		}
		rows = append(rows, row)
	}

	rows = append(rows, o.portRow(ctx), diskRow(r.CacheRoot, len(missing) > 0), memoryRow())

	failed := 0
	w := o.streams.Out
	for _, row := range rows {
		fmt.Fprintf(w, "%-8s %-24s %s\n", row.status, row.name, row.detail)
		if row.status != statusOK {
			failed++
			fmt.Fprintf(w, "%-8s %-24s fix: %s\n", "", "", row.fix)
		}
	}
	if failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d of %d checks are not ok", failed, len(rows))}
	}
	fmt.Fprintf(w, "all %d checks ok\n", len(rows))
	return nil
}

func (o *checkOptions) portRow(ctx context.Context) checkRow {
	row := checkRow{name: fmt.Sprintf("port %d", o.prometheusPort)}
	if st, err := fleet.LoadState(o.name); err == nil && st.PrometheusPort == o.prometheusPort && fleet.Exists(ctx, o.name) {
		row.status, row.detail = statusOK, fmt.Sprintf("used by fleet %q's Prometheus", o.name)
		return row
	}
	if err := fleet.PortFree(o.prometheusPort); err != nil {
		row.status, row.detail = statusFail, err.Error()
		row.fix = "stop what listens there, or use --prometheus-port with `ghostfleet up`"
		return row
	}
	row.status, row.detail = statusOK, "free"
	return row
}

func diskRow(cacheRoot string, building bool) checkRow {
	row := checkRow{name: "disk"}
	dir := cacheRoot
	for dir != "/" && dir != "." {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		row.status, row.detail, row.fix = statusFail, err.Error(), "check that "+dir+" is readable"
		return row
	}
	free := float64(fs.Bavail) * float64(fs.Bsize) / (1 << 30)
	need := float64(minRunDiskGiB)
	if building {
		need = minBuildDiskGiB
	}
	row.detail = fmt.Sprintf("%.1f GiB free at %s (need %.0f GiB)", free, dir, need)
	if free < need {
		row.status, row.fix = statusFail, "free disk space, or point --cache-dir and GOCACHE elsewhere"
	} else {
		row.status = statusOK
	}
	return row
}

func memoryRow() checkRow {
	row := checkRow{name: "memory"}
	avail, err := memAvailable("/proc/meminfo")
	if err != nil {
		row.status, row.detail, row.fix = statusFail, err.Error(), "GhostFleet needs Linux's /proc/meminfo"
		return row
	}
	gib := float64(avail) / (1 << 30)
	row.detail = fmt.Sprintf("%.1f GiB available (a 1,000-node, 8,000-pod fleet needs ~%d GiB)", gib, minMemoryGiB)
	if gib < minMemoryGiB {
		row.status, row.fix = statusFail, "free memory, or run a smaller fleet (--nodes)"
	} else {
		row.status = statusOK
	}
	return row
}

// memAvailable reads MemAvailable (bytes) from a meminfo file.
func memAvailable(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMemAvailable(f)
}

func parseMemAvailable(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("MemAvailable %q: %w", fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemAvailable line in meminfo")
}
