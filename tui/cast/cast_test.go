package cast_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ghostfleet/ghostfleet/fleet/watch"
	"github.com/ghostfleet/ghostfleet/tui"
	"github.com/ghostfleet/ghostfleet/tui/cast"
)

// parse reads a cast: its header, and its events' times and output.
func parse(t *testing.T, data []byte) (cast.Header, []float64, string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	if !sc.Scan() {
		t.Fatal("empty cast")
	}
	var h cast.Header
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		t.Fatalf("header %s: %v", sc.Text(), err)
	}
	var times []float64
	var out strings.Builder
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("event %s: %v", sc.Text(), err)
		}
		secs, ok1 := ev[0].(float64)
		kind, ok2 := ev[1].(string)
		text, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("event %s is not [time, kind, data]", sc.Text())
		}
		times = append(times, secs)
		if kind == "o" {
			out.WriteString(text)
		}
	}
	return h, times, out.String()
}

// The console run as a Bubble Tea program through a cast writer records a
// cast a player reads: the header, times that never go back, and the
// frame's text in the output.
func TestRecordConsole(t *testing.T) {
	var terminal, rec bytes.Buffer
	w, err := cast.New(&rec, &terminal, 80, 24, "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	fleet := make(chan watch.FleetView, 1)
	fleet <- watch.FleetView{Nodes: []watch.NodeCell{{Name: "n1", GPUs: 8, Ready: true}}, Ready: 1, GPUs: 8}
	cfg := tui.Config{Info: tui.Info{Cluster: "cast-test"}, Theme: tui.NewTheme(false), Fleet: fleet}
	p := tea.NewProgram(tui.New(cfg), tea.WithInput(nil), tea.WithOutput(w), tea.WithoutSignalHandler())
	go func() {
		time.Sleep(300 * time.Millisecond)
		p.Quit()
	}()
	if _, err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, times, out := parse(t, rec.Bytes())
	if h.Version != 2 || h.Width != 80 || h.Height != 24 || h.Timestamp == 0 || h.Title != "test" {
		t.Errorf("header %+v", h)
	}
	if len(times) == 0 {
		t.Fatal("no events")
	}
	for i := 1; i < len(times); i++ {
		if times[i] < times[i-1] {
			t.Errorf("event %d at %gs is before event %d at %gs", i, times[i], i-1, times[i-1])
		}
	}
	for _, want := range []string{"GhostFleet", "cast-test", "Activity"} {
		if !strings.Contains(out, want) {
			t.Errorf("the recorded output lacks %q:\n%s", want, out)
		}
	}
	if out != terminal.String() {
		t.Errorf("the terminal got %d bytes, the cast %d", terminal.Len(), len(out))
	}
}

// A character split across two writes is recorded whole, in the second
// write's event: JSON strings cannot hold half of one.
func TestSplitCharacter(t *testing.T) {
	var terminal, rec bytes.Buffer
	clock := time.Unix(1000, 0)
	w, err := cast.New(&rec, &terminal, 80, 24, "", func() time.Time { clock = clock.Add(time.Second); return clock })
	if err != nil {
		t.Fatal(err)
	}
	b := []byte("a█b")
	w.Write(b[:2]) // "a" and the first byte of █
	w.Write(b[2:])
	w.Close()
	_, times, out := parse(t, rec.Bytes())
	if out != "a█b" || len(times) != 2 || times[0] != 1 || times[1] != 2 {
		t.Errorf("output %q at %v", out, times)
	}
}
