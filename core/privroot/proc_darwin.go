package privroot

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a zombie process (<sys/proc.h>).
const szomb = 5

// processStart returns the start time of pid as the kernel reports it
// (kinfo_proc's p_starttime, seconds and microseconds) and whether the
// process is a zombie. It returns errNoProcess when pid names no process.
func processStart(pid int) (start string, zombie bool, err error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	// For a pid with no process the sysctl succeeds with no data, which
	// SysctlKinfoProc reports as EIO.
	if errors.Is(err, unix.EIO) || errors.Is(err, unix.ESRCH) {
		return "", false, errNoProcess
	}
	if err != nil {
		return "", false, err
	}
	if int(kp.Proc.P_pid) != pid {
		return "", false, errNoProcess
	}
	t := kp.Proc.P_starttime
	return fmt.Sprintf("%d.%06d", t.Sec, t.Usec), kp.Proc.P_stat == szomb, nil
}

// chmodDirNoFollow sets mode on the directory name beneath dirfd without
// following a link; macOS's fchmodat honours AT_SYMLINK_NOFOLLOW.
func chmodDirNoFollow(dirfd int, name string, mode uint32) error {
	return unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
}
