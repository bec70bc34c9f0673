package gitcheckout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/warden-run/warden/core/sdk"
)

// entry is one line of `git ls-tree -r`: a blob (file or symlink) or a
// gitlink (a submodule's commit), with its path from the tree's root.
type entry struct {
	mode uint32 // octal mode as git stores it: 100644, 100755, 120000, 160000
	typ  string // "blob" or "commit"
	oid  string
	path string // slash-separated
}

const (
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// maxSymlinkTarget bounds a symlink blob; no file system takes more.
const maxSymlinkTarget = 4096

// listTree returns every blob and gitlink of the tree of id, in git's order.
// `ls-tree` only reads objects: it touches neither the index nor any ref.
func listTree(ctx context.Context, env []string, repo, id string) ([]entry, error) {
	out, err := git(ctx, env, repo, "ls-tree", "-r", "-z", "--full-tree", id)
	if err != nil {
		return nil, err
	}
	var entries []entry
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree %s: unexpected line %q", id, rec)
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("git ls-tree %s: bad mode in %q", id, rec)
		}
		entries = append(entries, entry{mode: uint32(mode), typ: f[1], oid: f[2], path: path})
	}
	return entries, nil
}

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
// wrote. Blob contents come raw from `git cat-file --batch`: no attribute,
// filter or end-of-line conversion of the user's configuration runs, so the
// bytes are exactly the commit's. A gitlink becomes an empty directory, as
// in a checkout whose submodules are not initialized.
func materialize(ctx context.Context, env []string, repo, root string, entries []entry, strip string) (int, error) {
	w := newWriter(root)
	var blobs []entry
	for _, e := range entries {
		rel := e.path
		if strip != "" {
			rel = strings.TrimPrefix(rel, strip+"/")
		}
		if err := checkPath(rel); err != nil {
			return 0, err
		}
		e.path = rel
		switch {
		case e.typ == "commit" && e.mode == modeGitlink:
			if err := w.dir(rel); err != nil {
				return 0, err
			}
		case e.typ == "blob":
			blobs = append(blobs, e)
		default:
			return 0, fmt.Errorf("unexpected %s entry %q (mode %o) in the tree", e.typ, e.path, e.mode)
		}
	}
	if len(blobs) == 0 {
		return 0, nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends cat-file, and with it the feeding goroutine, on an early return
	cmd := sdk.Command(ctx, "git", "-C", repo, "cat-file", "--batch")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("unable to start git cat-file: %w", err)
	}
	go func() {
		bw := bufio.NewWriter(stdin)
		for _, b := range blobs {
			if _, err := bw.WriteString(b.oid + "\n"); err != nil {
				break
			}
		}
		bw.Flush()
		stdin.Close()
	}()

	n, readErr := readBlobs(bufio.NewReaderSize(stdout, 64<<10), w, blobs)
	if readErr != nil {
		cancel()
	}
	waitErr := cmd.Wait()
	if readErr != nil {
		return n, readErr
	}
	if waitErr != nil {
		return n, gitError([]string{"cat-file", "--batch"}, &stderr, waitErr)
	}
	return n, nil
}

// readBlobs reads cat-file's answers, one per blob in order, and writes each.
func readBlobs(r *bufio.Reader, w *writer, blobs []entry) (int, error) {
	for i, b := range blobs {
		header, err := r.ReadString('\n')
		if err != nil {
			return i, fmt.Errorf("git cat-file ended before %s (%s): %w", b.path, b.oid, err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[0] != b.oid || f[1] != "blob" {
			return i, fmt.Errorf("git cat-file: unexpected answer %q for %s (%s)", strings.TrimSpace(header), b.path, b.oid)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return i, fmt.Errorf("git cat-file: bad size in %q", strings.TrimSpace(header))
		}
		if err := w.file(b.path, b.mode, r, size); err != nil {
			return i, err
		}
		if nl, err := r.ReadByte(); err != nil || nl != '\n' {
			return i, fmt.Errorf("git cat-file: %s (%s) is not followed by a newline", b.path, b.oid)
		}
	}
	return len(blobs), nil
}
