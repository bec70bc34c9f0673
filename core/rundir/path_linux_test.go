package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// TestCheckFdPath checks the Linux-only half of the directory check on its
// own: the kernel's path of a held directory moved away no longer matches,
// even though the chain check would be the one to notice first in a Writer.
func TestCheckFdPath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	dir := filepath.Join(base, "held")
	must(t, os.Mkdir(dir, 0o755))
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	must(t, checkFdPath(fd, dir))

	moved := filepath.Join(base, "moved")
	must(t, os.Rename(dir, moved))
	must(t, os.Symlink(moved, dir))
	err = checkFdPath(fd, dir)
	if !errors.Is(err, errdefs.ErrIntegrity) {
		t.Errorf("checkFdPath of a moved directory = %v, want ErrIntegrity", err)
	}

	must(t, os.Remove(dir))
	must(t, os.Rename(moved, dir))
	must(t, checkFdPath(fd, dir))
	must(t, os.Remove(dir))
	if err := checkFdPath(fd, dir); !errors.Is(err, errdefs.ErrIntegrity) {
		t.Errorf("checkFdPath of a removed directory = %v, want ErrIntegrity", err)
	}
}
