package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// WriteFile writes data as the new file rel (slash-separated, relative to the
// run directory), making its directory if needed. The file must not exist:
// one warden already wrote wraps errdefs.ErrInvalid (use Replace), any other
// entry at rel wraps errdefs.ErrIntegrity.
func (w *Writer) WriteFile(rel string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, f, err := w.create(rel)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return w.finish(d, rel, f, err, data)
}

// WriteJSON writes v as the new file rel, indented by two spaces and ending
// in a newline, like WriteFile.
func (w *Writer) WriteJSON(rel string, v any) error {
	data, err := marshal(v)
	if err != nil {
		return fmt.Errorf("unable to encode %s: %w", rel, err)
	}
	return w.WriteFile(rel, data)
}

// Replace writes data as rel whether or not warden wrote rel before, by
// writing a new file beside it in the held directory and renaming it over
// rel. It is how run.json, the one file rewritten, is updated. An entry at
// rel that warden did not write, or a file warden wrote whose bytes were
// changed since, wraps errdefs.ErrIntegrity and is left in place.
func (w *Writer) Replace(rel string, data []byte) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	rec := w.files[rel]
	if rec != nil && rec.pending {
		return fmt.Errorf("%s in run directory %s is still being written", rel, w.path)
	}
	if _, ok := w.dirs[rel]; ok {
		return errdefs.Errorf(errdefs.ErrInvalid, "%s in run directory %s is a directory warden made, not a file", rel, w.path)
	}
	d, err := w.mkdirAll(path.Dir(rel))
	if err != nil {
		return err
	}
	if err := w.checkDir(d); err != nil {
		return err
	}
	name := path.Base(rel)
	if rec != nil {
		// The file being replaced must still be the one written, so a
		// change to it is reported, not renamed away.
		if _, err := w.readHeld(d, name, rel, rec); err != nil {
			return err
		}
	} else {
		var st unix.Stat_t
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return errdefs.Errorf(errdefs.ErrIntegrity, "an entry warden did not write is at %s in run directory %s", rel, w.path)
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unable to inspect %s in run directory %s: %w", rel, w.path, err)
		}
	}

	tmp := "." + name + ".new-" + randomHex(4)
	f, err := openNew(d, tmp)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return errdefs.Errorf(errdefs.ErrIntegrity, "an entry warden did not write is at %s in run directory %s", path.Join(d.rel, tmp), w.path)
		}
		return fmt.Errorf("unable to create %s in run directory %s: %w", path.Join(d.rel, tmp), w.path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("unable to replace %s in run directory %s: %w", rel, w.path, err)
	}
	if w.afterWrite != nil {
		w.afterWrite(rel)
	}
	if err := w.checkDir(d); err != nil {
		delete(w.files, rel)
		return w.withdraw(d, name, rel, err)
	}
	w.files[rel] = &fileRec{digest: digest(sha256Sum(data)), size: int64(len(data))}
	return nil
}

// ReplaceJSON replaces rel with v encoded as WriteJSON encodes it.
func (w *Writer) ReplaceJSON(rel string, v any) error {
	data, err := marshal(v)
	if err != nil {
		return fmt.Errorf("unable to encode %s: %w", rel, err)
	}
	return w.Replace(rel, data)
}

// Copied says what CopyFrom wrote.
type Copied struct {
	Written   int64  // bytes written to the file (at most the limit)
	Total     int64  // bytes read from the reader
	Truncated bool   // Total > Written: the output was cut at the limit
	Digest    string // "sha256:<hex>" of the bytes written
}

