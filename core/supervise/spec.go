package supervise

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// Defaults for the zero values of Spec.
const (
	DefaultOutputLimit = 16 << 20        // bytes kept per output stream
	DefaultGrace       = 2 * time.Second // from the stopping signal to SIGKILL
)

// Spec describes one target launch. Nothing is inherited from warden: the
// environment, directory and files are exactly what the Spec names.
type Spec struct {
	// Path is the program actually executed, as given to execve: no PATH
	// search; a relative Path resolves against Dir.
	Path string
	// Args is the argument vector including argv[0], spelled as the target
	// should see it. Empty means []string{Path}.
	Args []string
	// Env is the complete environment; nil means an empty one.
	Env []string
	// Dir is the working directory; empty means warden's.
	Dir string

	// Stdin is the target's standard input; nil means /dev/null. It is a file
	// so that no copying goroutine can outlive the target.
	Stdin *os.File
	// StdoutPath and StderrPath name files (created 0600, truncated, not
	// following a final symlink) that receive the first OutputLimit bytes of
	// each stream. Empty means the stream is read and counted but not kept.
	StdoutPath, StderrPath string
	// OutputLimit caps each capture file; 0 means DefaultOutputLimit.
	OutputLimit int64
	// StdoutEcho and StderrEcho, when set, receive every byte of the stream
	// as it arrives (warden run --stream). A write error turns the echo off.
	// A writer shared by both must be safe for concurrent use.
	StdoutEcho, StderrEcho io.Writer
	// ExtraFiles become the target's file descriptors 3, 4, ...
	ExtraFiles []*os.File

	// Timeout bounds the target's wall time from its exec; 0 means none.
	Timeout time.Duration
	// MemoryLimit, when positive, bounds the resident memory of the target
	// and every process it started, summed: supervision samples it every
	// LimitInterval and kills the group once the sum exceeds it, and the
	// Result names the limit. It is the whole trial's memory, as a cgroup
	// would count it, for hosts where warden has no cgroup (Linux only).
	MemoryLimit int64

	// Grace is how long a stop or timeout waits after the stopping signal
	// before SIGKILL; 0 means DefaultGrace.
	Grace time.Duration
}

func (s Spec) outputLimit() int64 {
	if s.OutputLimit > 0 {
		return s.OutputLimit
	}
	return DefaultOutputLimit
}

func (s Spec) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

func (s Spec) argv() []string {
	if len(s.Args) == 0 {
		return []string{s.Path}
	}
	return s.Args
}

// validate rejects a Spec no execve could run.
func (s Spec) validate() error {
	if s.Path == "" {
		return errdefs.Errorf(errdefs.ErrInvalid, "target spec: empty Path")
	}
	if s.Timeout < 0 || s.Grace < 0 || s.OutputLimit < 0 || s.MemoryLimit < 0 {
		return errdefs.Errorf(errdefs.ErrInvalid, "target spec %s: negative Timeout, Grace, OutputLimit or MemoryLimit", s.Path)
	}
	if s.MemoryLimit > 0 && !canMeasureTree {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "target spec %s: a memory limit needs /proc to measure the process tree, which this system lacks", s.Path)
	}
	all := append(append([]string{s.Path}, s.argv()...), s.Env...)
	for _, v := range all {
		if strings.IndexByte(v, 0) >= 0 {
			return errdefs.Errorf(errdefs.ErrInvalid, "target spec %s: NUL byte in %q", s.Path, v)
		}
	}
	return nil
}

// Result is how a target ended. The target's own exit status is reported,
// not judged: a non-zero ExitCode is not an error of supervision.
type Result struct {
	// Pid is the target's process id, which is also its process group id.
	Pid int
	// ExitCode is the exit status, or -1 when a signal ended the target.
	ExitCode int
	// Signal is the signal that ended the target, 0 if it exited.
	Signal syscall.Signal
	// Duration runs from the release of the target (just before its exec)
	// to its exit, as warden observed it.
	Duration time.Duration
	// TimedOut reports that Spec.Timeout ran out and supervision stopped the
	// target (SIGTERM, then SIGKILL after the grace period). Map it with Err.
	TimedOut bool
	// LimitExceeded names the limit the target exceeded, which made
	// supervision kill it ("memory limit: 2.1 GiB resident > 2 GiB"); empty
	// otherwise. Err maps it to exit 4.
	LimitExceeded string
	// Stopped reports that the target was stopped on request: Stop, a signal
	// to warden caught by NotifyStop, or the end of Start's context.
	Stopped bool
	// StdoutBytes and StderrBytes count every byte read from the streams,
	// including bytes dropped beyond the limit. Output written after the
	// drain ended is neither read nor counted.
	StdoutBytes, StderrBytes int64
	// StdoutTruncated and StderrTruncated report that the capture file holds
	// fewer bytes than the stream carried.
	StdoutTruncated, StderrTruncated bool
}

// Err classifies the outcome for the exit code: an errdefs.ErrTimeout error
// (exit 4) when the target timed out, nil otherwise. A target stopped on
// request is for the caller to record (run.json status "failed").
func (r Result) Err() error {
	switch {
	case r.LimitExceeded != "":
		return errdefs.Errorf(errdefs.ErrTimeout, "target (pid %d) exceeded its %s", r.Pid, r.LimitExceeded)
	case r.TimedOut:
		return errdefs.Errorf(errdefs.ErrTimeout, "target (pid %d) timed out after %s", r.Pid, r.Duration.Round(time.Millisecond))
	}
	return nil
}

// String describes the end in one line: "exit status 3", "killed by
// SIGKILL (timed out)".
func (r Result) String() string {
	s := fmt.Sprintf("exit status %d", r.ExitCode)
	if r.Signal != 0 {
		s = "killed by " + unix.SignalName(r.Signal)
	}
	switch {
	case r.LimitExceeded != "":
		s += " (exceeded its " + r.LimitExceeded + ")"
	case r.TimedOut:
		s += " (timed out)"
	case r.Stopped:
		s += " (stopped)"
	}
	return s
}
