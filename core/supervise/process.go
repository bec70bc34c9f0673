package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// backstopSlack is how long after Timeout plus Grace the watchdog kills the
// group by itself, in case warden cannot (suspended with Ctrl-Z, say). With
// the default grace that is 5 s after the timeout, as spec 001 has it.
const backstopSlack = 3 * time.Second

// reason records why supervision asked the target to end; the first wins.
type reason int

const (
	notAsked  reason = iota
	byTimeout        // Spec.Timeout ran out
	byRequest        // Stop, NotifyStop, or the context of Start
	byLimit          // a resource limit of the Spec was exceeded
)

// Process is a target running under supervision. Its methods are safe for
// concurrent use.
type Process struct {
	pid     int
	proc    *os.Process
	timeout time.Duration
	grace   time.Duration
	started time.Time
	stdout  *capture
	stderr  *capture
	wd      *Watchdog

	exited   chan struct{}    // closed once the target has exited; normally it is not yet reaped
	exitedAt time.Time        // set before exited is closed
	reaped   *os.ProcessState // set before exited is closed if waiting had to reap
	reapErr  error

	done chan struct{} // closed once res and err are final
	res  Result
	err  error

	mu     sync.Mutex // guards ended, asked, limit and killer
	ended  bool       // the target has exited: Stop and timers leave the group alone
	asked  reason
	limit  string      // what byLimit exceeded
	killer *time.Timer // SIGKILL after the grace period

	memoryLimit int64
}

// Start launches spec.Path under supervision and returns once the target is
// running. What Start guarantees, from then until Wait returns:
//
//   - The target leads a process group of its own; a terminal's Ctrl-C,
//     Ctrl-\ and Ctrl-Z reach warden, not the target.
//   - Before the target's program runs, a detached watchdog has armed for its
//     group (see Watchdog): if warden dies, SIGKILL included, the whole group
//     is killed. If the watchdog cannot arm, the target does not run and
//     Start fails with an errdefs.ErrTimeout error (exit 4, a structural
//     failure). On Linux the target also has Pdeathsig SIGKILL.
//   - When the target exits, every process left in its group receives
//     SIGKILL at once, and Wait returns only after the group is gone.
//     A process that left the group (a daemon in its own session) is not
//     followed.
//   - Output pipes are drained with a bound (capture), so a process that
//     still holds them cannot keep Wait waiting more than 2 s.
//   - Spec.Timeout, Stop and the end of ctx stop the whole group: the
//     stopping signal, then SIGKILL after Spec.Grace. A target that ignores
//     the signal is killed all the same.
//
// Start fails with errdefs.ErrNotFound (127) or errdefs.ErrNotExecutable
// (126) when execve of spec.Path fails, and errdefs.ErrInvalid for a Spec no
// execve could run. Preconditions: Init was called at the start of main.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if !initialized.Load() {
		return nil, errNoInit
	}
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not starting %s: %w", spec.Path, err)
	}
	exe, err := helperExe()
	if err != nil {
		return nil, fmt.Errorf("unable to find the running binary to start %s: %w", spec.Path, err)
	}

	p := &Process{
		memoryLimit: spec.MemoryLimit,
		timeout:     spec.Timeout,
		grace:       spec.grace(),
		exited:      make(chan struct{}),
		done:        make(chan struct{}),
	}
	files, closeOurs, err := p.openStdio(spec)
	if err != nil {
		return nil, err
	}
	defer closeOurs()
	abandonCaptures := func() { p.stdout.abandon(); p.stderr.abandon() }

	if p.wd, err = spawnWatchdog(); err != nil {
		abandonCaptures()
		return nil, err
	}
	conn, gateEnd, err := socketPair()
	if err != nil {
		p.wd.abandon()
		abandonCaptures()
		return nil, err
	}
	defer conn.Close()
	gateFd := len(files)
	proc, err := p.startGate(exe, &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   append([]string{roleEnv + "=" + roleGate + strconv.Itoa(gateFd)}, helperEnv...),
		Files: append(files, gateEnd),
		Sys:   targetSysProcAttr(),
	})
	gateEnd.Close()
	if err != nil {
		p.wd.abandon()
		abandonCaptures()
		return nil, fmt.Errorf("unable to start %s: %w", spec.Path, err)
	}
	p.pid, p.proc = proc.Pid, proc

	// The gate now waits in the target's group; on any failure below it is
	// killed before it can become the target.
	var backstop time.Duration
	if spec.Timeout > 0 {
		backstop = spec.Timeout + p.grace + backstopSlack
	}
	if err := p.wd.arm(p.pid, backstop); err != nil {
		return nil, p.abort(err)
	}
	p.started = time.Now()
	if err := releaseGate(conn, spec); err != nil {
		return nil, p.abort(err)
	}
	go p.stdout.copy()
	go p.stderr.copy()
	track(p)
	go p.supervise(ctx)
	return p, nil
}

