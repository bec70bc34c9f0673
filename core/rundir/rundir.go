// Package rundir is the one writer of the run directory, runs/<invocationId>/
// (DESIGN.md "Run directory", spec 001 "The run directory").
//
// A target that opted out of confinement can reach the run directory from
// its workspace, so every write and read warden makes there goes through a
// Writer, which guarantees:
//
//   - runs/ is a directory and runs/.gitignore a file; a link at either is
//     refused. The run directory is created afresh (an existing one is
//     refused).
//   - Every directory in the run directory is made by the Writer, recorded by
//     device and inode and held open until Close. A held directory keeps its
//     inode, so no directory made later can be given its number.
//   - Each file is created new (O_CREAT|O_EXCL|O_NOFOLLOW) from the
//     descriptor of its held directory, so an entry planted where warden
//     writes, a link included, stops the write.
//   - Before and after each write the Writer confirms the directory is the one
//     it made at the place it made it: every directory from runs/ down has the
//     recorded device and inode at its name, and on Linux the kernel's path
//     for the directory's descriptor is the expected one. A directory replaced,
//     swapped for a link or moved away stops the write; a file written while
//     its directory was being moved is removed again, and a removal that
//     fails is named in the error.
//   - The Writer keeps the digest of every file it wrote, reads a file back
//     only when its bytes are the ones it wrote (opening it without blocking
//     or following a link, so a FIFO or link swapped in is refused at once),
//     and Verify checks the directory holds exactly the entries it wrote, each
//     file with the bytes it wrote.
//
// Every such failure wraps errdefs.ErrIntegrity (exit 12) and names the
// entry. A bad path or invocation ID from the caller wraps errdefs.ErrInvalid.
package rundir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

const (
	dirMode  = 0o755
	fileMode = 0o644
	// gitignore keeps every run out of the user's repository.
	gitignore = "*\n"
)

// Writer writes one run directory. All its methods are safe for concurrent
// use; CopyFrom streams without blocking the others.
type Writer struct {
	path string // the run directory's canonical path

	mu     sync.Mutex          // guards runs, dirs, files, closed
	runs   *heldDir            // runs/, the anchor of every path check
	dirs   map[string]*heldDir // rel → held directory; "." is the run directory
	files  map[string]*fileRec // rel → what was written
	closed bool

	copies sync.WaitGroup // CopyFrom calls streaming without mu; Close waits

	// afterWrite, when set (by tests), runs after a file's bytes are
	// written and before the directory is checked again.
	afterWrite func(rel string)
}

// heldDir is a directory the Writer made (or runs/), held open.
type heldDir struct {
	fd     int
	dev    uint64
	ino    uint64
	parent *heldDir // nil for runs/, which is checked by its path
	name   string   // name beneath parent
	path   string   // canonical absolute path
	rel    string   // path in the run directory; "." for it, "" for runs/
}

