package runs

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

// summarise counts each sample once for its innermost function (flat)
// and once per scheduler plugin anywhere on its stack (cumulative).
func TestSummarise(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	fit := fn(1, "k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*Fit).Score")
	filter := fn(2, "k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources.(*DynamicResources).Filter")
	alloc := fn(3, "k8s.io/dynamic-resource-allocation/structured/internal/stable.(*Allocator).Allocate")
	cycle := fn(4, "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).scheduleOne")
	gc := fn(5, "runtime.gcBgMarkWorker")
	loc := func(id uint64, f ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range f {
			l.Line = append(l.Line, profile.Line{Function: f})
		}
		return l
	}
	lFit, lFilter, lAlloc, lCycle, lGC := loc(1, fit), loc(2, filter), loc(3, alloc), loc(4, cycle), loc(5, gc)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{fit, filter, alloc, cycle, gc},
		Location:   []*profile.Location{lFit, lFilter, lAlloc, lCycle, lGC},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lAlloc, lFilter, lCycle}, Value: []int64{3, 3e9}}, // the allocator, under DRA's Filter
			{Location: []*profile.Location{lFilter, lCycle}, Value: []int64{1, 1e9}},
			{Location: []*profile.Location{lFit, lCycle}, Value: []int64{2, 2e9}},
			{Location: []*profile.Location{lGC}, Value: []int64{4, 4e9}},
		},
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	sum, err := summarise(buf.Bytes(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.cpuSeconds != 10 {
		t.Errorf("CPU %v s, want 10", sum.cpuSeconds)
	}
	if len(sum.top) != 2 || sum.top[0].Function != gc.Name || sum.top[0].Share != 0.4 || sum.top[1].Function != alloc.Name {
		t.Errorf("top %+v, want the GC worker (40%%), then the allocator", sum.top)
	}
	if len(sum.plugins) != 2 || sum.plugins["dynamicresources"] != 4 || sum.plugins["noderesources"] != 2 {
		t.Errorf("plugins %v, want dynamicresources 4 s (its allocator included), noderesources 2 s", sum.plugins)
	}

	p.Sample = p.Sample[3:] // no scheduler code: no plugins
	buf.Reset()
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if sum, err := summarise(buf.Bytes(), 5); err != nil || sum.plugins != nil {
		t.Errorf("a profile without scheduler plugins: %v, %v", sum.plugins, err)
	}
	if _, err := summarise([]byte("not a profile"), 5); err == nil {
		t.Error("garbage was read as a profile")
	}
}