// openStdio prepares the files the gate inherits as descriptors 0, 1, 2,
// 3...: stdin (/dev/null by default), the write ends of the two capture
// pipes, and spec.ExtraFiles. closeOurs closes warden's copies; call it once
// the gate has started, so that EOF on a pipe means no process of the target
// holds it any more.
func (p *Process) openStdio(spec Spec) (files []*os.File, closeOurs func(), err error) {
	var ours []*os.File
	closeOurs = func() {
		for _, f := range ours {
			f.Close()
		}
	}
	stdin := spec.Stdin
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return nil, nil, fmt.Errorf("unable to open %s for %s: %w", os.DevNull, spec.Path, err)
		}
		ours = append(ours, stdin)
	}
	var stdoutW, stderrW *os.File
	p.stdout, stdoutW, err = newCapture("stdout", spec.StdoutPath, spec.StdoutEcho, spec.outputLimit())
	if err != nil {
		closeOurs()
		return nil, nil, err
	}
	ours = append(ours, stdoutW)
	p.stderr, stderrW, err = newCapture("stderr", spec.StderrPath, spec.StderrEcho, spec.outputLimit())
	if err != nil {
		p.stdout.abandon()
		closeOurs()
		return nil, nil, err
	}
	ours = append(ours, stderrW)
	return append([]*os.File{stdin, stdoutW, stderrW}, spec.ExtraFiles...), closeOurs, nil
}

// Run starts the target and waits for its end; see Start and Wait.
func Run(ctx context.Context, spec Spec) (Result, error) {
	p, err := Start(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	return p.Wait()
}

// startGate forks the gate from a goroutine locked to its OS thread, which
// then waits for the child's exit without reaping it. Pdeathsig fires when the
// forking thread ends, not the process (golang/go#27505), so the thread must
// live as long as the child; once it returns, the goroutine ends still
// locked and Go discards the thread.
func (p *Process) startGate(exe string, attr *os.ProcAttr) (*os.Process, error) {
	type started struct {
		proc *os.Process
		err  error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		proc, err := os.StartProcess(exe, []string{helperArgv0}, attr)
		ch <- started{proc, err}
		if err != nil {
			return
		}
		if err := waitExited(proc.Pid); err != nil {
			// No way to wait without reaping (out of descriptors for a
			// kqueue, say): reap now. The group id is then no longer
			// reserved during settle; everything else holds.
			p.reaped, p.reapErr = proc.Wait()
		}
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	s := <-ch
	return s.proc, s.err
}

// releaseGate sends the exec message and reads the gate's verdict (see
// runGate).
func releaseGate(conn *net.UnixConn, spec Spec) error {
	structural := func(err error) error {
		return errdefs.Errorf(errdefs.ErrTimeout, "unable to hand %s to its gate: %w", spec.Path, err)
	}
	if err := conn.SetDeadline(time.Now().Add(armTimeout)); err != nil {
		return structural(err)
	}
	if _, err := conn.Write(encodeExec(spec.Path, spec.argv(), spec.Env)); err != nil {
		return structural(err)
	}
	if err := conn.CloseWrite(); err != nil {
		return structural(err)
	}
	reply, err := io.ReadAll(conn)
	switch {
	case err != nil:
		return structural(err)
	case len(reply) == 0 || reply[0] != 'x':
		return structural(errors.New("the gate ended before exec"))
	case len(reply) == 1:
		return nil // EOF right after "x": the close-on-exec socket closed in a successful exec
	}
	errno, err := strconv.Atoi(string(reply[1:]))
	if err != nil {
		return structural(fmt.Errorf("malformed gate reply %q", reply))
	}
	return execError(spec.Path, syscall.Errno(errno))
}

// abort kills a gate that must not become (or stay) the target, reaps it,
// retires the watchdog and returns err.
func (p *Process) abort(err error) error {
	_ = KillGroup(p.pid)
	<-p.exited
	if p.reaped == nil && p.reapErr == nil {
		_, _ = p.proc.Wait()
	}
	p.wd.abandon()
	p.stdout.abandon()
	p.stderr.abandon()
	return err
}

// supervise waits for the target's exit, stopping it on timeout or when ctx
// ends, then settles the result.
func (p *Process) supervise(ctx context.Context) {
	var timeout <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeout = t.C
	}
	ctxDone := ctx.Done()
	var sample <-chan time.Time
	if p.memoryLimit > 0 {
		t := time.NewTicker(LimitInterval)
		defer t.Stop()
		sample = t.C
	}
wait:
	for {
		select {
		case <-p.exited:
			break wait
		case <-sample:
			if used := treeResident(p.pid); used > p.memoryLimit {
				sample = nil
				p.exceed(fmt.Sprintf("memory limit: %s resident > %s", byteSize(used), byteSize(p.memoryLimit)))
			}
		case <-timeout:
			timeout = nil
			p.terminate(byTimeout, unix.SIGTERM)
		case <-ctxDone:
			ctxDone = nil
			p.terminate(byRequest, causeSignal(ctx))
		}
	}
	p.res, p.err = p.settle()
	untrack(p)
	close(p.done)
}

// settle runs once the target has exited: it kills what is left of the
// group, drains the output, releases the watchdog, reaps the target and
// builds the Result.
func (p *Process) settle() (Result, error) {
	p.mu.Lock()
	p.ended = true
	if p.killer != nil {
		p.killer.Stop()
	}
	asked := p.asked
	p.mu.Unlock()

	// The target is an unreaped zombie: its pid, the group id, stays reserved
	// until it is reaped below, so this kill reaches only the target's group.
	var errs []error
	if err := KillGroup(p.pid); err != nil {
		errs = append(errs, err)
	}
	var drains sync.WaitGroup
	drains.Go(p.stdout.drain)
	drains.Go(p.stderr.drain)
	drains.Wait()
	if err := p.wd.Release(); err != nil {
		errs = append(errs, err)
	}
	state, err := p.reaped, p.reapErr
	if state == nil && err == nil {
		state, err = p.proc.Wait()
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("unable to reap target %d: %w", p.pid, err))
	}
	if !killUntilGone(p.pid, killBound) {
		errs = append(errs, fmt.Errorf("process group %d still has live processes %s after SIGKILL", p.pid, killBound))
	}
	for _, c := range []*capture{p.stdout, p.stderr} {
		if err := c.finish(); err != nil {
			errs = append(errs, err)
		}
	}

	r := Result{
		Pid:             p.pid,
		ExitCode:        -1,
		Duration:        p.exitedAt.Sub(p.started),
		TimedOut:        asked == byTimeout,
		Stopped:         asked == byRequest,
		LimitExceeded:   p.limitText(asked),
		StdoutBytes:     p.stdout.total,
		StderrBytes:     p.stderr.total,
		StdoutTruncated: p.stdout.truncated(),
		StderrTruncated: p.stderr.truncated(),
	}
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal()
		} else {
			r.ExitCode = state.ExitCode()
		}
	}
	// The watchdog's backstop killed a target that outran its timeout while
	// warden could not act (suspended): the timer and the exit raced, and the
	// exit won.
	if asked == notAsked && r.Signal == unix.SIGKILL && p.timeout > 0 && r.Duration >= p.timeout {
		r.TimedOut = true
	}
	return r, errors.Join(errs...)
}

