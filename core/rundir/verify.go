package rundir

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// Verify checks that the run directory holds exactly what the Writer wrote:
// every directory it made is where it made it, every file it wrote is there
// with the bytes it wrote, and nothing else is there. Each entry it did not
// write, each entry gone or changed kind and each file with other bytes is
// named; the error wraps errdefs.ErrIntegrity. Verify must not run while a
// CopyFrom is streaming.
func (w *Writer) Verify() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	for rel, rec := range w.files {
		if rec.pending {
			return fmt.Errorf("unable to verify run directory %s: %s is still being written", w.path, rel)
		}
	}

	var problems []string
	seen := map[string]bool{}
	for _, d := range w.sortedDirs() {
		if err := w.checkDir(d); err != nil {
			problems = append(problems, err.Error())
		}
		names, err := readNames(d.fd)
		if err != nil {
			problems = append(problems, fmt.Sprintf("unable to list %s: %v", d.path, err))
			continue
		}
		for _, name := range names {
			rel := path.Join(d.rel, name)
			seen[rel] = true
			if _, ok := w.dirs[rel]; ok {
				continue // judged by its own checkDir
			}
			rec := w.files[rel]
			if rec == nil {
				problems = append(problems, fmt.Sprintf("%s was not written by warden", rel))
				continue
			}
			if _, err := w.readHeld(d, name, rel, rec); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	for rel := range w.files {
		if !seen[rel] {
			problems = append(problems, fmt.Sprintf("%s, which warden wrote, is gone", rel))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return errdefs.Errorf(errdefs.ErrIntegrity, "run directory %s does not hold exactly what warden wrote: %s", w.path, strings.Join(problems, "; "))
}

// readNames lists the directory dirfd refers to. It opens the directory anew
// (without following a link) so the listing neither shares nor moves the
// offset of dirfd.
func readNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if errors.Is(err, os.ErrNotExist) {
		// A removed directory lists as empty.
		return nil, nil
	}
	return names, err
}
