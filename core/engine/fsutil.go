package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/privroot"
)

// restoreTree copies the withheld folder src into ws/rel after the target
// has ended. The target had the workspace to itself, so nothing in it is
// trusted: whatever stands at ws/rel is removed without following links,
// every parent directory of ws/rel must be a real directory (a link there is
// refused rather than followed out of the workspace), and files are created
// new, without following links.
func restoreTree(src, ws, rel string) error {
	dst := ws
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, p := range parts[:len(parts)-1] {
		dst = filepath.Join(dst, p)
		fi, err := os.Lstat(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return errdefs.Errorf(errdefs.ErrIntegrity, "unable to restore the evaluation folder: %s in the workspace is not a directory (%s)", dst, fi.Mode().Type())
		}
	}
	dst = filepath.Join(dst, parts[len(parts)-1])
	if err := privroot.RemoveTree(dst); err != nil {
		return fmt.Errorf("unable to clear %s for the evaluation folder: %w", dst, err)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(t, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, t)
		case d.Type().IsRegular():
			return copyFileNoFollow(p, t, info.Mode().Perm())
		}
		return nil
	})
}

func copyFileNoFollow(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	if err != nil {
		return &fs.PathError{Op: "create", Path: dst, Err: err}
	}
	out := os.NewFile(uintptr(fd), dst)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// lookPath finds the evaluator: a bare name on PATH, a path relative to the
// workspace, or an absolute path.
func lookPath(name, ws string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(ws, name)
		}
		return name, nil
	}
	return exec.LookPath(name)
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