// fileRec is what the Writer knows of a file it wrote.
type fileRec struct {
	digest  string // "sha256:<hex>"
	size    int64
	pending bool // CopyFrom is still writing it
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// NewInvocationID returns a new invocation ID: the UTC time to the second
// and 8 random hex digits, e.g. 20261201T235959Z-1a2b3c4d. IDs sort by time,
// are unique in practice, and are safe as a file name on every file system.
func NewInvocationID() string {
	return time.Now().UTC().Format("20060102T150405Z") + "-" + randomHex(4)
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand.Read does not fail on Linux or macOS (since Go 1.24
		// it crashes the program rather than return an error).
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Create makes the run directory runsDir/<invocationID> and returns its
// writer. runsDir is created (0755, with missing parents) when it is missing,
// and runsDir/.gitignore ("*") when it is missing. A link at runsDir or at
// its .gitignore, or an entry of another kind there, is refused with
// errdefs.ErrIntegrity naming it; so is an existing run directory. An
// invocation ID that is not a plain file name wraps errdefs.ErrInvalid.
func Create(runsDir, invocationID string) (*Writer, error) {
	if !idPattern.MatchString(invocationID) {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "invocation ID %q is not a plain file name (letters, digits, '.', '_', '-')", invocationID)
	}
	abs, err := filepath.Abs(runsDir)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "runs directory %s: %v", runsDir, err)
	}
	parentDir, base := filepath.Split(abs)
	if base == "" {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "runs directory %s is a file system root", runsDir)
	}
	if err := os.MkdirAll(parentDir, dirMode); err != nil {
		return nil, fmt.Errorf("unable to create the parent of runs directory %s: %w", abs, err)
	}
	// The kernel reports a directory's path with every link resolved, so
	// the expected paths are built on the resolved parent.
	realParent, err := filepath.EvalSymlinks(parentDir)
	if err != nil {
		return nil, fmt.Errorf("unable to resolve the parent of runs directory %s: %w", abs, err)
	}
	runsPath := filepath.Join(realParent, base)

	if err := unix.Mkdir(runsPath, dirMode); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("unable to create runs directory %s: %w", runsPath, err)
	}
	runs, err := openRuns(runsPath)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		path:  filepath.Join(runsPath, invocationID),
		runs:  runs,
		dirs:  map[string]*heldDir{},
		files: map[string]*fileRec{},
	}
	if err := w.checkDir(runs); err != nil {
		w.Close()
		return nil, err
	}
	if err := ensureGitignore(runs); err != nil {
		w.Close()
		return nil, err
	}
	if _, err := w.makeDir(runs, invocationID, "."); err != nil {
		w.Close()
		if errors.Is(err, unix.EEXIST) {
			return nil, errdefs.Errorf(errdefs.ErrIntegrity, "run directory %s already exists; an invocation's directory is always made afresh", w.path)
		}
		return nil, err
	}
	return w, nil
}

// openRuns opens and holds runs/ at path, refusing a link or a non-directory.
func openRuns(path string) (*heldDir, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, fmt.Errorf("unable to inspect runs directory %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "runs directory %s is a link; it must be a directory", path)
	default:
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "runs directory %s is not a directory", path)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, errdefs.Errorf(errdefs.ErrIntegrity, "runs directory %s was replaced while it was opened", path)
		}
		return nil, fmt.Errorf("unable to open runs directory %s: %w", path, err)
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unable to inspect runs directory %s: %w", path, err)
	}
	return &heldDir{fd: fd, dev: uint64(fst.Dev), ino: fst.Ino, name: filepath.Base(path), path: path}, nil
}

// ensureGitignore makes runs/.gitignore when it is missing and refuses an
// entry there that is not a regular file.
func ensureGitignore(runs *heldDir) error {
	const name = ".gitignore"
	path := filepath.Join(runs.path, name)
	for range 2 {
		var st unix.Stat_t
		err := unix.Fstatat(runs.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				return nil
			case unix.S_IFLNK:
				return errdefs.Errorf(errdefs.ErrIntegrity, "%s is a link; it must be a file", path)
			default:
				return errdefs.Errorf(errdefs.ErrIntegrity, "%s is not a file", path)
			}
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unable to inspect %s: %w", path, err)
		}
		fd, err := unix.Openat(runs.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
		if errors.Is(err, unix.EEXIST) {
			continue // made meanwhile: inspect what is there
		}
		if err != nil {
			return fmt.Errorf("unable to create %s: %w", path, err)
		}
		f := os.NewFile(uintptr(fd), path)
		_, err = f.WriteString(gitignore)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", path, err)
		}
		return nil
	}
	return errdefs.Errorf(errdefs.ErrIntegrity, "%s keeps changing", path)
}

// Path returns the run directory's path, with every link in the path of
// runs/ resolved.
func (w *Writer) Path() string { return w.path }

// Close releases every held directory, after waiting for CopyFrom calls in
// progress. The run directory stays; calling Close again does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()

	w.copies.Wait()

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dirs {
		unix.Close(d.fd)
	}
	unix.Close(w.runs.fd)
	return nil
}

// Mkdir makes the directory rel (slash-separated, relative to the run
// directory) and any missing parent, each made by the Writer and held. An
// entry that is already at one of those names and was not made by the Writer
// wraps errdefs.ErrIntegrity; a directory the Writer made is reused.
func (w *Writer) Mkdir(rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	_, err := w.mkdirAll(rel)
	return err
}

