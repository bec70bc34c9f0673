// Package privroot manages warden's private root and the private parent each
// run makes beneath it (DESIGN.md "Private root", spec 001 "Call directories"
// and "The bridge's admission token").
//
// Every run of a user makes its private parent beneath one private root,
// /tmp/warden-p<uid>, whatever TMPDIR says. Trace files, staging files,
// plugin sockets, call directories and ownership records live there, and
// every target is denied it. The package guarantees:
//
//   - The root is a directory owned by the effective uid with no group or
//     other permission bits, and not a link. Open creates it 0700 when it is
//     missing and refuses anything else with errdefs.ErrHostUnsupported
//     (exit 12), naming the path and the problem.
//   - A parent (run-<random>, 0700) holds its ownership record (the pid and
//     the start time of the process that made it) before anything else is
//     put in it, so a parent without a readable record is always either being
//     made or not warden's, and Reclaim leaves it alone.
//   - Reclaim removes only what it can prove belongs to a dead run of this
//     user: a real directory, owned by the uid, mode 0700, whose record names
//     a process that is gone or that has since been replaced by another
//     process with the same pid. A live run's parent, a link, a file and a
//     directory with another mode or owner are left as they are.
//   - Removal never follows a link: trees are walked through directory file
//     descriptors opened without following links, so a link a target left in
//     a call directory is removed, not what it points to. Read-only
//     directories a target made are made writable first.
//
// The root itself is never removed, since another run may be using it.
package privroot

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// DefaultBase is the directory the private root is made in. It is fixed, not
// the TMPDIR of the run: a run's TMPDIR may name a directory a target can
// reach, and every run of the user must find the same root to reclaim the
// parents of killed runs. Keeping it short also keeps plugin socket paths
// under the 104-byte limit of macOS.
const DefaultBase = "/tmp"

const (
	parentPrefix = "run-"
	probePrefix  = "observer-probe-"
	// recordName is the ownership record inside every parent and probe
	// directory.
	recordName = "owner"
	// recordLimit bounds how much of a record Reclaim reads.
	recordLimit = 4096
)

// Root is an open private root. It holds the root's directory open, so every
// parent is made and reclaimed beneath the directory Open checked even if the
// path is later swapped.
type Root struct {
	path string
	uid  int

	mu     sync.Mutex // guards fd and closed
	fd     int
	closed bool
}

// Open opens the private root /tmp/warden-p<uid> of the effective uid,
// creating it 0700 when it is missing. A root that is a link, is not a
// directory, is owned by another uid or has group or other permission bits is
// refused with an error wrapping errdefs.ErrHostUnsupported that names the
// path and the problem.
func Open() (*Root, error) {
	return OpenIn(DefaultBase)
}

// OpenIn is Open with the root made in base instead of DefaultBase. Only
// tests use it: production code calls Open so every run shares one root.
func OpenIn(base string) (*Root, error) {
	uid := os.Geteuid()
	path := filepath.Join(base, "warden-p"+strconv.Itoa(uid))

	err := unix.Mkdir(path, 0o700)
	switch {
	case err == nil:
		// The umask may have taken bits from 0700; the root must be usable.
		if err := chmodDirNoFollow(unix.AT_FDCWD, path, 0o700); err != nil {
			return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to set mode 0700 on private root %s: %v", path, err)
		}
	case errors.Is(err, unix.EEXIST):
	default:
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to create private root %s: %v", path, err)
	}

	// Lstat first for a precise message; the open below is what decides.
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to inspect private root %s: %v", path, err)
	}
	if err := checkRootStat(path, &st, uid); err != nil {
		return nil, err
	}

	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "private root %s was replaced while it was opened (%v); remove it and run again", path, err)
		}
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to open private root %s: %v", path, err)
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		unix.Close(fd)
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to inspect private root %s: %v", path, err)
	}
	if err := checkRootStat(path, &fst, uid); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Root{path: path, uid: uid, fd: fd}, nil
}

// checkRootStat says what is wrong with a root whose lstat or fstat is st.
func checkRootStat(path string, st *unix.Stat_t, uid int) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "private root %s is a link; it must be a directory you own with mode 0700 (remove it and run again)", path)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "private root %s is not a directory; it must be a directory you own with mode 0700 (remove it and run again)", path)
	case int(st.Uid) != uid:
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "private root %s is owned by uid %d, not by uid %d", path, st.Uid, uid)
	case st.Mode&0o077 != 0:
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "private root %s has mode %04o; it must give no access to group or others (chmod 700 %s)", path, st.Mode&0o7777, path)
	}
	return nil
}

// Path returns the root's path.
func (r *Root) Path() string { return r.path }

// Close releases the root's directory. Parents made from it stay usable.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return unix.Close(r.fd)
}

// NewParent makes this run's private parent, run-<random> with mode 0700,
// beneath the root and writes its ownership record (this process's pid and
// start time) before returning, so nothing is ever put in a parent without a
// record. The caller removes it with Remove when the run ends, on failure and
// on an interrupting signal.
func (r *Root) NewParent() (*Parent, error) {
	pid := os.Getpid()
	start, err := ownStart()
	if err != nil {
		return nil, err
	}
	return r.makeOwned(parentPrefix+randomHex(6), pid, start)
}

