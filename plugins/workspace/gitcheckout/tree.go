package gitcheckout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/warden-run/warden/core/sdk"
)

// entry is one leaf of a tree: a blob (file or symlink) or a gitlink (a
// submodule's commit), with its path from the tree's root.
type entry struct {
	mode uint32 // as git stores it: 0o100644, 0o100755, 0o120000, 0o160000
	typ  string // "blob" or "commit"
	oid  string
	path string // slash-separated
}

const (
	modeTree    = 0o040000
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// maxSymlinkTarget bounds a symlink blob; no file system takes more.
const maxSymlinkTarget = 4096

// checkPath refuses a tree path that would leave the directory it is
// written into or plant a git directory there: empty, ".", ".." or ".git"
// components (git's own checkout refuses the same; a crafted tree may hold
// them). ".git" is compared the way case-insensitive file systems do,
// including HFS+'s ignored code points, so no spelling of it gets through.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") {
		return fmt.Errorf("unsafe path %q in the tree: %w", p, sdk.ErrInvalidConfig)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || isDotGit(c) || strings.ContainsRune(c, 0) {
			return fmt.Errorf("unsafe path %q in the tree: %w", p, sdk.ErrInvalidConfig)
		}
	}
	return nil
}

func isDotGit(name string) bool {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e,
			r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, name)
	return strings.EqualFold(strings.TrimRight(name, ". "), ".git")
}

// writer materializes entries beneath root. It creates every file with
// O_EXCL and checks every parent with Lstat, so nothing is ever written
// through a symlink or over an existing entry, whatever the tree holds.
type writer struct {
	root string
	dirs map[string]bool // parents already checked to be real directories
}

func newWriter(root string) *writer {
	return &writer{root: root, dirs: map[string]bool{"": true}}
}

// dir makes sure the slash-separated rel is a real directory beneath root,
// making the missing components.
func (w *writer) dir(rel string) error {
	if w.dirs[rel] {
		return nil
	}
	if err := w.dir(parentOf(rel)); err != nil {
		return err
	}
	full := filepath.Join(w.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(full, 0o755); err != nil {
			return fmt.Errorf("unable to make directory %s: %w", full, err)
		}
	case err != nil:
		return fmt.Errorf("unable to inspect %s: %w", full, err)
	case !fi.IsDir():
		return fmt.Errorf("refusing to write beneath %s: it is not a directory", full)
	}
	w.dirs[rel] = true
	return nil
}

// parentOf returns the slash-separated parent of rel ("" at the top).
func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}

// file writes one blob of size bytes from r at rel.
func (w *writer) file(rel string, mode uint32, r io.Reader, size int64) error {
	if err := w.dir(parentOf(rel)); err != nil {
		return err
	}
	full := filepath.Join(w.root, filepath.FromSlash(rel))
	if mode == modeSymlink {
		if size > maxSymlinkTarget {
			return fmt.Errorf("symlink %s: target of %d bytes is too long", rel, size)
		}
		target := make([]byte, size)
		if _, err := io.ReadFull(r, target); err != nil {
			return fmt.Errorf("unable to read symlink %s: %w", rel, err)
		}
		if err := os.Symlink(string(target), full); err != nil {
			return fmt.Errorf("unable to make symlink %s: %w", full, err)
		}
		return nil
	}
	// git keeps only the executable bit; every other mode is 644 or 755.
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("unable to create %s: %w", full, err)
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return fmt.Errorf("unable to write %s: %w", full, err)
	}
	if err := f.Chmod(perm); err != nil { // the umask may have narrowed it
		f.Close()
		return fmt.Errorf("unable to set the mode of %s: %w", full, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("unable to write %s: %w", full, err)
	}
	return nil
}

// materialize writes entries beneath root, taking each path relative to
// strip ("" for the whole tree), and returns how many files and symlinks it
// wrote. Blob contents come raw from the object store: no attribute,
// filter or end-of-line conversion of the user's configuration runs, so the
// bytes are exactly the commit's. A gitlink becomes an empty directory, as
// in a checkout whose submodules are not initialized.
func materialize(o *objects, root string, entries []entry, strip string) (int, error) {
	w := newWriter(root)
	var blobs []entry
	for _, e := range entries {
		if strip != "" {
			e.path = strings.TrimPrefix(e.path, strip+"/")
		}
		if err := checkPath(e.path); err != nil {
			return 0, err
		}
		switch e.typ {
		case "commit":
			if err := w.dir(e.path); err != nil {
				return 0, err
			}
		case "blob":
			blobs = append(blobs, e)
		}
	}
	names := make([]string, len(blobs))
	for i, b := range blobs {
		names[i] = b.oid
	}
	n := 0
	err := o.stream(names, func(i int, r io.Reader, size int64) error {
		if err := w.file(blobs[i].path, blobs[i].mode, r, size); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
