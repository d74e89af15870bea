package cast

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// flushEvery bounds how much of a recording a killed process loses.
const flushEvery = time.Second

// Header is a cast's first line.
type Header struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// Writer passes everything written to the terminal and records it as
// output events ([seconds, "o", data]); a change of the terminal's size
// is recorded as a resize event ([seconds, "r", "WxH"]). It is a
// term.File when the terminal is one, so a Bubble Tea program writing
// to it still sizes itself by the terminal.
type Writer struct {
	term io.Writer

	mu      sync.Mutex
	rec     *bufio.Writer
	closer  io.Closer
	enc     *json.Encoder
	start   time.Time
	now     func() time.Time
	flushed time.Time
	w, h    int
	pending []byte // the start of a UTF-8 character the next write ends
	err     error
}

// Create records what is written to terminal into the cast file path.
// The header's size is the terminal's, or w×h when it is not one.
func Create(path string, terminal io.Writer, w, h int, title string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	if tw, th, ok := size(terminal); ok {
		w, h = tw, th
	}
	c, err := New(f, terminal, w, h, title, time.Now)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.closer = f
	return c, nil
}

// New writes the header to rec and returns a Writer recording into it.
func New(rec io.Writer, terminal io.Writer, w, h int, title string, now func() time.Time) (*Writer, error) {
	c := &Writer{term: terminal, rec: bufio.NewWriter(rec), now: now, w: w, h: h}
	c.start = now()
	c.flushed = c.start
	c.enc = json.NewEncoder(c.rec)
	c.enc.SetEscapeHTML(false)
	env := map[string]string{"TERM": os.Getenv("TERM"), "SHELL": os.Getenv("SHELL")}
	if err := c.enc.Encode(Header{Version: 2, Width: w, Height: h, Timestamp: c.start.Unix(), Title: title, Env: env}); err != nil {
		return nil, fmt.Errorf("writing the cast: %w", err)
	}
	return c, c.rec.Flush()
}

// Write writes p to the terminal and records what was written.
func (c *Writer) Write(p []byte) (int, error) {
	n, err := c.term.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return n, err
	}
	t := c.now()
	if w, h, ok := size(c.term); ok && (w != c.w || h != c.h) {
		c.w, c.h = w, h
		c.event(t, "r", fmt.Sprintf("%dx%d", w, h))
	}
	data := append(c.pending, p[:n]...)
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i // keep an unfinished character for the next write
			}
			break
		}
	}
	c.pending = append([]byte(nil), data[cut:]...)
	if cut > 0 {
		c.event(t, "o", string(data[:cut]))
	}
	if t.Sub(c.flushed) >= flushEvery {
		c.flushed = t
		c.setErr(c.rec.Flush())
	}
	return n, err
}

// event records one event; the first error sticks and stops recording
// (the terminal is still written).
func (c *Writer) event(t time.Time, kind, data string) {
	secs := strconv.FormatFloat(t.Sub(c.start).Seconds(), 'f', 6, 64)
	if _, err := c.rec.WriteString("[" + secs + ", \"" + kind + "\", "); err != nil {
		c.setErr(err)
		return
	}
	b, _ := json.Marshal(data) // a string always marshals
	c.rec.Write(b)
	c.setErr(c.rec.WriteByte(']'))
	c.setErr(c.rec.WriteByte('\n'))
}

func (c *Writer) setErr(err error) {
	if c.err == nil && err != nil {
		c.err = fmt.Errorf("writing the cast: %w", err)
	}
}

// Flush writes what is buffered to the cast.
func (c *Writer) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.setErr(c.rec.Flush())
	}
	return c.err
}

// Close flushes the cast and closes its file (never the terminal).
func (c *Writer) Close() error {
	err := c.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closer != nil {
		err = errors.Join(err, c.closer.Close())
		c.closer = nil
	}
	return err
}

// Read reads the terminal when it can be read (a term.File's half).
func (c *Writer) Read(p []byte) (int, error) {
	if r, ok := c.term.(io.Reader); ok {
		return r.Read(p)
	}
	return 0, io.EOF
}

// Fd is the terminal's file descriptor, so a program writing to c sizes
// itself by the terminal; ^0 when it is not a file.
func (c *Writer) Fd() uintptr {
	if f, ok := c.term.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// size is the terminal's size, when it is one.
func size(w io.Writer) (int, int, bool) {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, 0, false
	}
	tw, th, err := term.GetSize(int(f.Fd()))
	return tw, th, err == nil
}
