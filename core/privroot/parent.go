package privroot

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// SocketsDir is the name Dir is given for the directory of plugin sockets.
// It is short on purpose: a Unix socket path must fit 104 bytes on macOS, and
// /tmp/warden-p<uid>/run-<12 hex>/s/ leaves more than 50 of them for the
// socket's own name.
const SocketsDir = "s"

// Parent is a run's private parent (or a probe directory) beneath the
// private root. It holds the parent's directory open: every call directory
// and private directory is made through that descriptor, so it lands in the
// directory NewParent made even if a path above it is swapped.
//
// A Parent is safe for concurrent use.
type Parent struct {
	path string
	name string
	dev  uint64
	ino  uint64

	mu      sync.Mutex // guards fd, rootFd and removed
	fd      int        // the parent directory
	rootFd  int        // the private root
	removed bool
}

// Path returns the parent's path.
func (p *Parent) Path() string { return p.path }

// kindPattern is what a call directory kind may be.
var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// CallDir makes a call directory, warden-<kind>-<random> with mode 0700,
// beneath the parent and returns its path. Kind says what the directory is
// for: "target-tmp" is a trial's temp directory (the one TMPDIR, TMP and TEMP
// name), "port" a started service's port directory, "nb" a bridge's
// directory. A kind that is not lower-case words joined by '-' wraps
// errdefs.ErrInvalid.
func (p *Parent) CallDir(kind string) (string, error) {
	if !kindPattern.MatchString(kind) {
		return "", errdefs.Errorf(errdefs.ErrInvalid, "call directory kind %q is not lower-case words joined by '-'", kind)
	}
	return p.mkdir("warden-" + kind + "-" + randomHex(8))
}

// Dir returns the private directory name beneath the parent (the plugin
// sockets directory, SocketsDir; a staging directory; the trace files'
// directory), making it with mode 0700 when it is missing. An existing entry
// is used only when it is a directory, not a link, owned by the effective
// uid with mode 0700. Name must be a single path element other than the
// ownership record's; otherwise the error wraps errdefs.ErrInvalid.
func (p *Parent) Dir(name string) (string, error) {
	if name == "" || name == "." || name == ".." || name != filepath.Base(name) || name == recordName {
		return "", errdefs.Errorf(errdefs.ErrInvalid, "private directory name %q is not a single path element", name)
	}
	path, err := p.mkdir(name)
	if err == nil || !errors.Is(err, unix.EEXIST) {
		return path, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return "", fmt.Errorf("private parent %s was removed", p.path)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(p.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to inspect private directory %s: %v", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != unix.Geteuid() || st.Mode&0o7777 != 0o700 {
		return "", errdefs.Errorf(errdefs.ErrHostUnsupported, "private directory %s exists but is not a directory of mode 0700 owned by uid %d", path, unix.Geteuid())
	}
	return path, nil
}

// mkdir makes name beneath the parent with mode 0700. The returned error
// wraps unix.EEXIST when the name is taken.
func (p *Parent) mkdir(name string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := filepath.Join(p.path, name)
	if p.removed {
		return "", fmt.Errorf("private parent %s was removed", p.path)
	}
	fd, _, err := mkdirHeld(p.fd, name, 0o700)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return path, fmt.Errorf("private directory %s: %w", path, err)
		}
		return "", errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to make private directory %s: %v", path, err)
	}
	unix.Close(fd)
	return path, nil
}

// RemoveDir removes a directory CallDir or Dir made, with everything in it,
// never following a link. Path must name a direct child of the parent
// (otherwise the error wraps errdefs.ErrInvalid); one already gone counts as
// removed.
func (p *Parent) RemoveDir(path string) error {
	name := filepath.Base(path)
	if filepath.Dir(path) != p.path || name == recordName {
		return errdefs.Errorf(errdefs.ErrInvalid, "%s is not a private directory of %s", path, p.path)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return nil
	}
	if err := removeAt(p.fd, name); err != nil {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to remove private directory beneath %s: %v", p.path, err)
	}
	return nil
}

// Remove removes the parent with everything in it, never following a link
// out of the tree, and releases it. It removes the parent only while the
// entry at its name beneath the root is still the directory NewParent made.
// Calling it again does nothing. A failure wraps errdefs.ErrHostUnsupported
// and names what could not be removed; the next run's Reclaim removes what is
// left once this process is gone.
func (p *Parent) Remove() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return nil
	}
	p.removed = true
	defer unix.Close(p.rootFd)
	defer unix.Close(p.fd)

	var st unix.Stat_t
	err := unix.Fstatat(p.rootFd, p.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to inspect private parent %s: %v", p.path, err)
	}
	if uint64(st.Dev) != p.dev || st.Ino != p.ino {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "private parent %s was replaced; not removing what is there now", p.path)
	}
	if err := removeAt(p.rootFd, p.name); err != nil {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to remove private parent %s: %v", p.path, err)
	}
	return nil
}
