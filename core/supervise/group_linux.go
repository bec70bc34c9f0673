package supervise

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// GroupAlive reports whether a live process is in process group pgid. On
// Linux it reads /proc/<pid>/stat of every process, so a zombie (exited, not
// yet reaped) does not count; when /proc cannot be read it falls back to
// kill(-pgid, 0), which counts zombies.
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	// No member at all, zombies included: no need to read /proc. This is
	// the common answer once a target has ended, so it must be cheap.
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return killProbe(pgid)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // the process ended while we looked
		}
		state, pgrp, ok := parseStat(stat)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat returns the state and process group of a /proc/<pid>/stat line:
// "pid (comm) state ppid pgrp ...". comm may hold spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}

func killProbe(pgid int) bool {
	err := unix.Kill(-pgid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// targetSysProcAttr puts the target in a process group of its own and asks
// the kernel to SIGKILL it when the thread that forked it ends. Pdeathsig
// survives the execve from the gate into the target (it is cleared only for
// set-user-ID, set-group-ID and file-capability programs), and it is tied to
// the forking thread, not the process (golang/go#27505): startGate keeps that
// thread locked for the child's lifetime.
func targetSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until child pid has exited without reaping it
// (waitid(WNOWAIT)): the zombie keeps the pid, and so the process group id,
// reserved until Wait reaps it, so a later kill(-pgid) cannot reach a new
// group that happens to get the same number.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// selfExe names the running binary for re-exec. /proc/self/exe still works
// when the file was replaced or deleted after start (an upgrade in place, a
// removed test binary).
func selfExe() (string, error) { return "/proc/self/exe", nil }