// Stop asks the target to end: it sends sig to the target's whole process
// group, then SIGCONT so that a suspended target can act on it, and SIGKILL
// to the group once the grace period has passed unless the target has ended.
// Forward the signal warden received (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
// Stop returns at once; Wait reports the end with Stopped set. A later Stop
// forwards its signal too but keeps the first grace period. Stop after the
// target has exited does nothing.
func (p *Process) Stop(sig syscall.Signal) { p.terminate(byRequest, sig) }

// terminate signals the group and arms the SIGKILL timer on the first call.
func (p *Process) terminate(why reason, sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if p.asked == notAsked {
		p.asked = why
		p.killer = time.AfterFunc(p.grace, p.kill)
	}
	_ = signalGroup(p.pid, sig)
	_ = signalGroup(p.pid, unix.SIGCONT)
}

// exceed ends the target for the limit it exceeded.
func (p *Process) exceed(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.asked != notAsked {
		return
	}
	p.asked, p.limit = byLimit, what
	// The processes below the target die at once; the target itself is
	// asked to end like on a timeout, so an observer at the top of the tree
	// (strace) sees its tracees end and finishes its record.
	killDescendants(p.pid)
	p.killer = time.AfterFunc(p.grace, p.kill)
	_ = signalGroup(p.pid, unix.SIGTERM)
	_ = signalGroup(p.pid, unix.SIGCONT)
}

func (p *Process) limitText(asked reason) string {
	if asked != byLimit {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limit
}

func (p *Process) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		_ = KillGroup(p.pid)
	}
}

// Pid returns the target's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Wait blocks until the target has exited, its group is gone, its output is
// drained and its watchdog released, and returns how it ended. The error
// reports a failure of supervision itself (a capture file that could not be
// written, a group that would not die), not the target's exit status; the
// Result is filled in either way. Wait may be called any number of times.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Done is closed when Wait would return without blocking.
func (p *Process) Done() <-chan struct{} { return p.done }
