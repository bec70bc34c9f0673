package supervise

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Drain bounds, spec 001 "How the skill runner supervises its agent": once
// the target has exited, each output pipe is closed when it reaches its end,
// stays empty for drainIdle, or has been read for drainTotal.
const (
	drainIdle  = 100 * time.Millisecond
	drainTotal = 2 * time.Second
)

// capture copies one output pipe of the target into a capture file, keeping
// at most limit bytes, and into an optional echo writer. Bytes beyond the
// limit are counted and dropped, so the target never blocks on a full pipe
// because warden stopped reading.
//
// Only the goroutine running copy touches the counters and the file until
// done is closed; the supervisor reads them afterwards.
type capture struct {
	name  string   // "stdout" or "stderr", for messages
	r     *os.File // read end of the pipe; pollable, so deadlines work
	file  *os.File // capture file, nil when not captured or once finished
	keeps bool     // the stream has a capture file
	echo  io.Writer
	limit int64

	total   int64 // bytes read from the pipe
	kept    int64 // bytes written to file
	fileErr error // first error writing file
	done    chan struct{}

	drainEnd atomic.Int64 // UnixNano after which draining stops; 0 while the target runs
}

// newCapture makes the pipe for one output stream and opens its capture
// file. It returns the write end for the target; the caller closes it once
// the target has started.
func newCapture(name, path string, echo io.Writer, limit int64) (*capture, *os.File, error) {
	c := &capture{name: name, echo: echo, limit: limit, done: make(chan struct{})}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("unable to create %s capture file: %w", name, err)
		}
		c.file, c.keeps = f, true
	}
	r, w, err := os.Pipe()
	if err != nil {
		c.closeFile()
		return nil, nil, fmt.Errorf("unable to create %s pipe: %w", name, err)
	}
	c.r = r
	return c, w, nil
}

// copy reads the pipe until EOF or until the drain closes it.
func (c *capture) copy() {
	defer close(c.done)
	defer c.r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
			c.extendDrain()
		}
		if err != nil {
			return // EOF, or the drain deadline passed
		}
	}
}

func (c *capture) write(p []byte) {
	c.total += int64(len(p))
	if c.echo != nil {
		if _, err := c.echo.Write(p); err != nil {
			c.echo = nil // a broken --stream must not fail the run or stall the target
		}
	}
	if c.file == nil || c.fileErr != nil || c.kept >= c.limit {
		return
	}
	keep := p[:min(int64(len(p)), c.limit-c.kept)]
	n, err := c.file.Write(keep)
	c.kept += int64(n)
	c.fileErr = err
}

// drain starts the bounded drain after the target has exited and waits for
// copy to finish. A process that left the group and still holds the pipe
// cannot keep warden waiting longer than drainTotal; what it writes later is
// lost.
func (c *capture) drain() {
	c.drainEnd.Store(time.Now().Add(drainTotal).UnixNano())
	c.extendDrain()
	<-c.done
}

// extendDrain moves the read deadline to drainIdle from now, capped at the
// end of the drain. It does nothing while the target runs.
func (c *capture) extendDrain() {
	end := c.drainEnd.Load()
	if end == 0 {
		return
	}
	_ = c.r.SetReadDeadline(time.Unix(0, min(time.Now().Add(drainIdle).UnixNano(), end)))
}

// truncated reports whether the capture file lacks bytes the target wrote.
// Preconditions: copy has finished.
func (c *capture) truncated() bool { return c.keeps && c.total > c.kept }

// finish closes the capture file and returns the first error writing it.
// Preconditions: copy has finished.
func (c *capture) finish() error {
	err := c.fileErr
	if c.file != nil {
		if cerr := c.file.Close(); err == nil {
			err = cerr
		}
		c.file = nil
	}
	if err != nil {
		return fmt.Errorf("unable to write the target's %s capture: %w", c.name, err)
	}
	return nil
}

// abandon releases a capture whose target never started.
func (c *capture) abandon() {
	c.r.Close()
	c.closeFile()
}

func (c *capture) closeFile() {
	if c.file != nil {
		c.file.Close()
		c.file = nil
	}
}
