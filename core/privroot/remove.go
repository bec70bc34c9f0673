package privroot

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep removeAt descends; each level holds one
// descriptor open.
const maxDepth = 512

// removeAt removes the entry name beneath the directory dirfd and, when it is
// a directory, everything beneath it. It never follows a link: a link is
// removed as an entry, and every directory is opened O_NOFOLLOW from the
// descriptor of its parent, so a link swapped in mid-walk cannot lead the
// walk out of the tree. A directory without write or search permission for
// its owner (a target may leave one) is given them first, and the walk does
// not cross into another file system. An entry already gone counts as
// removed, so two runs reclaiming the same tree do not fail each other.
func removeAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return err
	}
	return removeTree(dirfd, uint64(st.Dev), name, name, 0)
}

// removeTree is removeAt for the entry name beneath dirfd, a directory on
// device dev; rel names the entry in errors.
func removeTree(dirfd int, dev uint64, name, rel string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	// unlink of a directory fails with EISDIR on Linux and EPERM on macOS.
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("unable to remove %s: %w", rel, err)
	}
	if depth >= maxDepth {
		return fmt.Errorf("unable to remove %s: more than %d directories deep", rel, maxDepth)
	}

	fd, err := openDir(dirfd, name)
	if errors.Is(err, unix.EACCES) {
		if cerr := chmodDirNoFollow(dirfd, name, 0o700); cerr != nil {
			return fmt.Errorf("unable to make %s readable to remove it: %w", rel, cerr)
		}
		fd, err = openDir(dirfd, name)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		// Not a directory after all (or replaced by a non-directory since
		// the unlink): remove it as an entry.
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unable to remove %s: %w", rel, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("unable to open %s to remove it: %w", rel, err)
	}
	defer unix.Close(fd)

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("unable to inspect %s: %w", rel, err)
	}
	if uint64(st.Dev) != dev {
		return fmt.Errorf("unable to remove %s: it is a mount point of another file system", rel)
	}
	if st.Mode&0o700 != 0o700 {
		if err := unix.Fchmod(fd, uint32(st.Mode&0o7777)|0o700); err != nil {
			return fmt.Errorf("unable to make %s writable to remove it: %w", rel, err)
		}
	}
	// A second round catches entries made while the first was removing.
	for range 3 {
		names, err := readNames(fd)
		if err != nil {
			return fmt.Errorf("unable to list %s: %w", rel, err)
		}
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			if err := removeTree(fd, dev, n, path.Join(rel, n), depth+1); err != nil {
				return err
			}
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unable to remove %s: %w", rel, err)
	}
	return nil
}

// openDir opens the directory name beneath dirfd without following a link.
func openDir(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}
