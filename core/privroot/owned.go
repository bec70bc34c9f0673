package privroot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// A run owns a few directories outside its parent (the workspace lives in
// the system's temp directory, not beneath the private root, so that the
// sandbox can bind it at its own path). The parent lists them in ownedName,
// so that a later run which reclaims the parent of a killed run removes them
// too, and a killed run leaves nothing in /tmp.
const (
	ownedName = "owned"
	// OwnedPrefix is the base-name prefix every owned directory must have;
	// Reclaim removes nothing else, whatever the list says.
	OwnedPrefix = "warden-ws-"
	ownedLimit  = 64 << 10
)

// Own records dir, a directory the run made outside its parent, so that
// Reclaim removes it if the run dies. Its base name must start with
// OwnedPrefix.
func (p *Parent) Own(dir string) error {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), OwnedPrefix) || strings.ContainsAny(dir, "\n") {
		return errdefs.Errorf(errdefs.ErrInvalid, "unable to own %q: an owned directory is absolute and named %s…", dir, OwnedPrefix)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return fmt.Errorf("private parent %s is removed", p.path)
	}
	fd, err := unix.Openat(p.fd, ownedName, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("unable to record owned directory %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), ownedName)
	_, werr := f.WriteString(dir + "\n")
	return errors.Join(werr, f.Close())
}

// removeOwned removes the owned directories listed in the dead parent
// dirfd and returns those it removed. An entry that is not an absolute path
// named OwnedPrefix…, not a directory, a link, or not the uid's is left
// alone.
func removeOwned(dirfd, uid int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ownedName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ownedName)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("the owned list is not a regular file")
	}
	var removed []string
	var errs []error
	sc := bufio.NewScanner(io.LimitReader(f, ownedLimit))
	for sc.Scan() {
		dir := sc.Text()
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(filepath.Base(dir), OwnedPrefix) {
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if s, ok := fi.Sys().(*syscall.Stat_t); !ok || int(s.Uid) != uid {
			continue
		}
		if err := RemoveTree(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// RemoveTree removes a tree a target may have left read-only (it makes
// directories writable as it goes), never following a link.
func RemoveTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
