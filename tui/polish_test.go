package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The latest verdict is shown whole, wrapped to the pane, never cut
// mid-sentence while there is room below it.
func TestActivityShowsTheWholeVerdict(t *testing.T) {
	m := New(testConfig(false))
	m.setSize(160, 48)
	verdict := "8,000 pods of 1 GPU scheduled in 2m37s; scheduler bound 51 pods/s (scheduler's active queue drained at 14:02:11); pod startup p99 2.1s (SLO 5s, met); API mutating p99 290ms (SLO 1s, met); etcd grew 84 MiB to 1.2 GiB of 8 GiB"
	m.activity.runs = []*run{{id: 1, name: "load 8000×1", started: epoch.Add(-3 * 60e9), ended: epoch.Add(-60e9), finished: true, progress: -1,
		outcome: Outcome{Summary: verdict, Dir: "/tmp/someone/results/load-20261129-1157-with-a-long-folder-name"}}}
	text := ansi.Strip(m.activity.View())
	var got []string
	for _, l := range strings.Split(text, "\n") {
		got = append(got, strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "│")))
	}
	joined := strings.Join(got, " ")
	for _, want := range []string{"etcd grew 84 MiB to 1.2 GiB of 8 GiB", "with-a-long-folder-name"} {
		if !strings.Contains(strings.Join(strings.Fields(joined), " "), want) && !strings.Contains(strings.ReplaceAll(joined, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("the activity pane does not show %q whole:\n%s", want, text)
		}
	}
	// No room: the cut says so.
	lines := wrapUpTo(m.ctx.th.Footer, verdict, 30, 2)
	if len(lines) != 2 || !strings.HasSuffix(lines[1], "…") {
		t.Errorf("a cut verdict does not end in …: %q", lines)
	}
}

func TestPodsLineNeverCutsAWord(t *testing.T) {
	p := newAllocation(&shared{th: NewTheme(false)})
	p.fleet.Running, p.fleet.Pending, p.fleet.Unscheduled, p.fleet.Failed, p.fleet.Succeeded = 5000, 2437, 1748, 12, 300
	for _, w := range []int{30, 36, 48} {
		p.SetSize(w+4, 7)
		// At 30 cells nothing whole fits: the box then cuts a number's
		// tail, never a word into another.
		if l := p.podsLine(w); w > 36 && ansi.StringWidth(l) > w || strings.Contains(l, "unsched") {
			t.Errorf("width %d: %q", w, l)
		}
	}
	p.SetSize(52, 8)
	if got := p.pendingLine(); got != "Pending 2,437 · 1,748 to schedule · 689 starting" {
		t.Errorf("pending line %q", got)
	}
}
