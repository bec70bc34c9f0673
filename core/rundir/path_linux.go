package rundir

import (
	"os"
	"strconv"

	"github.com/warden-run/warden/core/errdefs"
)

// checkFdPath confirms the kernel's path of the directory descriptor fd is
// want, with every link resolved. A directory moved elsewhere (or removed,
// which the kernel reports as "<path> (deleted)") fails, even when a link or
// another directory now stands at want.
func checkFdPath(fd int, want string) error {
	got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to confirm the path of directory %s through /proc: %v", want, err)
	}
	if got != want {
		return errdefs.Errorf(errdefs.ErrIntegrity, "directory %s that warden made is now at %s", want, got)
	}
	return nil
}
