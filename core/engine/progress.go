package engine

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// progress writes one line per step to stderr with its duration. On a
// terminal the line shows while the step runs and is rewritten with the
// outcome; elsewhere (CI logs) only finished lines are written, so logs
// carry no control characters.
type progress struct {
	mu  sync.Mutex // guards w and the current line
	w   io.Writer
	tty bool
	cur string
}

func newProgress(w io.Writer) *progress {
	if w == nil {
		w = io.Discard
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	return &progress{w: w, tty: tty}
}

// step starts a step and returns the function that ends it with err.
func (p *progress) step(format string, args ...any) func(err error, note string) {
	name := fmt.Sprintf(format, args...)
	start := time.Now()
	p.mu.Lock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K  … %s", name)
		p.cur = name
	}
	p.mu.Unlock()
	return func(err error, note string) {
		d := time.Since(start)
		p.mu.Lock()
		defer p.mu.Unlock()
		mark, tail := "ok", ""
		if err != nil {
			mark = "FAIL"
		}
		if note != "" {
			tail = " — " + note
		}
		if p.tty {
			fmt.Fprint(p.w, "\r\033[K")
			p.cur = ""
		}
		fmt.Fprintf(p.w, "warden: %-4s %s (%s)%s\n", mark, name, round(d), tail)
	}
}

// note writes an informational line.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.cur != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "warden: "+format+"\n", args...)
	if p.tty && p.cur != "" {
		fmt.Fprintf(p.w, "  … %s", p.cur)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond)
	}
}