// CopyFrom streams r into the new file rel, keeping the first limit bytes and
// reading the rest to the end so the writer at the other side of a pipe is
// never blocked; the result records the digest and whether the output was
// truncated. The directory is checked before the file is made and again
// after the stream ends, as for WriteFile. Other Writer methods may be called
// while it streams (the target's stdout and stderr are copied at once). A
// read error ends the copy; what was written is kept, recorded and returned
// with the error.
func (w *Writer) CopyFrom(rel string, r io.Reader, limit int64) (Copied, error) {
	if limit < 0 {
		return Copied{}, errdefs.Errorf(errdefs.ErrInvalid, "copy limit %d for %s is negative", limit, rel)
	}
	w.mu.Lock()
	d, f, err := w.create(rel)
	if err != nil {
		w.mu.Unlock()
		return Copied{}, err
	}
	w.files[rel] = &fileRec{pending: true}
	w.copies.Add(1)
	defer w.copies.Done()
	w.mu.Unlock()

	h := sha256.New()
	var c Copied
	var writeErr, readErr error
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		c.Total += int64(n)
		if keep := min(int64(n), limit-c.Written); keep > 0 && writeErr == nil {
			if _, werr := f.Write(buf[:keep]); werr != nil {
				// Keep reading so the other side is not blocked; the
				// file is removed below.
				writeErr = werr
			} else {
				h.Write(buf[:keep])
				c.Written += keep
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	c.Truncated = c.Total > c.Written
	c.Digest = digest(h)

	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.files, rel)
	if err := w.finishHashed(d, rel, f, writeErr, c.Digest, c.Written); err != nil {
		return c, err
	}
	if readErr != nil {
		return c, fmt.Errorf("unable to read the output copied to %s: %w", rel, readErr)
	}
	return c, nil
}

// Files returns the digest ("sha256:<hex>") of every file the Writer wrote,
// by its slash-separated path in the run directory; a replaced file has the
// digest of its latest bytes. A file CopyFrom is still writing is left out.
func (w *Writer) Files() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]string, len(w.files))
	for rel, rec := range w.files {
		if !rec.pending {
			m[rel] = rec.digest
		}
	}
	return m
}

// ReadBack returns the bytes of rel, a file the Writer wrote, only when they
// are the bytes it wrote. The file is opened from its held directory without
// following a link and without blocking, so a link or a FIFO swapped in for it
// is refused at once. A file that is gone, changed kind or holds other bytes
// wraps errdefs.ErrIntegrity; a path the Writer did not write wraps
// errdefs.ErrInvalid.
func (w *Writer) ReadBack(rel string) ([]byte, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return nil, err
	}
	rec := w.files[rel]
	if rec == nil {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "warden did not write %s in run directory %s", rel, w.path)
	}
	if rec.pending {
		return nil, fmt.Errorf("%s in run directory %s is still being written", rel, w.path)
	}
	d := w.dirs[path.Dir(rel)]
	if err := w.checkDir(d); err != nil {
		return nil, err
	}
	data, err := w.readHeld(d, path.Base(rel), rel, rec)
	if err != nil {
		return nil, err
	}
	if err := w.checkDir(d); err != nil {
		return nil, err
	}
	return data, nil
}

// readHeld reads the file name in the held directory d and returns its bytes
// when they are the ones rec records; otherwise the error wraps
// errdefs.ErrIntegrity and names rel.
// Preconditions: w.mu is held.
func (w *Writer) readHeld(d *heldDir, name, rel string, rec *fileRec) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "%s in run directory %s, which warden wrote, is gone", rel, w.path)
	case errors.Is(err, unix.ELOOP):
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "%s in run directory %s, which warden wrote, was replaced by a link", rel, w.path)
	case err != nil:
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "unable to open %s in run directory %s: %v", rel, w.path, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("unable to inspect %s in run directory %s: %w", rel, w.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "%s in run directory %s, which warden wrote as a file, is now a %s", rel, w.path, kindName(uint32(st.Mode)))
	}
	data, err := io.ReadAll(io.LimitReader(f, rec.size+1))
	if err != nil {
		return nil, fmt.Errorf("unable to read %s in run directory %s: %w", rel, w.path, err)
	}
	if int64(len(data)) != rec.size || digest(sha256Sum(data)) != rec.digest {
		return nil, errdefs.Errorf(errdefs.ErrIntegrity, "%s in run directory %s does not hold the bytes warden wrote", rel, w.path)
	}
	return data, nil
}

