package workload

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/clock"

	"github.com/ghostfleet/ghostfleet/fleet"
	"github.com/ghostfleet/ghostfleet/fleet/progress"
	"github.com/ghostfleet/ghostfleet/fleet/record"
	"github.com/ghostfleet/ghostfleet/fleet/requests"
)

// LabelGPUs carries a bin-packing pod's size.
const LabelGPUs = "ghostfleet.io/gpus"

// DefaultMix is the share of 1-, 2-, 4- and 8-GPU pods, by count.
var DefaultMix = map[int]int{1: 40, 2: 30, 4: 20, 8: 10}

// ParseMix reads "1:40,2:30,4:20,8:10" (pod size : weight).
func ParseMix(s string) (map[int]int, error) {
	mix := map[int]int{}
	for _, part := range strings.Split(s, ",") {
		size, weight, ok := strings.Cut(strings.TrimSpace(part), ":")
		g, err1 := strconv.Atoi(size)
		w, err2 := strconv.Atoi(weight)
		if !ok || err1 != nil || err2 != nil || g < 1 || w < 0 {
			return nil, fmt.Errorf("mix entry %q is not SIZE:WEIGHT with SIZE ≥ 1 GPU and WEIGHT ≥ 0 (e.g. 1:40,2:30,4:20,8:10)", part)
		}
		mix[g] += w
	}
	total := 0
	for _, w := range mix {
		total += w
	}
	if total == 0 {
		return nil, fmt.Errorf("mix %q has no weight", s)
	}
	return mix, nil
}

// BinpackOptions configures a bin-packing run.
type BinpackOptions struct {
	RunID     string        `json:"runId"`
	Namespace string        `json:"namespace"`
	Fill      float64       `json:"fill"` // target share of the fleet's GPUs
	Mix       map[int]int   `json:"mix"`
	Rate      float64       `json:"rate"` // pods created per second, below the scheduler's throughput
	Seed      uint64        `json:"seed"`
	Timeout   time.Duration `json:"timeout"`
	// Claim is how pods ask for their GPUs: none (nvidia.com/gpu, on a
	// DRA fleet served from the devices by a DeviceClass) or count (a
	// ResourceClaimTemplate per pod size); empty: as the fleet offers
	// them (BinpackClaims).
	Claim  string        `json:"claim,omitempty"`
	Report progress.Func `json:"-"`
}

// BinpackClaims are the claim modes a fill takes: the GPUs it fills are
// the fleet's, so a claim narrowed to some of them (a product, an NVLink
// domain) would measure the fill against GPUs its pods cannot use.
var BinpackClaims = []string{ClaimNone, ClaimCount}

// Validate checks the options.
func (o *BinpackOptions) Validate(c Capacity) error {
	if err := o.Check(); err != nil {
		return err
	}
	largest := slices.Max(slices.Collect(maps.Keys(o.Mix)))
	_, maxNode, err := fleetClaim(&o.Claim, largest, c, false)
	if err != nil {
		return err
	}
	if int64(largest) > maxNode {
		return fmt.Errorf("mix size %d GPUs is more than any node has (largest: %d)", largest, maxNode)
	}
	return nil
}

// Check checks what needs no cluster, each error naming the value and
// what is allowed.
func (o *BinpackOptions) Check() error {
	switch {
	case o.Fill <= 0 || o.Fill > 1:
		return fmt.Errorf("fill %g is out of range: allowed are more than 0 and at most 1 (e.g. 0.95)", o.Fill)
	case o.Rate <= 0 || o.Rate > 5000:
		return fmt.Errorf("rate %g is out of range: allowed are more than 0 and at most 5000 pods/s", o.Rate)
	case o.Timeout <= 0:
		return fmt.Errorf("timeout %s is out of range: it must be more than 0", o.Timeout)
	case len(o.Mix) == 0:
		return fmt.Errorf("the mix is empty: it needs at least one pod size (e.g. 1:40,2:30,4:20,8:10)")
	case o.Claim != "" && !slices.Contains(BinpackClaims, o.Claim):
		return fmt.Errorf("--claim %q is not a claim binpack takes: allowed are %s (a fill counts every GPU of the fleet)", o.Claim, strings.Join(BinpackClaims, ", "))
	}
	if o.Report == nil {
		o.Report = progress.Discard
	}
	return nil
}

// Sizes draws pod sizes from the mix until they add up to target GPUs.
func (o BinpackOptions) Sizes(target int64) []int {
	var sizes, table []int
	for size, w := range o.Mix {
		for i := 0; i < w; i++ {
			table = append(table, size)
		}
	}
	sort.Ints(table) // map order must not change the draw
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	var sum int64
	for sum < target {
		s := table[rng.IntN(len(table))]
		if sum+int64(s) > target {
			// Fill the last gap with the largest size that fits.
			s = 0
			for size := range o.Mix {
				if int64(size) <= target-sum && size > s {
					s = size
				}
			}
			if s == 0 {
				break
			}
		}
		sizes = append(sizes, s)
		sum += int64(s)
	}
	return sizes
}

