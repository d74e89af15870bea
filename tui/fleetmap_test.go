package tui

import (
	"testing"
)

func TestLayoutMap(t *testing.T) {
	tests := []struct {
		nodes, w, h int
		perCell     int
		grouped     bool
		wantCaption string
	}{
		{10, 40, 5, 1, true, "10 nodes · grouped by rack"},
		{1000, 60, 10, 2, false, "1,000 nodes · 1 cell = 2 nodes"},
		{5000, 60, 10, 12, false, "5,000 nodes · 1 cell = 3 racks (12 nodes)"},
	}
	for _, tt := range tests {
		t.Run(tt.wantCaption, func(t *testing.T) {
			v := sampleFleet(tt.nodes)
			l := layoutMap(v, tt.w, tt.h)
			if l.perCell != tt.perCell || l.grouped != tt.grouped || len(l.rows) > tt.h {
				t.Errorf("layout: per cell %d grouped %v rows %d", l.perCell, l.grouped, len(l.rows))
			}
			cells := 0
			for _, r := range l.rows {
				if len(r) > tt.w {
					t.Errorf("row of %d cells, wider than %d", len(r), tt.w)
				}
				for _, c := range r {
					if c != cellGap {
						cells++
					}
				}
			}
			if want := (tt.nodes + tt.perCell - 1) / tt.perCell; cells != want {
				t.Errorf("%d cells, want %d", cells, want)
			}
			if _, caption := renderMap(NewTheme(false), v, tt.w, tt.h); caption != tt.wantCaption {
				t.Errorf("caption %q, want %q", caption, tt.wantCaption)
			}
		})
	}
}

func TestCellLevels(t *testing.T) {
	tests := []struct {
		used, gpus int64
		want       int
	}{{0, 8, 0}, {1, 8, 1}, {8, 8, 8}, {1, 4, 2}, {4, 4, 8}, {1, 72, 1}, {5, 0, 0}}
	for _, tt := range tests {
		if got := cellLevel(tt.used, tt.gpus); got != tt.want {
			t.Errorf("%d of %d GPUs: level %d, want %d", tt.used, tt.gpus, got, tt.want)
		}
	}
}

// The map is drawn once per view and size: a second View reuses it, a
// new view or size redraws it.
func TestMapIsMemoised(t *testing.T) {
	m := New(testConfig(false))
	m.setSize(120, 40)
	m.Update(fleetMsg(sampleFleet(100)))
	first := m.fleetMap.View()
	m.fleetMap.out = "kept"
	if m.fleetMap.View() != "kept" {
		t.Fatal("the map redrew without a change")
	}
	m.setSize(120, 40)
	if m.fleetMap.View() != "kept" {
		t.Fatal("the same size redrew the map")
	}
	m.Update(fleetMsg(sampleFleet(100)))
	if got := m.fleetMap.View(); got != first {
		t.Errorf("a new view did not redraw the map:\n%s", got)
	}
}
