package tui

import (
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// keepFrame saves the console's frame as text (ANSI stripped) into a
// finished run's folder when its outcome asks (Outcome.Frame: a
// snapshot's frame.txt), so slides can show the very frame the snapshot
// was taken from. The file is written off the UI goroutine.
func (m *Model) keepFrame(d runDone) tea.Cmd {
	o := d.outcome
	if o.Frame == "" || o.Dir == "" || d.err != nil {
		return nil
	}
	frame := ansi.Strip(m.render()) + "\n"
	path := filepath.Join(o.Dir, o.Frame)
	return func() tea.Msg {
		if err := os.WriteFile(path, []byte(frame), 0o644); err != nil {
			return noticeMsg("saving the frame: " + err.Error())
		}
		return nil
	}
}
