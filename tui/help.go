package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
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
	line := f.help.ShortHelpView(f.focus.ShortHelp())
	if f.notice != "" {
		line = f.th.Warn.Render(f.notice)
	}
	return fitLine(line, f.w)
}

// keysHelp is the `?` overlay: every key in columns. esc or ? close it;
// any other key closes it and then does what it does.
type keysHelp struct {
	*shared
	size
	help help.Model
	done bool
}

func newKeysHelp(c *shared) *keysHelp {
	h := newHelp(c.th)
	h.ShowAll = true
	return &keysHelp{shared: c, help: h}
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

func (k *keysHelp) View() string {
	v := k.help.FullHelpView(k.keys.FullHelp())
	return box(k.th, "Keys", v+"\n\n"+k.th.Dim.Render("any key closes this"), k.w, k.h)
}
