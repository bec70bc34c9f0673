package privroot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// record is the ownership record of a parent or probe directory. A pid alone
// does not identify a process, since pids are reused; the pid together with
// the process's start time does.
type record struct {
	Pid   int    `json:"pid"`
	Start string `json:"start"` // processStart's text for Pid
}

// writeRecord creates the record file in the directory dirfd, exclusively and
// without following a link, and writes rec to it.
func writeRecord(dirfd int, rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, recordName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), recordName)
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRecord reads the record in the directory dirfd. The file must be a
// regular file (it is opened without following a link and without blocking,
// so a FIFO cannot stall Reclaim) and hold a positive pid and a start time.
func readRecord(dirfd int) (record, error) {
	fd, err := unix.Openat(dirfd, recordName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return record{}, err
	}
	f := os.NewFile(uintptr(fd), recordName)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return record{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return record{}, errors.New("ownership record is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, recordLimit))
	if err != nil {
		return record{}, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return record{}, fmt.Errorf("ownership record: %w", err)
	}
	if rec.Pid <= 0 || rec.Start == "" {
		return record{}, errors.New("ownership record names no process")
	}
	return rec, nil
}

// running reports whether the process rec names still runs: the pid exists,
// is not a zombie, and has the recorded start time. When the start time
// cannot be read for a reason other than the process being gone, the process
// counts as running, so an unreadable host state never removes a live run's
// parent.
func running(rec record) bool {
	if !pidExists(rec.Pid) {
		return false
	}
	start, zombie, err := processStart(rec.Pid)
	if errors.Is(err, errNoProcess) {
		return false
	}
	if err != nil {
		return true
	}
	return !zombie && start == rec.Start
}

// pidExists reports whether a process with pid exists (of any user).
func pidExists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// errNoProcess is returned by processStart when pid names no process.
var errNoProcess = errors.New("no such process")
