package grant

import "strings"

// SystemRoots are this OS's system runtime roots: readable and executable,
// like /usr. They are what @system expands to (with the layer's
// systemPaths), and every target may read them. On Linux: the /usr tree and
// the top-level bin and lib directories (merged-/usr systems make those
// links into /usr, older ones real directories). /opt and /usr/local are
// not special: /usr/local lies under /usr, and /opt holds third-party
// software a pipeline names in systemPaths when it needs it.
var SystemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemConfig is readable, never executable: the configuration every
// dynamic program reads (ld.so.cache, nsswitch.conf, passwd, resolv.conf,
// TLS roots, localtime).
var systemConfig = []string{"/etc"}

// pseudoReads are the /dev and /sys places ordinary programs read: the
// standard devices and terminals, and the /sys files a runtime sizes itself
// by (Go reads /sys/kernel/mm/transparent_hugepage/* and the cgroup limits,
// glibc and nproc read /sys/devices/system/cpu/online). /proc is judged by
// procAccess, not by prefix.
var pseudoReads = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm",
	"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2",
	"/sys/devices/system/cpu", "/sys/devices/system/node",
	"/sys/kernel/mm/transparent_hugepage", "/sys/fs/cgroup",
}

// pseudoWrites are the /dev places ordinary programs write.
var pseudoWrites = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm",
	"/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2",
}

// procAccess judges a path under /proc (ok is false for any other path).
// The target has a fresh /proc of its own pid namespace, so reading it is
// ordinary, with one exception: the magic links that lead anywhere.
// /proc/<pid>/root, /proc/<pid>/cwd, /proc/<pid>/fd/<n> and
// /proc/<pid>/map_files/<range> (and the same under task/<tid>, for <pid>
// a number, self or thread-self) open whatever file or tree they point at,
// bypassing every path rule, so an access through one is never allowed,
// whatever the grants say. /proc/<pid>/fd itself (listing one's own fds)
// and /proc/<pid>/exe (the admitted program) are ordinary. Writes are not
// allowed except a thread's name (comm), which pthread_setname_np writes.
//
// /dev/fd is /proc/self/fd under another name: its stdio entries 0, 1 and 2
// (the descriptors warden handed the target) are ordinary places
// (pseudoReads), any other /dev/fd/<n> leads anywhere like /proc/self/fd/<n>.
//
// A lookup (OpLookup: readlink, stat, access) of a magic link itself, with
// nothing beneath it, is allowed: it learns the link's target name or the
// metadata of a file, directory or root the process already holds
// (glibc's ttyname reads /proc/self/fd/0), and goes nowhere. A lookup
// beneath one (/proc/self/root/etc/x, /proc/self/fd/3/x) is denied like
// any access through it.
func procAccess(p string, op Op) (v Verdict, target, reason string, ok bool) {
	if n, isFd := strings.CutPrefix(p, "/dev/fd/"); isFd && n != "0" && n != "1" && n != "2" && n != "" {
		if op == OpLookup && !strings.Contains(n, "/") {
			return Allow, "/dev/fd/*", "a lookup of a magic link itself: its name or the metadata of what the process holds", true
		}
		return Deny, "/dev/fd/*", "leads anywhere: a magic link reopens any file", true
	}
	if p != "/proc" && !strings.HasPrefix(p, "/proc/") {
		return Deny, "", "", false
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p, "/proc"), "/")
	first, rest := cutComponent(rest)
	if isProcID(first) {
		next, after := cutComponent(rest)
		if next == "task" {
			if tid, afterTid := cutComponent(after); isProcID(tid) {
				rest = afterTid
			}
		}
		name, below := cutComponent(rest)
		if op == OpLookup && isMagicLink(name, below) {
			return Allow, "/proc/<pid>/" + name, "a lookup of a magic link itself: its name or the metadata of what the process holds", true
		}
		switch {
		case name == "root":
			return Deny, "/proc/<pid>/root", "leads anywhere: a magic link to another tree", true
		case name == "cwd":
			return Deny, "/proc/<pid>/cwd", "leads anywhere: a magic link to another tree", true
		case name == "fd" && below != "":
			return Deny, "/proc/<pid>/fd/*", "leads anywhere: a magic link reopens any file", true
		case name == "map_files" && below != "":
			return Deny, "/proc/<pid>/map_files/*", "leads anywhere: a magic link reopens any file", true
		case name == "comm" && below == "" && op == OpWrite:
			return Allow, "/proc/<pid>/comm", "a thread names itself", true
		}
	}
	if op == OpRead || op == OpLookup {
		return Allow, "/proc", "the target's own /proc", true
	}
	return Deny, "", "", false
}

// isMagicLink says whether name/below is exactly one of a process's magic
// links (root, cwd, fd/<n>, map_files/<range>), nothing beneath it.
func isMagicLink(name, below string) bool {
	switch name {
	case "root", "cwd":
		return below == ""
	case "fd", "map_files":
		return below != "" && !strings.Contains(below, "/")
	}
	return false
}

// cutComponent splits "a/b/c" into "a" and "b/c".
func cutComponent(s string) (string, string) {
	first, rest, _ := strings.Cut(s, "/")
	return first, rest
}

func isProcID(s string) bool {
	if s == "self" || s == "thread-self" {
		return true
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
