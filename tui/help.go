package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// noticeFor is how long a notice replaces the key help in the footer.
const noticeFor = 8 * time.Second

// footer is the bottom line: the short help of whatever has the keys (an
// open overlay, else the console), or for a while the latest notice.
type footer struct {
	noKeys
	*shared
	size
	help     help.Model
	focus    help.KeyMap // set by the root before each frame
	prompt   *prompt     // the open `/` or `:` line, drawn in the footer's place
	notice   string
	noticeAt time.Time
}

func newHelp(th Theme) help.Model {
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles.ShortKey, h.Styles.FullKey = th.Key, th.Key
	h.Styles.ShortDesc, h.Styles.FullDesc = th.Footer, th.Footer
	h.Styles.ShortSeparator, h.Styles.FullSeparator = th.Dim, th.Dim
	return h
}

func newFooter(c *shared) *footer { return &footer{shared: c, help: newHelp(c.th), focus: c.keys} }

func (f *footer) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case noticeMsg:
		f.notice, f.noticeAt = string(msg), f.now()
	case tickMsg:
		if f.notice != "" && f.now().Sub(f.noticeAt) > noticeFor {
			f.notice = ""
		}
	}
	return nil
}

func (f *footer) SetSize(w, h int) { f.resized(w, h) }

func (f *footer) View() string {
	if f.prompt != nil && !f.prompt.closed() {
		return f.prompt.View()
	}
	line := f.help.ShortHelpView(f.focus.ShortHelp())
	if f.notice != "" {
		line = f.th.Warn.Render(f.notice)
	}
	return fitLine(line, f.w)
}

// keysHelp is the `?` overlay: every key of the keymap with what it
// does, then the `:` commands. esc or ? close it; any other key closes it
// and then does what it does.
type keysHelp struct {
	*shared
	size
	commands []string
	done     bool
}

func newKeysHelp(c *shared, commands []string) *keysHelp {
	return &keysHelp{shared: c, commands: commands}
}

func (k *keysHelp) Update(msg tea.Msg) tea.Cmd {
	m, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	k.done = true
	if key.Matches(m, k.keys.Close, k.keys.Help) {
		return nil
	}
	return func() tea.Msg { return m } // the key again, to the console
}

func (k *keysHelp) closed() bool     { return k.done }
func (k *keysHelp) SetSize(w, h int) { k.resized(w, h) }

func (k *keysHelp) ShortHelp() []key.Binding  { return []key.Binding{anyKeyCloses(k.keys)} }
func (k *keysHelp) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// longHelp says more than a binding's footer word, by its help key; a key
// without an entry shows its own description.
var longHelp = map[string]string{
	"n":        "scale the fleet to N nodes",
	"l":        "load: N pods of G GPUs",
	"c":        "churn: open-loop create/delete",
	"C":        "churn, bounded in-flight requests",
	"t":        "training jobs (Indexed Jobs)",
	"b":        "ClusterLoader2 density run",
	"f":        "inject a fault, or clear them",
	"s":        "snapshot of the metrics window",
	"r":        "report of the latest snapshot",
	"x":        "remove every GhostFleet workload",
	"+/-":      "a running churn's rate up/down",
	"v":        "next API SLO class on the chart",
	"z":        "charts' window: 5, 15, 60 minutes",
	"esc":      "clear the filter, else cancel run",
	"↑↓←→/hjk": "move the map's cursor (l is load)",
	"enter":    "open the node or group at the cursor",
	"/":        "filter: faulted, failed, rack=12…",
	":":        "command: :load 800 1, :help",
	"?":        "this list",
	"q":        "quit (asks while runs are active)",
}

func (k *keysHelp) View() string {
	th := k.th
	var items []string
	keyW := 0
	for _, col := range k.keys.FullHelp() {
		for _, b := range col {
			keyW = max(keyW, ansi.StringWidth(b.Help().Key))
		}
	}
	for _, col := range k.keys.FullHelp() {
		for _, b := range col {
			h := b.Help()
			if h.Key == "" {
				continue
			}
			desc := longHelp[h.Key]
			if desc == "" {
				desc = h.Desc
			}
			items = append(items, th.Key.Render(pad(h.Key, keyW))+" "+desc)
		}
	}
	// Two columns when they fit side by side.
	itemW := 0
	for _, it := range items {
		itemW = max(itemW, ansi.StringWidth(it))
	}
	var lines []string
	if cols := 2; k.w-4 >= cols*itemW+3 {
		half := (len(items) + 1) / 2
		for i := range half {
			line := items[i] + strings.Repeat(" ", itemW+3-ansi.StringWidth(items[i]))
			if i+half < len(items) {
				line += items[i+half]
			}
			lines = append(lines, line)
		}
	} else {
		lines = items
	}
	lines = append(lines, "", th.Dim.Width(max(1, k.w-4)).Render(sloHelp()))
	if len(k.commands) > 0 {
		lines = append(lines, "", th.Bold.Render("Commands")+th.Dim.Render(" (: then a name and values in the form's order; missing ones keep these defaults)"))
		lines = append(lines, k.commands...)
	}
	return box(th, "Keys", strings.Join(lines, "\n"), k.w, k.h)
}

// commandsHelp is :help: the `:` commands; any key closes it.
type commandsHelpView struct {
	*shared
	size
	lines []string
	done  bool
}

func newCommandsHelp(c *shared, lines []string) *commandsHelpView {
	return &commandsHelpView{shared: c, lines: lines}
}

func (v *commandsHelpView) Update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(tea.KeyMsg); ok {
		v.done = true
	}
	return nil
}

func (v *commandsHelpView) closed() bool     { return v.done }
func (v *commandsHelpView) SetSize(w, h int) { v.resized(w, h) }

func (v *commandsHelpView) ShortHelp() []key.Binding  { return []key.Binding{anyKeyCloses(v.keys)} }
func (v *commandsHelpView) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

func (v *commandsHelpView) View() string {
	text := v.th.Dim.Render("a name, then values in the form's order; missing ones keep these defaults") + "\n" + strings.Join(v.lines, "\n")
	return box(v.th, "Commands (:)", text, v.w, v.h)
}
