package tui

import "testing"

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Xid 79: GPU has fallen off the bus", "Xid 79: GPU has fallen off the bus"},
		{"color", "\x1b[31mred\x1b[0m alert", "red alert"},
		{"cursor moves and clear screen", "a\x1b[2J\x1b[H\x1b[10;10Hb", "ab"},
		{"window title (OSC)", "x\x1b]0;pwned\x07y", "xy"},
		{"hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"newlines and tabs", "line1\nline2\tcol\r", "line1 line2 col "},
		{"bell, backspace, DEL, C1 CSI", "a\x07b\x08c\x7fd\u009b31me", "a b c d 31me"},
		{"unicode stays", "GPU ✗ — 80 GB", "GPU ✗ — 80 GB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clean(tt.in); got != tt.want {
				t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
