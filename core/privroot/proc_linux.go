package privroot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// processStart returns the start time of pid as the kernel reports it (field
// 22 of /proc/<pid>/stat, clock ticks since boot) and whether the process is
// a zombie. It returns errNoProcess when pid names no process.
func processStart(pid int) (start string, zombie bool, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return "", false, errNoProcess
	}
	if err != nil {
		return "", false, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself; the fields after the last ')' start at field 3.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return "", false, fmt.Errorf("unexpected /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	const state, startTime = 3, 22
	if len(fields) <= startTime-state {
		return "", false, fmt.Errorf("unexpected /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return fields[startTime-state], fields[0] == "Z", nil
}

// chmodDirNoFollow sets mode on the directory name beneath dirfd without
// following a link. Linux's fchmodat ignores AT_SYMLINK_NOFOLLOW before
// fchmodat2 (Linux 6.6), and fchmod refuses an O_PATH descriptor, so the
// directory is opened O_PATH|O_NOFOLLOW (which needs no read permission) and
// changed through its /proc/self/fd link, which names that inode itself.
func chmodDirNoFollow(dirfd int, name string, mode uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}
