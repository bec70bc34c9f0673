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
// does). It reads at most maxDirEntries entries of each directory, and
// leaves out the sockets cred cannot reach.
func scanSockets(table string, cred cred) (socketScan, error) {
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
		if !reachable(real, cred) {
			scan.Unreachable++
			return
		}
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

// cred is who the sandbox runs as: the plugin's user (the core's), with
// every capability dropped.
type cred struct {
	uid    uint32
	groups []uint32
}

func callerCred() cred {
	c := cred{uid: uint32(os.Geteuid()), groups: []uint32{uint32(os.Getegid())}}
	gs, _ := os.Getgroups()
	for _, g := range gs {
		c.groups = append(c.groups, uint32(g))
	}
	return c
}

// reachable says whether a process of c without capabilities can search
// every directory above p. bwrap (in its user namespace, without
// CAP_DAC_OVERRIDE over unmapped owners) cannot bind a socket it cannot
// reach, and neither can the target connect to it: such a socket needs no
// mask. The check reads mode bits only (an ACL that widens them is not
// seen, and the socket is then left unmasked and counted).
func reachable(p string, c cred) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		m := uint32(fi.Mode().Perm())
		switch {
		case st.Uid == c.uid:
			m &= 0o100
		case slices.Contains(c.groups, st.Gid):
			m &= 0o010
		default:
			m &= 0o001
		}
		if m == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}
