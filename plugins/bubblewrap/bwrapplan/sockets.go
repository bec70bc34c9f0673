package bwrapplan

import (
	"bufio"
	"cmp"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// Host Unix sockets (spec 001 "Host services"). Every socket file of the
// host the target can see is masked: its path is bound onto itself (so a
// socket that went away stops the start instead of leaving bwrap to make a
// file), then an empty device file (/dev/null) is mounted over it, and a
// connect answers ECONNREFUSED.
const (
	// bwrapArgMax is the number of arguments bwrap takes for the mounts and
	// the command together.
	bwrapArgMax = 9000
	// heldBack is kept for the command when the room for sockets is computed.
	heldBack = 1000
	// argsPerSocket: --bind P P --ro-bind /dev/null P.
	argsPerSocket = 6
	// maxSockets caps the masks of one call, and maxDirEntries the entries
	// read of one scanned directory.
	maxSockets    = 2000
	maxDirEntries = 2000
	// systemUIDMax: uids below are root and the system accounts.
	systemUIDMax = 1000
	nobodyUID    = 65534
)

// hostSocket is one socket file of the host.
type hostSocket struct {
	Path string // real path
	UID  uint32 // the socket file's owner
	// Listed says the kernel's table names the path; a socket found only
	// beside a listed one (a socket its process moved after binding) is not.
	Listed bool
}

// socketScan is what the scan of the host found.
type socketScan struct {
	Sockets []hostSocket
	// Unmaskable counts sockets the plan cannot name: a path that is not
	// UTF-8 or holds a line break.
	Unmaskable int
	// Unreachable counts sockets beneath a directory the sandbox's user
	// cannot search: the target cannot reach them, so they take no room.
	Unreachable int
}

// parseUnixTable returns the bound paths of /proc/net/unix (abstract
// sockets, which start with @, have no file to mask).
func parseUnixTable(r io.Reader) (paths []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			continue
		}
		// Num RefCount Protocol Flags Type St Inode Path: seven fields
		// (the inode padded), one space, then the path as bound.
		rest := line
		for i := 0; i < 7; i++ {
			rest = strings.TrimLeft(rest, " ")
			j := strings.IndexByte(rest, ' ')
			if j < 0 {
				rest = ""
				break
			}
			rest = rest[j:]
		}
		if len(rest) < 2 || rest[0] != ' ' {
			continue
		}
		p := rest[1:]
		if strings.HasPrefix(p, "@") || !filepath.IsAbs(p) {
			continue
		}
		paths = append(paths, p)
	}
	return paths, sc.Err()
}

// rankSockets orders the sockets by who can create one before the list is
// cut: the container engines', the system bus's and systemd's by name;
// then root's and the system accounts'; then the calling user's; then
// every other user's in turns (the first of each owner, then the second),
// so one user who makes sockets in bulk cannot push out another's.
func rankSockets(socks []hostSocket, uid uint32) []hostSocket {
	tier := func(s hostSocket) int {
		switch {
		case namedService(s.Path):
			return 0
		case s.UID < systemUIDMax || s.UID == nobodyUID:
			return 1
		case s.UID == uid:
			return 2
		}
		return 3
	}
	sorted := slices.Clone(socks)
	slices.SortFunc(sorted, func(a, b hostSocket) int {
		return cmp.Or(cmp.Compare(tier(a), tier(b)), cmp.Compare(a.UID, b.UID), cmp.Compare(a.Path, b.Path))
	})
	var out, others []hostSocket
	for _, s := range sorted {
		if tier(s) < 3 {
			out = append(out, s)
		} else {
			others = append(others, s)
		}
	}
	// others are sorted by owner, then path: deal them out in turns.
	var owners [][]hostSocket
	for _, s := range others {
		if n := len(owners); n > 0 && owners[n-1][0].UID == s.UID {
			owners[n-1] = append(owners[n-1], s)
		} else {
			owners = append(owners, []hostSocket{s})
		}
	}
	for turn := 0; len(out) < len(socks); turn++ {
		for _, o := range owners {
			if turn < len(o) {
				out = append(out, o[turn])
			}
		}
	}
	return out
}

// namedService says whether p is a container engine's, the system bus's or
// systemd's socket.
func namedService(p string) bool {
	switch filepath.Base(p) {
	case "docker.sock", "containerd.sock", "containerd.sock.ttrpc", "podman.sock", "system_bus_socket":
		return true
	}
	return strings.HasPrefix(p, "/run/systemd/") || strings.HasPrefix(p, "/var/run/systemd/")
}
