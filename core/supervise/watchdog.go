package supervise

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// armTimeout bounds the watchdog's setup, and releaseTimeout the goodbye
// (spec 001 allows 10 s for watchdog setup).
const (
	armTimeout     = 10 * time.Second
	releaseTimeout = 2 * time.Second
	killBound      = 2 * time.Second
)

// A Watchdog is a detached helper process that owns one process group on
// behalf of this process (warden). It is a re-exec of the running binary
// (see Init) in a session of its own, so neither a terminal's signals nor the
// death of warden's process group reach it, and it holds the only peer of a
// socket whose other end only warden holds.
//
// Guarantee: if warden ends for any reason, SIGKILL included, before it calls
// Release, the socket closes and the watchdog sends SIGKILL (then SIGCONT) to
// the group until no process of it is left, even while the group is stopped,
// and exits. After Release it exits without touching the group. Either way it
// does not outlive its job. It ignores SIGHUP, SIGINT, SIGQUIT, SIGTERM and
// the job-control signals; only SIGKILL ends it early.
type Watchdog struct {
	proc *os.Process
	conn *net.UnixConn
	pgid int // 0 until armed

	once sync.Once // guards ending: Release or abandon, whichever comes first
	err  error
}

// Watch starts a watchdog for process group pgid and returns once it has
// armed. Use it for a group started elsewhere (the plugin host); Start arms
// one for every target by itself. The group runs unwatched between its start
// and Watch's return; on Linux a Pdeathsig on its leader covers the leader in
// that window. Call Release when the group is done.
func Watch(pgid int) (*Watchdog, error) {
	if pgid <= 1 {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "refusing to watch process group %d", pgid)
	}
	w, err := spawnWatchdog()
	if err != nil {
		return nil, err
	}
	if err := w.arm(pgid, 0); err != nil {
		w.abandon()
		return nil, err
	}
	return w, nil
}

// spawnWatchdog starts an unarmed watchdog. Preconditions: Init has run.
func spawnWatchdog() (*Watchdog, error) {
	if !initialized.Load() {
		return nil, errNoInit
	}
	exe, err := helperExe()
	if err != nil {
		return nil, fmt.Errorf("unable to find the running binary for the watchdog: %w", err)
	}
	conn, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("unable to open %s for the watchdog: %w", os.DevNull, err)
	}
	defer devNull.Close()
	proc, err := os.StartProcess(exe, []string{helperArgv0}, &os.ProcAttr{
		Dir:   "/",
		Env:   append([]string{roleEnv + "=" + watchdogRole}, helperEnv...),
		Files: []*os.File{devNull, devNull, devNull, theirs},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		conn.Close()
		return nil, errdefs.Errorf(errdefs.ErrTimeout, "unable to start the watchdog: %w", err)
	}
	return &Watchdog{proc: proc, conn: conn}, nil
}

// arm hands pgid to the watchdog and waits for its acknowledgement. A
// positive backstop makes the watchdog kill the group that long after arming
// even while warden lives (warden suspended with Ctrl-Z past the target's
// timeout, say).
func (w *Watchdog) arm(pgid int, backstop time.Duration) error {
	fail := func(err error) error {
		return errdefs.Errorf(errdefs.ErrTimeout, "unable to arm the watchdog for process group %d: %w", pgid, err)
	}
	if err := w.conn.SetDeadline(time.Now().Add(armTimeout)); err != nil {
		return fail(err)
	}
	if _, err := fmt.Fprintf(w.conn, "watch %d %d\n", pgid, backstop.Milliseconds()); err != nil {
		return fail(err)
	}
	ack, err := bufio.NewReader(w.conn).ReadString('\n')
	if err != nil {
		return fail(fmt.Errorf("no acknowledgement (%w); is supervise.Init called at the start of main?", err))
	}
	if ack != fmt.Sprintf("armed %d\n", pgid) {
		return fail(fmt.Errorf("unexpected acknowledgement %q", ack))
	}
	w.pgid = pgid
	return w.conn.SetDeadline(time.Time{})
}

// Release tells the watchdog the group is finished with, so it exits without
// touching it, and reaps it. Call it only after the group has been killed or
// has ended: from then on nothing guards it. Release is idempotent.
func (w *Watchdog) Release() error {
	w.once.Do(func() {
		_ = w.conn.SetDeadline(time.Now().Add(releaseTimeout))
		_, err := w.conn.Write([]byte("release\n"))
		w.conn.Close()
		state, werr := reapWithin(w.proc, releaseTimeout)
		switch {
		case err != nil:
			w.err = fmt.Errorf("unable to release the watchdog of process group %d: %w", w.pgid, err)
		case werr != nil:
			w.err = fmt.Errorf("unable to reap the watchdog of process group %d: %w", w.pgid, werr)
		case !state.Success():
			w.err = fmt.Errorf("watchdog of process group %d ended with %s", w.pgid, state)
		}
	})
	return w.err
}

// abandon closes warden's end without releasing, exactly as warden's death
// would: an armed watchdog kills its group and exits. It then reaps the
// watchdog.
func (w *Watchdog) abandon() {
	w.once.Do(func() {
		w.conn.Close()
		_, _ = reapWithin(w.proc, killBound+releaseTimeout)
	})
}

// reapWithin waits for a helper to exit; one that has not within bound
// (someone stopped it, say) is killed, so that warden never waits on it
// without end.
func reapWithin(proc *os.Process, bound time.Duration) (*os.ProcessState, error) {
	type waited struct {
		state *os.ProcessState
		err   error
	}
	ch := make(chan waited, 1)
	go func() {
		state, err := proc.Wait()
		ch <- waited{state, err}
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case w := <-ch:
		return w.state, w.err
	case <-timer.C:
		_ = proc.Kill()
		w := <-ch
		return w.state, w.err
	}
}

// runWatchdog is the watchdog's main. sock is its end of the socket pair.
func runWatchdog(sock *os.File) int {
	signal.Ignore(unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGPIPE,
		unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	r := bufio.NewReader(sock)
	line, err := r.ReadString('\n')
	if err != nil {
		return 0 // warden went away before arming: nothing to guard
	}
	var pgid int
	var backstopMs int64
	if _, err := fmt.Sscanf(line, "watch %d %d\n", &pgid, &backstopMs); err != nil || pgid <= 1 {
		return 2
	}
	if _, err := fmt.Fprintf(sock, "armed %d\n", pgid); err != nil {
		killUntilGone(pgid, killBound) // warden died while we armed
		return 0
	}

	lines := make(chan string)
	go func() {
		defer close(lines)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	var backstop <-chan time.Time
	if backstopMs > 0 {
		backstop = time.After(time.Duration(backstopMs) * time.Millisecond)
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				killUntilGone(pgid, killBound)
				return 0
			}
			if l == "release\n" {
				return 0
			}
		case <-backstop:
			backstop = nil
			killUntilGone(pgid, killBound)
		}
	}
}