// create checks rel, makes its directory if needed, checks the directory and
// creates rel in it as a new file, without following a link.
// Preconditions: w.mu is held.
func (w *Writer) create(rel string) (*heldDir, *os.File, error) {
	if err := checkRel(rel); err != nil {
		return nil, nil, err
	}
	if err := w.usable(); err != nil {
		return nil, nil, err
	}
	if _, ok := w.files[rel]; ok {
		return nil, nil, errdefs.Errorf(errdefs.ErrInvalid, "warden already wrote %s in run directory %s; a file is written once (Replace rewrites run.json)", rel, w.path)
	}
	if _, ok := w.dirs[rel]; ok {
		return nil, nil, errdefs.Errorf(errdefs.ErrInvalid, "%s in run directory %s is a directory warden made, not a file", rel, w.path)
	}
	d, err := w.mkdirAll(path.Dir(rel))
	if err != nil {
		return nil, nil, err
	}
	if err := w.checkDir(d); err != nil {
		return nil, nil, err
	}
	f, err := openNew(d, path.Base(rel))
	if errors.Is(err, unix.EEXIST) {
		return nil, nil, errdefs.Errorf(errdefs.ErrIntegrity, "an entry warden did not write is at %s in run directory %s", rel, w.path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("unable to create %s in run directory %s: %w", rel, w.path, err)
	}
	return d, f, nil
}

// finish closes f, which holds data (or failed with writeErr), checks its
// directory again and records the file.
// Preconditions: w.mu is held.
func (w *Writer) finish(d *heldDir, rel string, f *os.File, writeErr error, data []byte) error {
	return w.finishHashed(d, rel, f, writeErr, digest(sha256Sum(data)), int64(len(data)))
}

// finishHashed is finish for a file of size bytes with the given digest. A
// file that failed to write, or whose directory is no longer the one made
// where it was made, is removed again and not recorded.
// Preconditions: w.mu is held.
func (w *Writer) finishHashed(d *heldDir, rel string, f *os.File, writeErr error, sum string, size int64) error {
	if cerr := f.Close(); writeErr == nil {
		writeErr = cerr
	}
	name := path.Base(rel)
	if writeErr != nil {
		err := fmt.Errorf("unable to write %s in run directory %s: %w", rel, w.path, writeErr)
		if uerr := unix.Unlinkat(d.fd, name, 0); uerr != nil && !errors.Is(uerr, unix.ENOENT) {
			err = fmt.Errorf("%w; removing the partial file failed: %v", err, uerr)
		}
		return err
	}
	if w.afterWrite != nil {
		w.afterWrite(rel)
	}
	if err := w.checkDir(d); err != nil {
		return w.withdraw(d, name, rel, err)
	}
	w.files[rel] = &fileRec{digest: sum, size: size}
	return nil
}

// withdraw removes the file name that was just written into d, whose check
// failed with checkErr, and returns checkErr naming the file and whether the
// removal failed.
// Preconditions: w.mu is held.
func (w *Writer) withdraw(d *heldDir, name, rel string, checkErr error) error {
	err := fmt.Errorf("%w; %s was written into it and has been removed again", checkErr, rel)
	if uerr := unix.Unlinkat(d.fd, name, 0); uerr != nil && !errors.Is(uerr, unix.ENOENT) {
		err = fmt.Errorf("%w; %s was written into it and removing it again failed: %v", checkErr, rel, uerr)
	}
	return err
}

// openNew creates name in the held directory d as a new file for writing,
// without following a link. The error wraps unix.EEXIST when any entry, a
// link included, is already there.
func openNew(d *heldDir, name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(d.path, name)), nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the value with '\n'
		return nil, err
	}
	return buf.Bytes(), nil
}

func sha256Sum(data []byte) hash.Hash {
	h := sha256.New()
	h.Write(data)
	return h
}

func digest(h hash.Hash) string {
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// kindName names a file type for messages.
func kindName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "special file"
}
