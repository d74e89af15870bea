package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/watch"
)

// mapFilter is what `/` keeps of the map. Node state (faulted, notready,
// cordoned) and the rack are in every view already; any other label and
// pod phases are not (the informers keep only what the map draws), so
// those filters ask the API server through the Inspector, again every
// refreshEvery while the filter holds.
type mapFilter struct {
	text string // as typed; "" when none
	kind filterKind
	// rack: the rack; label: key and value.
	key, value string
	phase      corev1.PodPhase

	// For filters the API server answers: the matching nodes, when they
	// were asked and whether an answer is awaited.
	query    func(context.Context, watch.NodeQuery) (map[string]bool, error)
	match    map[string]bool
	err      string
	asked    time.Time
	inFlight bool
	seq      int
}

type filterKind int

const (
	filterNone filterKind = iota
	filterFaulted
	filterNotReady
	filterCordoned
	filterRack
	filterLabel
	filterPhase
)

// refreshEvery is how often a filter the API server answers is asked
// again: labels seldom change, failed pods do, and 5,000 nodes' worth of
// objects every second would be the console loading the cluster.
const refreshEvery = 5 * time.Second

// filterHelp lists what `/` takes.
const filterHelp = "faulted, notready, cordoned, failed (nodes with failed pods), rack=N, KEY=VALUE (gpu.product, gpu.family, gpu.machine, nvlink, block, zone, profile, or any label key)"

// parseFilter reads what was typed after `/`.
func parseFilter(s string) (mapFilter, error) {
	s = strings.TrimSpace(s)
	f := mapFilter{text: s}
	switch strings.ToLower(s) {
	case "":
		return mapFilter{}, nil
	case "faulted", "fault", "faults":
		f.kind = filterFaulted
	case "notready", "not-ready":
		f.kind = filterNotReady
	case "cordoned":
		f.kind = filterCordoned
	case "failed", "phase=failed":
		f.kind, f.phase = filterPhase, corev1.PodFailed
	default:
		k, v, ok := strings.Cut(s, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return mapFilter{}, fmt.Errorf("unknown filter %q: allowed are %s", s, filterHelp)
		}
		if strings.EqualFold(k, "phase") {
			return mapFilter{}, fmt.Errorf("phase %q: the map filters on failed pods only (phase=failed)", v)
		}
		if full, ok := watch.LabelAliases()[k]; ok {
			k = full
		}
		switch k {
		case fleet.LabelRack:
			f.kind, f.key, f.value = filterRack, k, numbered("rack-%04d", v)
		case fleet.LabelBlock:
			f.kind, f.key, f.value = filterLabel, k, numbered("block-%03d", v)
		case fleet.LabelNVLink:
			f.kind, f.key, f.value = filterLabel, k, numbered("nvl-%05d", v)
		default:
			f.kind, f.key, f.value = filterLabel, k, v
		}
	}
	return f, nil
}

// numbered reads a rack, block or NVLink domain given by its number
// ("12", "r012") as GhostFleet names it ("rack-0012"); a full name is
// kept as it is.
func numbered(format, v string) string {
	digits := strings.TrimLeft(v, "abcdefghijklmnopqrstuvwxyz-_")
	if n, err := strconv.Atoi(digits); err == nil && digits != "" && n >= 0 {
		return fmt.Sprintf(format, n)
	}
	return v
}

func (f *mapFilter) active() bool { return f.kind != filterNone }

// remote reports whether the API server answers the filter.
func (f *mapFilter) remote() bool { return f.kind == filterLabel || f.kind == filterPhase }

// filterMatch is the API server's answer for filter seq.
type filterMatch struct {
	seq   int
	nodes map[string]bool
	err   error
}

func (filterMatch) drill() {}

// refresh asks the API server again if the filter needs it and the last
// answer is old: the map's part in a new fleet view.
func (f *mapFilter) refresh(now time.Time) tea.Cmd {
	if !f.remote() || f.inFlight || f.query == nil || (!f.asked.IsZero() && now.Sub(f.asked) < refreshEvery) {
		return nil
	}
	f.inFlight, f.asked = true, now
	q, seq, query := watch.NodeQuery{LabelKey: f.key, LabelValue: f.value, PodPhase: f.phase}, f.seq, f.query
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nodes, err := query(ctx, q)
		return filterMatch{seq, nodes, err}
	}
}

// answer takes the API server's answer, if it is for this filter.
func (f *mapFilter) answer(m filterMatch) bool {
	if m.seq != f.seq || !f.remote() {
		return false
	}
	f.inFlight = false
	if m.err != nil {
		f.err = m.err.Error()
		return true
	}
	f.match, f.err = m.nodes, ""
	return true
}

// keep reports whether the filter shows node n.
func (f *mapFilter) keep(n watch.NodeCell) bool {
	switch f.kind {
	case filterFaulted:
		return n.Faulted
	case filterNotReady:
		return !n.Ready
	case filterCordoned:
		return n.Cordoned
	case filterRack:
		return n.Rack == f.value
	case filterLabel, filterPhase:
		return f.match[n.Name]
	}
	return true
}

// apply is v with only the nodes the filter keeps. Racks stay grouped
// when the filter keeps them whole.
func (f *mapFilter) apply(v watch.FleetView) watch.FleetView {
	if !f.active() {
		return v
	}
	out := v
	out.Nodes = slices.DeleteFunc(slices.Clone(v.Nodes), func(n watch.NodeCell) bool { return !f.keep(n) })
	all, kept := map[string]int{}, map[string]int{}
	for _, n := range v.Nodes {
		all[n.Rack]++
	}
	out.RackSize = 0
	for _, n := range out.Nodes {
		kept[n.Rack]++
		out.RackSize = max(out.RackSize, kept[n.Rack])
	}
	for r, n := range kept {
		if all[r] != n {
			out.Racked = false
		}
	}
	return out
}

// caption is the map's title while the filter holds.
func (f *mapFilter) caption(shown, of int) string {
	s := fmt.Sprintf("filter %s: %s of %s nodes", clean(f.text), thousands(int64(shown)), thousands(int64(of)))
	switch {
	case f.err != "":
		s += " (" + clean(f.err) + ")"
	case f.remote() && f.match == nil:
		s += " (asking the API server…)"
	}
	return s
}

// empty is what the map says when the filter keeps no node.
func (f *mapFilter) empty() string {
	if f.remote() && f.match == nil && f.err == "" {
		return "asking the API server which nodes match…"
	}
	return "no node matches " + clean(f.text)
}