// Decile is what the scheduler did while the fleet's GPU occupancy was
// in one tenth.
type Decile struct {
	Occupancy string      `json:"occupancy"` // "90-100%"
	BindRate  float64     `json:"bindRate"`  // pods bound per second
	Latency   Percentiles `json:"createToSchedule"`
}

// BinpackResult is what a bin-packing run measured.
type BinpackResult struct {
	Fill          float64 `json:"fill"`
	TotalGPUs     int64   `json:"totalGpus"`
	TargetGPUs    int64   `json:"targetGpus"`
	Pods          int     `json:"pods"`
	ScheduledGPUs int64   `json:"scheduledGpus"`
	// Claim is how the pods asked on a DRA fleet: count (claims from a
	// template) or none (nvidia.com/gpu, the scheduler making each claim);
	// empty on a fleet of nvidia.com/gpu.
	Claim string `json:"claim,omitempty"`
	// Occupancy is the share of the fleet's GPUs allocated at the end.
	Occupancy float64  `json:"occupancy"`
	Deciles   []Decile `json:"deciles"`
	// UnschedulableBySize counts pods left unbound, by GPU count.
	UnschedulableBySize map[int]int `json:"unschedulableBySize"`
	// FreeGPUsPerNode counts nodes by free GPUs at the end (index = free).
	FreeGPUsPerNode []int `json:"freeGpusPerNode"`
	// StrandedForWholeNode are free GPUs on nodes that are partly used:
	// no whole-node pod (e.g. 8 GPUs on a DGX) can use them.
	StrandedForWholeNode int64   `json:"strandedForWholeNode"`
	DurationSeconds      float64 `json:"durationSeconds"`
	CreateErrors         int     `json:"createErrors"`
	// Requests counts what the creates met, by method and error kind.
	Requests requests.Stats `json:"requests"`
}

// Binpack fills the fleet to opts.Fill with a mix of pod sizes, created at
// a steady rate, and measures scheduling latency as occupancy grows and
// the fragmentation left at the end. How the run ended (all scheduled,
// stalled, timed out, interrupted) is the record's Outcome.
func Binpack(ctx context.Context, clients Clients, opts BinpackOptions, c Capacity) (BinpackResult, record.Record, error) {
	rec := record.Record{ID: opts.RunID, Kind: "binpack", Params: opts, Started: time.Now().UTC()}
	claim, err := ParseClaim(opts.Claim)
	if err != nil {
		return BinpackResult{}, rec, err
	}
	// Validate has held the claim against the fleet: these are the GPUs
	// it draws from, devices on a DRA fleet whichever way pods ask.
	totalGPUs, freeGPUs, maxNode, err := checkClaim(claim, 0, c, true)
	if err != nil {
		return BinpackResult{}, rec, err
	}
	used := totalGPUs - freeGPUs
	res := BinpackResult{Fill: opts.Fill, TotalGPUs: totalGPUs, TargetGPUs: int64(opts.Fill*float64(totalGPUs)) - used}
	if c.DRA() {
		res.Claim = claim.String()
	}
	if res.TargetGPUs <= 0 {
		return res, rec, fmt.Errorf("the fleet is already %.0f%% full: nothing to fill up to %.0f%%", 100*float64(used)/float64(totalGPUs), 100*opts.Fill)
	}
	sizes := opts.Sizes(res.TargetGPUs)
	res.Pods = len(sizes)
	r, err := startRun(ctx, clients, opts.Namespace, opts.RunID, LabelGPUs)
	if err != nil {
		return res, rec, err
	}
	tracker := r.tracker
	defer tracker.Stop()
	// On DRA, one template per pod size: a template asks for an exact
	// count of devices.
	template := func(size int) string { return fmt.Sprintf("%s-%dgpu", opts.RunID, size) }
	if claim.DRA() {
		for size := range opts.Mix {
			t := claim.Template(template(size), size, map[string]string{LabelRun: opts.RunID})
			if err := CreateClaimTemplate(ctx, clients.Admin, opts.Namespace, t); err != nil {
				return res, rec, err
			}
		}
	}

	start := time.Now()
	createDone := progress.Step(opts.Report, "create", fmt.Sprintf("creating %d pods (%d GPUs) at %g pods/s", len(sizes), res.TargetGPUs, opts.Rate), 0)
	pacer := NewPacer(clock.RealClock{}, opts.Rate)
	createErrs := 0
	for i, size := range sizes {
		if _, err := pacer.Next(ctx); err != nil {
			break
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%05d", opts.RunID, i),
				Labels: map[string]string{LabelRun: opts.RunID, LabelKind: "binpack", LabelGPUs: strconv.Itoa(size)},
			},
			Spec: PodSpec(size),
		}
		if claim.DRA() {
			pod.Spec = WithClaim(pod.Spec, template(size))
		}
		tracker.Sending(pod.Name)
		if _, err := r.load.CoreV1().Pods(opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			createErrs++
		}
	}
	w := waitRunning(ctx, tracker, waitOptions{
		Expect: len(sizes) - createErrs, Total: len(sizes), Timeout: opts.Timeout, Stall: 20 * time.Second,
		Report: opts.Report, CreateDone: createDone,
	})
	res = binpackAccounting(res, tracker.Pods(), totalGPUs, used)
	res.CreateErrors, res.Requests = createErrs, r.requests.Stats()
	if res.FreeGPUsPerNode, res.StrandedForWholeNode, err = fragmentation(ctx, clients, maxNode, c.DRA()); err != nil {
		return res, rec, err
	}
	res.DurationSeconds = w.End.Sub(start).Seconds()
	rec.Ended, rec.Outcome, rec.Result = w.End.UTC(), w.outcome("all scheduled"), res
	rec.Phases = []record.Phase{{Name: "binpack", Start: start.UTC(), End: w.End.UTC()}}
	return res, rec, nil
}

