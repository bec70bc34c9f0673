package bwrapplan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/warden-run/warden/core/sdk"
)

// scanSockets lists the host's socket files: every path the kernel's table
// names, and the socket files in those directories, one level down (a
// socket its process moved after binding, as OpenSSH's control master
// does). It reads at most maxDirEntries entries of each directory.
func scanSockets(table string) (socketScan, error) {
	var scan socketScan
	f, err := os.Open(table)
	if err != nil {
		return scan, fmt.Errorf("unable to read the host's Unix sockets from %s: %v: %w", table, err, sdk.ErrHostUnsupported)
	}
	paths, err := parseUnixTable(f)
	f.Close()
	if err != nil {
		return scan, fmt.Errorf("unable to read the host's Unix sockets from %s: %v: %w", table, err, sdk.ErrHostUnsupported)
	}
	seen := map[string]bool{}
	dirs := map[string]bool{}
	add := func(p string, listed bool) {
		if !utf8.ValidString(p) || strings.ContainsAny(p, "\n\x00") {
			scan.Unmaskable++
			return
		}
		if listed {
			// walk the directory even when the socket was moved away
			if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
				dirs[d] = true
			}
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return // gone since it was bound: nothing to mask
		}
		fi, err := os.Lstat(real)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			return
		}
		if seen[real] {
			return
		}
		seen[real] = true
		st, _ := fi.Sys().(*syscall.Stat_t)
		s := hostSocket{Path: real, Listed: listed}
		if st != nil {
			s.UID = st.Uid
		}
		scan.Sockets = append(scan.Sockets, s)
	}
	for _, p := range paths {
		add(p, true)
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	for _, d := range ds {
		dir, err := os.Open(d)
		if err != nil {
			continue
		}
		ents, _ := dir.ReadDir(maxDirEntries)
		dir.Close()
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			if e.Type()&os.ModeSocket != 0 {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for _, n := range names {
			add(filepath.Join(d, n), false)
		}
	}
	return scan, nil
}