// mkdirAll returns the held directory rel, making it and its parents.
// Preconditions: w.mu is held; rel is checkRel-valid or ".".
func (w *Writer) mkdirAll(rel string) (*heldDir, error) {
	if d, ok := w.dirs[rel]; ok {
		return d, nil
	}
	parent, err := w.mkdirAll(path.Dir(rel))
	if err != nil {
		return nil, err
	}
	if _, ok := w.files[rel]; ok {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "%s in run directory %s is a file warden wrote, not a directory", rel, w.path)
	}
	if err := w.checkDir(parent); err != nil {
		return nil, err
	}
	d, err := w.makeDir(parent, path.Base(rel), rel)
	if errors.Is(err, unix.EEXIST) {
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "an entry warden did not make is at %s, where it makes a directory", d.path)
	}
	return d, err
}

// makeDir makes name beneath parent, holds it and records it as rel. On
// EEXIST it returns the directory it would have made (not held) and an error
// wrapping unix.EEXIST.
// Preconditions: w.mu is held, or w is not yet shared.
func (w *Writer) makeDir(parent *heldDir, name, rel string) (*heldDir, error) {
	d := &heldDir{fd: -1, parent: parent, name: name, rel: rel, path: filepath.Join(parent.path, name)}
	if err := unix.Mkdirat(parent.fd, name, dirMode); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return d, fmt.Errorf("%s: %w", d.path, err)
		}
		return nil, fmt.Errorf("unable to create directory %s: %w", d.path, err)
	}
	fd, err := unix.Openat(parent.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "directory %s was replaced right after warden made it: %v", d.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unable to inspect directory %s: %w", d.path, err)
	}
	d.fd, d.dev, d.ino = fd, uint64(st.Dev), st.Ino
	// Held from here on, so Close releases it and Verify judges it.
	w.dirs[rel] = d
	if err := w.checkDir(d); err != nil {
		return nil, err
	}
	return d, nil
}

// checkDir confirms d is the directory the Writer made at the place it made
// it: each directory from runs/ down to d has its recorded device and inode
// at its name (runs/ at its path), and on Linux the kernel's path of d's
// descriptor is d's path. The error wraps errdefs.ErrIntegrity and names the
// first directory that is not where it was.
func (w *Writer) checkDir(d *heldDir) error {
	for a := d; a != nil; a = a.parent {
		var st unix.Stat_t
		var err error
		if a.parent == nil {
			err = unix.Lstat(a.path, &st)
		} else {
			err = unix.Fstatat(a.parent.fd, a.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		switch {
		case err != nil:
			return errdefs.Errorf(errdefs.ErrIntegrity, "directory %s that warden made is gone: %v", a.path, err)
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return errdefs.Errorf(errdefs.ErrIntegrity, "directory %s that warden made was replaced by a link", a.path)
		case uint64(st.Dev) != a.dev || st.Ino != a.ino:
			return errdefs.Errorf(errdefs.ErrIntegrity, "directory %s that warden made was replaced or moved", a.path)
		}
	}
	return checkFdPath(d.fd, d.path)
}

// usable reports an error when w is closed.
// Preconditions: w.mu is held.
func (w *Writer) usable() error {
	if w.closed {
		return fmt.Errorf("the writer of run directory %s is closed", w.path)
	}
	return nil
}

// checkRel accepts a slash-separated path below the run directory with no
// empty, "." or ".." element.
func checkRel(rel string) error {
	if rel == "." || !fs.ValidPath(rel) {
		return errdefs.Errorf(errdefs.ErrInvalid, "%q is not a path inside the run directory", rel)
	}
	return nil
}

// sortedDirs returns the held directories of the run directory, parents
// first.
// Preconditions: w.mu is held.
func (w *Writer) sortedDirs() []*heldDir {
	ds := make([]*heldDir, 0, len(w.dirs))
	for _, d := range w.dirs {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].rel < ds[j].rel })
	return ds
}