// NewProbe makes a probe directory, observer-probe-<pid>-<random> with mode
// 0700, beneath the root, with the same ownership record as a parent. The
// audit's preflight check works in it; Reclaim removes it once its process is
// gone. The caller removes it with Remove when the probe ends.
func (r *Root) NewProbe() (*Parent, error) {
	pid := os.Getpid()
	start, err := ownStart()
	if err != nil {
		return nil, err
	}
	return r.makeOwned(probePrefix+strconv.Itoa(pid)+"-"+randomHex(6), pid, start)
}

func ownStart() (string, error) {
	start, _, err := processStart(os.Getpid())
	if err != nil {
		return "", errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to read this process's start time for the ownership record: %v", err)
	}
	return start, nil
}

// makeOwned makes the directory name beneath the root and writes its record.
func (r *Root) makeOwned(name string, pid int, start string) (*Parent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("private root %s is closed", r.path)
	}
	path := filepath.Join(r.path, name)
	fd, st, err := mkdirHeld(r.fd, name, 0o700)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to make private directory %s: %v", path, err)
	}
	p := &Parent{path: path, name: name, rootFd: -1, fd: fd, dev: uint64(st.Dev), ino: st.Ino}
	if err := writeRecord(fd, record{Pid: pid, Start: start}); err != nil {
		err = errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to write the ownership record of %s: %v", path, err)
		unix.Close(fd)
		if rerr := removeAt(r.fd, name); rerr != nil {
			err = errors.Join(err, fmt.Errorf("unable to remove %s: %w", path, rerr))
		}
		return nil, err
	}
	// The parent keeps its own handle on the root so Remove works after the
	// root is closed.
	rootFd, err := unix.Dup(r.fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unable to hold private root %s: %w", r.path, err)
	}
	unix.CloseOnExec(rootFd)
	p.rootFd = rootFd
	return p, nil
}

// mkdirHeld makes name beneath dirfd with mode, opens it without following a
// link and checks it is a directory the effective uid owns. The mode is set
// explicitly (before the open, which needs it) so the umask cannot change it.
func mkdirHeld(dirfd int, name string, mode uint32) (int, *unix.Stat_t, error) {
	if err := unix.Mkdirat(dirfd, name, mode); err != nil {
		return -1, nil, err
	}
	if err := chmodDirNoFollow(dirfd, name, mode); err != nil {
		return -1, nil, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	if int(st.Uid) != os.Geteuid() {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("directory was replaced right after it was made")
	}
	return fd, &st, nil
}

// Reclaim removes the parents and probe directories of dead runs beneath the
// root and returns their paths, so the caller can name them in its output. An
// entry is removed only when all of these hold:
//
//   - its name is run-<random> or observer-probe-<pid>-<random>;
//   - it is a directory, not a link, owned by the effective uid, mode 0700;
//   - for a parent, its ownership record is readable and names a process that
//     is gone, is a zombie, or has another start time (its pid was reused);
//     for a probe, the pid in its name is gone, or its record shows the pid
//     was reused.
//
// Everything else (a live run's parent, a link, a file, a directory with
// another mode or owner, a parent whose record is missing because it is
// being made) is left alone. A removal that fails is reported in the error,
// which wraps errdefs.ErrHostUnsupported; the paths removed before it are
// still returned.
func (r *Root) Reclaim() ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("private root %s is closed", r.path)
	}
	names, err := readNames(r.fd)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to list private root %s: %v", r.path, err)
	}
	var removed []string
	var errs []error
	for _, name := range names {
		if !r.dead(name) {
			continue
		}
		path := filepath.Join(r.path, name)
		if fd, err := openDir(r.fd, name); err == nil {
			owned, oerr := removeOwned(fd, r.uid)
			unix.Close(fd)
			removed = append(removed, owned...)
			if oerr != nil {
				errs = append(errs, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to reclaim what %s owned: %v", path, oerr))
			}
		}
		if err := removeAt(r.fd, name); err != nil {
			errs = append(errs, errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to reclaim %s, left by a dead run: %v", path, err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// dead reports whether the entry name beneath the root is a parent or probe
// directory of a dead run that Reclaim may remove.
func (r *Root) dead(name string) bool {
	namePid := 0
	switch {
	case strings.HasPrefix(name, parentPrefix):
	case strings.HasPrefix(name, probePrefix):
		rest := strings.TrimPrefix(name, probePrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			return false
		}
		namePid = pid
	default:
		return false
	}

	var st unix.Stat_t
	if err := unix.Fstatat(r.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != r.uid || st.Mode&0o7777 != 0o700 {
		return false
	}
	fd, err := openDir(r.fd, name)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fst.Dev != st.Dev || fst.Ino != st.Ino {
		return false
	}
	rec, recErr := readRecord(fd)

	if namePid != 0 {
		if !pidExists(namePid) {
			return true
		}
		// The pid is in use; it is still the probe's process unless the
		// record proves the pid was reused.
		return recErr == nil && rec.Pid == namePid && !running(rec)
	}
	return recErr == nil && !running(rec)
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand.Read never fails on Linux or macOS (Go 1.24+ crashes
		// the program instead of returning an error).
		panic(err)
	}
	return hex.EncodeToString(b)
}

// readNames lists the directory dirfd refers to. It opens the directory anew
// so the listing does not share (or move) the offset of dirfd.
func readNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