// binpackAccounting buckets the pods by the fleet's GPU occupancy when
// each was bound, and gives per decile the scheduler's bind rate and the
// pods' create→scheduled latency: if filtering gets harder as feasible
// nodes become scarce, the rate falls and the latency climbs in the top
// deciles.
func binpackAccounting(res BinpackResult, pods []PodTimes, total, used int64) BinpackResult {
	var bound []PodTimes
	for _, p := range pods {
		if p.Scheduled.IsZero() {
			size, _ := strconv.Atoi(p.Group)
			if res.UnschedulableBySize == nil {
				res.UnschedulableBySize = map[int]int{}
			}
			res.UnschedulableBySize[size]++
			continue
		}
		bound = append(bound, p)
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Scheduled.Before(bound[j].Scheduled) })
	type decile struct {
		latency     []time.Duration
		first, last time.Time
	}
	deciles := make([]decile, 10)
	occupied := used
	for _, p := range bound {
		size, _ := strconv.Atoi(p.Group)
		d := &deciles[min(int(10*occupied/total), 9)]
		d.latency = append(d.latency, p.Scheduled.Sub(p.Created))
		if d.first.IsZero() {
			d.first = p.Scheduled
		}
		d.last = p.Scheduled
		occupied += int64(size)
		res.ScheduledGPUs += int64(size)
	}
	for i, d := range deciles {
		if len(d.latency) == 0 {
			continue
		}
		dec := Decile{Occupancy: fmt.Sprintf("%d-%d%%", i*10, i*10+10), Latency: Summarise(d.latency)}
		if span := d.last.Sub(d.first).Seconds(); span > 0 {
			dec.BindRate = float64(len(d.latency)-1) / span
		}
		res.Deciles = append(res.Deciles, dec)
	}
	res.Occupancy = float64(used+res.ScheduledGPUs) / float64(total)
	return res
}

// fragmentation counts nodes by free GPUs, and the free GPUs no whole-node
// pod can use: GPUs are nvidia.com/gpu held by bound pods or, on DRA,
// published devices allocated to claims. maxNode is the most GPUs a node
// has.
func fragmentation(ctx context.Context, clients Clients, maxNode int64, dra bool) ([]int, int64, error) {
	nodes, err := clients.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelType + "=kwok"})
	if err != nil {
		return nil, 0, err
	}
	var has, used map[string]int64
	if dra {
		inv, err := fleet.ListDRA(ctx, clients.Admin)
		if err != nil {
			return nil, 0, err
		}
		has, used = inv.Published, inv.Allocated
	} else {
		if used, err = fleet.AllocatedGPUs(ctx, clients.Admin); err != nil {
			return nil, 0, err
		}
		has = map[string]int64{}
		for _, n := range nodes.Items {
			q := n.Status.Allocatable[fleet.ResourceGPU]
			has[n.Name] = q.Value()
		}
	}
	hist, stranded := freeHistogram(nodes.Items, has, used, maxNode)
	return hist, stranded, nil
}

// freeHistogram counts nodes by free GPUs (has minus used, index = free)
// and sums the free GPUs on nodes that are partly used.
func freeHistogram(nodes []corev1.Node, has, used map[string]int64, maxNode int64) ([]int, int64) {
	hist := make([]int, maxNode+1)
	var stranded int64
	for _, n := range nodes {
		free := has[n.Name] - used[n.Name]
		if free < 0 || free > maxNode {
			continue
		}
		hist[free]++
		if free < maxNode {
			stranded += free
		}
	}
	return hist, stranded
}
