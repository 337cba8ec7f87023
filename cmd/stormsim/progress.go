package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress shows nothing for the first _progressAfter of a command, then a
// line every _progressEvery: rewritten in place on a terminal, one line
// after the other elsewhere (CI logs).
const (
	_progressAfter    = 3 * time.Second
	_progressEveryTTY = 250 * time.Millisecond
	_progressEvery    = 5 * time.Second
)

// progress writes the progress line of long runs to stderr. It is safe
// for concurrent use.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time

	mu    sync.Mutex
	last  time.Time
	shown bool // a line is on a terminal, to be cleared
}

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, start: time.Now()}
}

// update returns an Options.Progress for a run called label.
func (p *progress) update(label string) func(done, total int) {
	return func(done, total int) { p.updateLabelled(label, done, total) }
}

// updateLabelled shows that done of total root requests of run label are
// done, when it is time to.
func (p *progress) updateLabelled(label string, done, total int) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	every := _progressEvery
	if p.tty {
		every = _progressEveryTTY
	}
	if now.Sub(p.start) < _progressAfter || now.Sub(p.last) < every {
		return
	}
	p.last = now
	line := fmt.Sprintf("stormsim: %s: %d/%d requests, %v elapsed", label, done, total, now.Sub(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// clear removes the progress line from a terminal, before output.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// finish clears the progress line at the end of the command.
func (p *progress) finish() { p.clear() }
