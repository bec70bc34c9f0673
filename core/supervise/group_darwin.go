package supervise

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// GroupAlive reports whether a process is in process group pgid, by
// kill(-pgid, 0). On darwin an exited but unreaped member still counts.
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := unix.Kill(-pgid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// targetSysProcAttr puts the target in a process group of its own. darwin has
// no parent-death signal: if warden dies, the watchdog alone ends the group.
func targetSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited blocks until child pid has exited without reaping it, using a
// kqueue NOTE_EXIT event, so that its pid (and process group id) stays
// reserved until Wait reaps it. A process that is already gone (ESRCH) counts
// as exited.
func waitExited(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return err
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	for {
		_, err := unix.Kevent(kq, []unix.Kevent_t{change}, events, nil)
		switch {
		case err == nil, errors.Is(err, unix.ESRCH):
			return nil
		case !errors.Is(err, unix.EINTR):
			return err
		}
	}
}

// selfExe names the running binary for re-exec.
func selfExe() (string, error) { return os.Executable() }
