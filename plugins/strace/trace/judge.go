package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/warden-run/warden/core/grant"
)

// Accesser is the verdict function the judge asks (grant.Table).
type Accesser interface {
	Access(path string, op grant.Op) grant.Decision
}

// Finding is one access outside the grants.
type Finding struct {
	Path    string // the denied path, in the host's view
	Spelled string // the path as the target wrote it, when different
	Op      grant.Op
	Syscall string
	Pid     int
	Result  string // "0", "EACCES", "?" (never returned)
	Rule    string
	Reason  string
	Count   int // how many traced calls made this (path, op)
}

// Judge reads one trace and judges every access of the target in it.
//
// The target starts at the first successful execve whose argv is one of
// Targets (the first successful execve when there is none): what ran before it is
// the observer's and the sandbox's own set-up (bwrap's mounts). From then on
// the pid that started the target and every pid first seen afterwards are
// judged; a pid seen before the start (bwrap's own processes) is not.
//
// Each call is judged with one grant.Op: opening for reading, listing a
// directory (its open) and linking an old name are reads; the metadata-only
// calls (the stat family, access/faccessat, readlink, chdir, statfs, the
// getxattr family) are grant.OpLookup, which the grants allow on the way to
// a readable place ("/" and every ancestor of a granted path) but never on a
// hidden place or a sibling; a denied lookup is listed as a read whose rule
// says "lookup". A call with AT_SYMLINK_NOFOLLOW (and lstat, readlink, the
// l*xattr calls, unlink, rename, a link's new name…) is judged by the link
// itself, not what it leads to.
//
// Paths are resolved as the kernel walked them at the time of the call:
// the process's cwd and dirfds, the symbolic and hard links the target made
// (removed, renamed with their directory), ".." after a link, and the bind
// mounts the target made (a path beneath a destination is the source's
// file, until umount).
type Judge struct {
	Table Accesser
	// Targets are the argvs the target may be started with: the spec's, and
	// the one a confiner runs (bwrap runs the admitted path as argv[0]).
	Targets [][]string
	// Map turns a path in the sandbox's view into the host's (call
	// directories appear at /dev/<name>); nil is the identity.
	Map func(string) string
	// Cwd is the working directory of the first process.
	Cwd string
	// Exec, when set, judges an exec with the spelling it was started by
	// and its real path (grant.ExecTable); Real, when set, gives the real
	// path of a host path ("" when unknown) for calls whose trace names no
	// file reached (an exec, a stat).
	Exec interface {
		Decide(grant.Program) grant.Decision
	}
	Real func(string) string

	procs    map[int]*proc
	pending  map[int]Line // unfinished calls, by pid
	forkers  []int        // pids inside a clone/fork/vfork, newest last
	started  bool
	targetAt int // the pid that started the target
	found    map[findingKey]int
	out      []Finding
	lines    int64
	firstPid int
	killed   map[int]string
	fds      map[string]Fd // decoded descriptor arguments: a trace repeats them
	// links are the symbolic links the target made (absolute link path to
	// what it leads to, absolute), as they stand at this point of the trace.
	links map[string]string
	// binds are the bind mounts the target made (destination to source,
	// both absolute in the target's view), as they stand: a path beneath a
	// destination is the source's file. A ".." at a destination's root
	// leaves to the destination's parent, as the kernel walks it.
	binds map[string]string
}

// realOf is the real path of raw (absolute, as the kernel walked it, ".."
// unresolved), in the host's view: the target's own links as they stood at
// the call, then the host's (Real). It is "" when unknown. /proc and
// /dev/fd are left to their own rules.
func (j *Judge) realOf(raw string) string {
	if strings.HasPrefix(raw, "/proc/") || strings.HasPrefix(raw, "/dev/fd/") {
		return ""
	}
	p, changed := raw, false
	if len(j.links) > 0 || len(j.binds) > 0 {
		p, changed = j.walkLinks(raw)
	}
	if len(j.binds) > 0 {
		if b, ok := j.bound(p); ok {
			p, changed = b, true
		}
	}
	host := j.mapped(p)
	if j.Real != nil {
		if r := j.Real(host); r != "" {
			return r
		}
	}
	if changed {
		return host
	}
	return ""
}

// bound translates p beneath the deepest bind destination the target made
// to the source's file.
func (j *Judge) bound(p string) (string, bool) {
	best := ""
	for dst := range j.binds {
		if (p == dst || strings.HasPrefix(p, dst+"/") || dst == "/") && len(dst) > len(best) {
			best = dst
		}
	}
	if best == "" {
		return p, false
	}
	src := j.binds[best]
	if best == "/" {
		return filepath.Clean(src + p), true
	}
	return src + p[len(best):], true
}

// walkLinks walks raw component by component as the kernel does, replacing
// a prefix that is a link the target made by where it leads, so that a ".."
// after the link goes to the parent of the link's target.
func (j *Judge) walkLinks(raw string) (string, bool) {
	parts := strings.Split(raw, "/")
	cur := "/"
	changed := false
	for hops := 0; len(parts) > 0; {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if to, ok := j.links[next]; ok && hops < 40 {
			hops++
			changed = true
			cur = "/"
			parts = append(strings.Split(to, "/"), parts...)
			continue
		}
		cur = next
	}
	return cur, changed
}

// linkEvent follows the links the target makes and removes.
func (j *Judge) linkEvent(p *proc, name string, args []string) {
	path := func(dirfd, i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		v, _, ok := Unquote(args[i])
		if !ok || v == "" {
			return "", false
		}
		if strings.HasPrefix(v, "/") {
			return filepath.Clean(v), true
		}
		base, known := j.base(p, args, pathSpec{dirfd: dirfd})
		if !known {
			return "", false
		}
		return filepath.Clean(base + "/" + v), true
	}
	switch name {
	case "symlink", "symlinkat":
		dirfd, li := -1, 1
		if name == "symlinkat" {
			dirfd, li = 1, 2
		}
		link, ok := path(dirfd, li)
		to, _, tok := Unquote(args[0])
		if !ok || !tok || to == "" {
			return
		}
		if !strings.HasPrefix(to, "/") {
			to = filepath.Dir(link) + "/" + to
		}
		if j.links == nil {
			j.links = map[string]string{}
		}
		j.links[link] = to
	case "link", "linkat":
		// A hard link is the file it links: judge the new name as the old
		// one (as it resolved, following a link in its last component only
		// with AT_SYMLINK_FOLLOW; a hard link to a symbolic link is another
		// link to the same place).
		od, oi, nd, ni := -1, 0, -1, 1
		if name == "linkat" {
			od, oi, nd, ni = 0, 1, 2, 3
		}
		old, ok1 := path(od, oi)
		nw, ok2 := path(nd, ni)
		if !ok1 || !ok2 {
			return
		}
		var to string
		if noFollows(name, args) {
			dir, last := filepath.Split(old)
			d, _ := j.walkLinks(dir)
			to = filepath.Join(d, last)
			if t, ok := j.links[to]; ok {
				to = t
			}
		} else {
			to, _ = j.walkLinks(old)
		}
		if to != nw {
			if j.links == nil {
				j.links = map[string]string{}
			}
			j.links[nw] = to
		}
	case "unlink", "unlinkat", "rmdir":
		dirfd, i := -1, 0
		if name == "unlinkat" {
			dirfd, i = 0, 1
		}
		if old, ok := path(dirfd, i); ok {
			delete(j.links, old)
		}
	case "rename", "renameat", "renameat2":
		od, oi, nd, ni := -1, 0, -1, 1
		if name != "rename" {
			od, oi, nd, ni = 0, 1, 2, 3
		}
		old, ok1 := path(od, oi)
		nw, ok2 := path(nd, ni)
		if !ok1 || !ok2 {
			return
		}
		delete(j.links, nw)
		moved := map[string]string{}
		for l, to := range j.links {
			if l == old || strings.HasPrefix(l, old+"/") {
				delete(j.links, l)
				moved[nw+l[len(old):]] = to
			}
		}
		for l, to := range moved {
			j.links[l] = to
		}
	}
}

// fd is ParseFd, remembered: a dirfd's decoration repeats on every call
// relative to it.
func (j *Judge) fd(s string) (Fd, bool) {
	if f, ok := j.fds[s]; ok {
		return f, true
	}
	f, ok := ParseFd(s)
	if ok {
		if len(j.fds) >= 4096 {
			clear(j.fds)
		}
		j.fds[s] = f
	}
	return f, ok
}

type findingKey struct {
	path string
	op   grant.Op
}

type fsState struct{ cwd string }

type proc struct {
	fs      *fsState
	inScope bool
}

// Report is what a judged trace gives.
type Report struct {
	Findings []Finding
	Lines    int64
	Started  bool   // the trace holds the start of the target
	Error    string // why the trace is no evidence ("" when sound)
	// FirstKilled is the signal that killed the first traced process, if any
	// (strace re-raises it, so the observer's own death by it is the target's).
	FirstKilled string
}

// Read judges a whole trace. A line that does not parse, or a last line
// without its newline (a trace cut short), makes the report no evidence.
func (j *Judge) Read(r io.Reader) Report {
	br := bufio.NewReaderSize(r, 1<<16)
	var rep Report
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				rep.Error = fmt.Sprintf("the trace ends inside a line (cut short): %q", truncate(line))
				break
			}
			if perr := j.Feed(line[:len(line)-1]); perr != nil {
				rep.Error = perr.Error()
				break
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rep.Error = fmt.Sprintf("unable to read the trace: %v", err)
			break
		}
	}
	fin := j.Finish()
	fin.Error = rep.Error
	if fin.Error == "" && !fin.Started {
		fin.Error = "the trace holds no start of the target"
	}
	return fin
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func (j *Judge) init() {
	if j.procs == nil {
		j.procs = map[int]*proc{}
		j.pending = map[int]Line{}
		j.found = map[findingKey]int{}
		j.killed = map[int]string{}
		j.fds = map[string]Fd{}
	}
}

// Feed judges one line (without its newline).
func (j *Judge) Feed(b []byte) error {
	j.init()
	j.lines++
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	l, err := ParseLine(b)
	if err != nil {
		return err
	}
	if j.firstPid == 0 {
		j.firstPid = l.Pid
		j.procs[l.Pid] = &proc{fs: &fsState{cwd: j.Cwd}}
	}
	p := j.proc(l.Pid)
	switch l.Kind {
	case KindSignal:
		return nil
	case KindExited, KindKilled:
		if l.Kind == KindKilled {
			j.killed[l.Pid] = l.Name
		}
		// A process that ended inside a call made it as far as it got.
		if u, ok := j.pending[l.Pid]; ok {
			delete(j.pending, l.Pid)
			j.call(p, l.Pid, u.Name, u.Args, Result{Unknown: true})
		}
		j.dropForker(l.Pid)
		return nil
	case KindPidChanged:
		// A thread's execve succeeded: judge it now; the thread carries
		// on as the leader's pid, where strace resumes the call.
		j.call(p, l.Pid, l.Name, l.Args, Result{})
		l.moved = true
		j.pending[l.Pid] = l
		return nil
	case KindSuperseded:
		// The leader is gone (a call it was inside made it as far as it
		// got); the thread that exec'd (l.Code) is the leader's pid now.
		if u, ok := j.pending[l.Pid]; ok && !u.moved {
			delete(j.pending, l.Pid)
			j.call(p, l.Pid, u.Name, u.Args, Result{Unknown: true})
		}
		j.dropForker(l.Pid)
		if t, ok := j.procs[l.Code]; ok {
			j.procs[l.Pid] = t
			delete(j.procs, l.Code)
		}
		if u, ok := j.pending[l.Code]; ok && u.moved {
			delete(j.pending, l.Code)
			j.pending[l.Pid] = u
		}
		return nil
	case KindUnfinished:
		j.pending[l.Pid] = l
		if isFork(l.Name) {
			j.forkers = append(j.forkers, l.Pid)
		}
		return nil
	case KindResumed:
		u, ok := j.pending[l.Pid]
		if ok && u.moved && u.Name == l.Name {
			// The exec a thread made, judged when its pid changed; strace
			// 6.1 prints a meaningless result here ("-1 (errno 1844…)").
			delete(j.pending, l.Pid)
			return nil
		}
		if !ok || u.Name != l.Name {
			// strace prints a resume only after its start; a resume
			// without one is a trace that lost lines.
			return syntax(b, "a resumed call that never started")
		}
		delete(j.pending, l.Pid)
		l.Args = u.Args + l.Args
	}
	res, ok := ParseResult(l.Ret)
	if !ok {
		return syntax(b, "bad result")
	}
	j.call(p, l.Pid, l.Name, l.Args, res)
	return nil
}

func isFork(name string) bool {
	switch name {
	case "clone", "clone3", "fork", "vfork":
		return true
	}
	return false
}

func (j *Judge) dropForker(pid int) {
	for i := len(j.forkers) - 1; i >= 0; i-- {
		if j.forkers[i] == pid {
			j.forkers = append(j.forkers[:i], j.forkers[i+1:]...)
			return
		}
	}
}

// proc returns the process, making one for a pid seen for the first time.
// A child can print before its parent's clone returns: it takes the working
// directory of the newest process still inside a fork.
func (j *Judge) proc(pid int) *proc {
	if p, ok := j.procs[pid]; ok {
		return p
	}
	p := &proc{fs: &fsState{}, inScope: j.started}
	if n := len(j.forkers); n > 0 {
		if parent, ok := j.procs[j.forkers[n-1]]; ok {
			p.fs.cwd = parent.fs.cwd
		}
	}
	j.procs[pid] = p
	return p
}

const (
	oWronly = 0x1
	oRdwr   = 0x2
	oCreat  = 0x40
	oTrunc  = 0x200
	cloneFS = 0x200
	atEmpty = 0x1000
	msBind  = 0x1000
	atFdcwd = -100
)

var openFlagNames = map[string]uint64{
	"O_RDONLY": 0, "O_WRONLY": oWronly, "O_RDWR": oRdwr, "O_CREAT": oCreat, "O_TRUNC": oTrunc,
}

// pathSpec says where a syscall's paths are: argument indexes of a dirfd
// (-1 for none, the cwd) and of the path, and the op.
type pathSpec struct {
	dirfd, path int
	op          grant.Op
}

// writes are the syscalls that change the file system at their paths.
var specs = map[string][]pathSpec{
	"open": {{-1, 0, grant.OpRead}}, "openat": {{0, 1, grant.OpRead}}, "openat2": {{0, 1, grant.OpRead}},
	"creat": {{-1, 0, grant.OpWrite}}, "open_by_handle_at": nil,
	// Metadata only (grant.OpLookup): allowed on the way to a readable place.
	"stat": {{-1, 0, grant.OpLookup}}, "lstat": {{-1, 0, grant.OpLookup}}, "newfstatat": {{0, 1, grant.OpLookup}},
	"fstatat64": {{0, 1, grant.OpLookup}}, "statx": {{0, 1, grant.OpLookup}}, "statfs": {{-1, 0, grant.OpLookup}},
	"access": {{-1, 0, grant.OpLookup}}, "faccessat": {{0, 1, grant.OpLookup}}, "faccessat2": {{0, 1, grant.OpLookup}},
	"readlink": {{-1, 0, grant.OpLookup}}, "readlinkat": {{0, 1, grant.OpLookup}},
	"getxattr": {{-1, 0, grant.OpLookup}}, "lgetxattr": {{-1, 0, grant.OpLookup}},
	"listxattr": {{-1, 0, grant.OpLookup}}, "llistxattr": {{-1, 0, grant.OpLookup}},
	"chdir": {{-1, 0, grant.OpLookup}}, "chroot": {{-1, 0, grant.OpRead}},
	"execve": {{-1, 0, grant.OpExec}}, "execveat": {{0, 1, grant.OpExec}},
	"mkdir": {{-1, 0, grant.OpWrite}}, "mkdirat": {{0, 1, grant.OpWrite}},
	"mknod": {{-1, 0, grant.OpWrite}}, "mknodat": {{0, 1, grant.OpWrite}},
	"unlink": {{-1, 0, grant.OpWrite}}, "unlinkat": {{0, 1, grant.OpWrite}}, "rmdir": {{-1, 0, grant.OpWrite}},
	"rename":   {{-1, 0, grant.OpWrite}, {-1, 1, grant.OpWrite}},
	"renameat": {{0, 1, grant.OpWrite}, {2, 3, grant.OpWrite}}, "renameat2": {{0, 1, grant.OpWrite}, {2, 3, grant.OpWrite}},
	"link": {{-1, 0, grant.OpRead}, {-1, 1, grant.OpWrite}}, "linkat": {{0, 1, grant.OpRead}, {2, 3, grant.OpWrite}},
	"symlink": {{-1, 1, grant.OpWrite}}, "symlinkat": {{1, 2, grant.OpWrite}},
	"chmod": {{-1, 0, grant.OpWrite}}, "fchmodat": {{0, 1, grant.OpWrite}},
	"chown": {{-1, 0, grant.OpWrite}}, "lchown": {{-1, 0, grant.OpWrite}}, "fchownat": {{0, 1, grant.OpWrite}},
	"truncate": {{-1, 0, grant.OpWrite}}, "utime": {{-1, 0, grant.OpWrite}}, "utimes": {{-1, 0, grant.OpWrite}},
	"utimensat": {{0, 1, grant.OpWrite}}, "futimesat": {{0, 1, grant.OpWrite}},
	"setxattr": {{-1, 0, grant.OpWrite}}, "lsetxattr": {{-1, 0, grant.OpWrite}},
	"removexattr": {{-1, 0, grant.OpWrite}}, "lremovexattr": {{-1, 0, grant.OpWrite}},
	"acct": {{-1, 0, grant.OpWrite}}, "swapon": {{-1, 0, grant.OpWrite}}, "swapoff": {{-1, 0, grant.OpWrite}},
	"umount2": {{-1, 0, grant.OpWrite}}, "pivot_root": {{-1, 0, grant.OpMount}, {-1, 1, grant.OpMount}},
	"inotify_add_watch": {{-1, 1, grant.OpRead}}, "fanotify_mark": nil,
	"name_to_handle_at": {{0, 1, grant.OpRead}}, "mount_setattr": {{0, 1, grant.OpMount}},
	"open_tree": {{0, 1, grant.OpMount}}, "move_mount": {{0, 1, grant.OpMount}},
}

// noFollow are the calls that do not follow a link in the last component.
var noFollow = map[string]bool{"lstat": true, "readlink": true, "readlinkat": true, "symlink": true, "symlinkat": true,
	"unlink": true, "unlinkat": true, "rmdir": true, "rename": true, "renameat": true, "renameat2": true, "link": true,
	"linkat": true, "mkdir": true, "mkdirat": true, "mknod": true, "mknodat": true, "lchown": true, "lgetxattr": true,
	"llistxattr": true, "lsetxattr": true, "lremovexattr": true}

// atNoFollow gives the argument index of the flags of the calls that take
// AT_SYMLINK_NOFOLLOW: with it they work on a link in the last component
// itself, like noFollow's calls.
var atNoFollow = map[string]int{"newfstatat": 3, "fstatat64": 3, "statx": 2, "fchownat": 4, "utimensat": 3,
	"faccessat2": 3, "fchmodat2": 3}

const atSymlinkNofollow = 0x100

// atSymlinkFollow makes linkat follow a link in its old path.
const atSymlinkFollow = 0x400

// noFollows says whether the call works on a link in the last component
// itself rather than on what it leads to.
func noFollows(name string, args []string) bool {
	if noFollow[name] {
		if name == "linkat" && len(args) > 4 {
			f, ok := ParseFlags(args[4], map[string]uint64{"AT_SYMLINK_FOLLOW": atSymlinkFollow})
			return ok && f&atSymlinkFollow == 0
		}
		return true
	}
	if i, ok := atNoFollow[name]; ok && i < len(args) {
		f, fok := ParseFlags(args[i], map[string]uint64{"AT_SYMLINK_NOFOLLOW": atSymlinkNofollow, "AT_EMPTY_PATH": atEmpty})
		return fok && f&atSymlinkNofollow != 0
	}
	return false
}

// notFound are the errors of a lookup that reached no file.
var notFound = map[string]bool{"ENOENT": true, "ENOTDIR": true, "EFAULT": true, "EBADF": true, "ENAMETOOLONG": true, "EINVAL": true}

// refused are the errors of a connection the kernel refused (spec 001).
var refused = map[string]bool{"ECONNREFUSED": true, "ENOENT": true, "ENOTDIR": true, "EACCES": true, "EPERM": true,
	"ENOTSOCK": true, "EPROTOTYPE": true, "EFAULT": true, "EBADF": true, "EINVAL": true, "ENAMETOOLONG": true, "EAFNOSUPPORT": true,
	"EISCONN": true, "ELOOP": true}

func (j *Judge) call(p *proc, pid int, name, argText string, res Result) {
	args := SplitArgs(argText)
	j.track(p, pid, name, args, res)
	if name == "execve" || name == "execveat" {
		if !j.started && !res.Unknown && res.Errno == "" && j.isTarget(name, args) {
			j.started, j.targetAt = true, pid
			p.inScope = true
		}
	}
	if !p.inScope {
		return
	}
	switch name {
	case "connect", "sendto", "sendmsg", "sendmmsg":
		j.connect(pid, name, args, res)
		return
	case "move_mount":
		j.moveMount(p, args, res)
	case "umount2", "umount":
		if len(j.binds) > 0 && !res.Unknown && res.Errno == "" && len(args) > 0 {
			if v, _, ok := Unquote(args[0]); ok && v != "" {
				to, _ := j.walkLinks(join(p.fs.cwd, v))
				delete(j.binds, to)
			}
		}
	case "mount":
		j.mount(p, pid, name, args, res)
		return
	}
	if !res.Unknown && notFound[res.Errno] {
		return
	}
	for i, s := range specs[name] {
		op := s.op
		if (name == "open" || name == "openat") && len(args) > s.path+1 {
			if f, ok := ParseFlags(args[s.path+1], openFlagNames); !ok || f&(oWronly|oRdwr|oCreat|oTrunc) != 0 {
				op = grant.OpWrite
			}
		}
		if name == "openat2" && len(args) > 2 && hasWriteHow(args[2]) {
			op = grant.OpWrite
		}
		// A link's new name is made, never followed.
		newName := i == 1 && (name == "link" || name == "linkat")
		j.judgePath(p, pid, name, args, s, op, newName, res)
	}
}

func hasWriteHow(s string) bool {
	i := strings.Index(s, "flags=")
	if i < 0 {
		return true
	}
	v := s[i+len("flags="):]
	if k := strings.IndexAny(v, ",}"); k >= 0 {
		v = v[:k]
	}
	f, ok := ParseFlags(v, openFlagNames)
	return !ok || f&(oWronly|oRdwr|oCreat|oTrunc) != 0
}

// isTarget says whether an execve's argv is one of the target's.
func (j *Judge) isTarget(name string, args []string) bool {
	if len(j.Targets) == 0 {
		return true
	}
	i := 1
	if name == "execveat" {
		i = 2
	}
	if len(args) <= i {
		return false
	}
	a := strings.TrimSpace(args[i])
	if !strings.HasPrefix(a, "[") || !strings.HasSuffix(a, "]") {
		return false
	}
	elems := SplitArgs(a[1 : len(a)-1])
	for _, want := range j.Targets {
		if sameArgv(elems, want) {
			return true
		}
	}
	return false
}

// sameArgv compares printed argv elements with an argv; an element strace
// cut (longer than -s) matches by its prefix.
func sameArgv(elems, want []string) bool {
	if len(elems) != len(want) {
		return false
	}
	for k, e := range elems {
		v, cut, ok := Unquote(e)
		if !ok || (cut && !strings.HasPrefix(want[k], v)) || (!cut && v != want[k]) {
			return false
		}
	}
	return true
}

// track follows working directories: AT_FDCWD's decoration names the cwd,
// chdir and fchdir change it, clone shares it (CLONE_FS) or copies it.
func (j *Judge) track(p *proc, pid int, name string, args []string, res Result) {
	if len(args) > 0 {
		if s, ok := specs[name]; ok && len(s) > 0 && s[0].dirfd == 0 {
			if fd, ok := j.fd(args[0]); ok && fd.N == atFdcwd && fd.Path != "" {
				p.fs.cwd = fd.Path
			}
		}
	}
	ok := !res.Unknown && res.Errno == ""
	if ok {
		j.linkEvent(p, name, args)
	}
	switch name {
	case "chdir":
		if ok && len(args) > 0 {
			if v, _, uok := Unquote(args[0]); uok {
				p.fs.cwd = join(p.fs.cwd, v)
			}
		}
	case "fchdir":
		if ok && len(args) > 0 {
			if fd, fok := j.fd(args[0]); fok && fd.Path != "" {
				p.fs.cwd = fd.Path
			}
		}
	case "clone", "clone3", "fork", "vfork":
		j.dropForker(pid)
		if !ok || res.Val <= 0 {
			return
		}
		child := int(res.Val)
		if res.NsPid != 0 {
			child = res.NsPid
		}
		shared := false
		if name == "clone" || name == "clone3" {
			for _, a := range args {
				a = strings.TrimPrefix(strings.TrimSpace(a), "{")
				if v, found := strings.CutPrefix(a, "flags="); found {
					if k := strings.IndexAny(v, ",}"); k >= 0 {
						v = v[:k]
					}
					if f, fok := ParseFlags(v, map[string]uint64{"CLONE_FS": cloneFS}); fok && f&cloneFS != 0 {
						shared = true
					}
				}
			}
		}
		c, seen := j.procs[child]
		if !seen {
			c = &proc{fs: &fsState{}, inScope: p.inScope || j.started}
			j.procs[child] = c
		}
		if p.inScope {
			c.inScope = true
		}
		if shared {
			c.fs = p.fs
		} else if !seen || c.fs.cwd == "" {
			c.fs = &fsState{cwd: p.fs.cwd}
		}
	}
}

// base is the directory a path argument is relative to.
func (j *Judge) base(p *proc, args []string, s pathSpec) (string, bool) {
	if s.dirfd < 0 || s.dirfd >= len(args) {
		return p.fs.cwd, p.fs.cwd != ""
	}
	fd, ok := j.fd(args[s.dirfd])
	if !ok {
		return "", false
	}
	if fd.N == atFdcwd && fd.Path == "" {
		return p.fs.cwd, p.fs.cwd != ""
	}
	return fd.Path, strings.HasPrefix(fd.Path, "/")
}

func (j *Judge) judgePath(p *proc, pid int, name string, args []string, s pathSpec, op grant.Op, newName bool, res Result) {
	if s.path >= len(args) {
		return
	}
	spelled, _, ok := Unquote(args[s.path])
	if !ok {
		// A path strace could not read (a bad pointer) names no file.
		return
	}
	base, known := j.base(p, args, s)
	var cands []string
	switch {
	case spelled == "" && s.dirfd >= 0:
		// AT_EMPTY_PATH (MOVE_MOUNT_F_EMPTY_PATH…): the descriptor itself
		// (an exec of a descriptor); without it an empty path is ENOENT,
		// which was skipped above.
		if name == "execveat" {
			// An exec of a descriptor itself is listed: it leads anywhere.
			j.judge(pid, name, spelled, []string{"/proc/self/fd/" + strings.TrimSpace(strings.SplitN(args[s.dirfd], "<", 2)[0])}, op, res)
			return
		}
		if fd, fok := j.fd(args[s.dirfd]); fok && fd.Path != "" {
			if !strings.HasPrefix(fd.Path, "/") {
				// A pipe, socket or anonymous inode (strace -y prints
				// pipe:[n]): no file of the file system.
				return
			}
			cands = append(cands, fd.Path)
		} else {
			cands = append(cands, "/proc/self/fd/"+strings.TrimSpace(args[s.dirfd]))
		}
	case strings.HasPrefix(spelled, "/"):
		cands = append(cands, spelled, filepath.Clean(spelled))
	case known:
		raw := strings.TrimSuffix(base, "/") + "/" + spelled
		cands = append(cands, raw, filepath.Clean(raw))
	default:
		// Relative to a directory the trace does not name: judge it as
		// unresolved rather than skip it.
		cands = append(cands, spelled)
	}
	real := ""
	if op != grant.OpExec && res.Fd.Path != "" && strings.HasPrefix(res.Fd.Path, "/") &&
		(name == "open" || name == "openat" || name == "openat2" || name == "creat") {
		real = j.mapped(res.Fd.Path) // the file the kernel reached, after every link
	}
	// Whether the last component's link is followed matters only when the
	// trace names no file reached.
	nf := real == "" && (newName || noFollows(name, args))
	j.judgeReal(pid, name, nf, spelled, cands, real, op, res)
}

func join(base, p string) string {
	if strings.HasPrefix(p, "/") || base == "" {
		return filepath.Clean(p)
	}
	return filepath.Clean(base + "/" + p)
}

func resultText(res Result) string {
	switch {
	case res.Unknown:
		return "?"
	case res.Errno != "":
		return res.Errno
	}
	return "0"
}

func (j *Judge) mapped(p string) string {
	if j.Map != nil {
		return j.Map(p)
	}
	return p
}

// judge lists the access when any of its spellings is denied (a connection's
// path as given and its lexical form).
func (j *Judge) judge(pid int, name, spelled string, cands []string, op grant.Op, res Result) {
	for _, c := range cands {
		host := j.mapped(c)
		if d := j.Table.Access(host, op); !d.Allowed() {
			j.list(pid, name, spelled, host, op, res, d)
			return
		}
	}
}

// judgeReal judges a file access by the file it reached and the spellings
// that reached it. The real path is the one -y printed for the returned
// descriptor, else Real's answer. The access is listed when
//   - the real file is denied (a link of the target's leads outside), or
//   - a spelling is denied by a rule that speaks to it (a hidden place, a
//     /proc magic link: they lead anywhere, whatever they led to this time), or
//   - no real path is known and a spelling is denied.
//
// A spelling that no rule matches but that reached an allowed file (/lib/x
// reaching /usr/lib/x through the system's own link) is not listed. An exec
// is judged by the exec table with the spelling it was started by and its
// real path (Exec), or by Access when Exec is nil.
func (j *Judge) judgeReal(pid int, name string, noFollow bool, spelled string, cands []string, real string, op grant.Op, res Result) {
	if real == "" && strings.HasPrefix(cands[0], "/") {
		if noFollow {
			// The call works on the last component itself (a link it
			// makes or removes): only the directories are followed.
			dir, last := filepath.Split(strings.TrimSuffix(cands[0], "/"))
			if d := j.realOf(dir); d != "" && last != "" && last != "." && last != ".." {
				real = filepath.Join(d, last)
			}
		} else {
			real = j.realOf(cands[0])
		}
	}
	if op == grant.OpExec && j.Exec != nil && len(cands) > 0 {
		path := j.mapped(cands[len(cands)-1])
		r := real
		if r == "" {
			r = path
		}
		if d := j.Exec.Decide(grant.FileProgram(path, r)); !d.Allowed() {
			j.list(pid, name, spelled, path, op, res, d)
		}
		return
	}
	if real != "" {
		if d := j.Table.Access(real, op); !d.Allowed() {
			j.list(pid, name, spelled, real, op, res, d)
			return
		}
	}
	for _, c := range cands {
		host := j.mapped(c)
		d := j.Table.Access(host, op)
		if d.Allowed() || (real != "" && d.Rule.Kind == grant.RuleNone) {
			continue
		}
		j.list(pid, name, spelled, host, op, res, d)
		return
	}
}

// list records a denied access once per (path, op), counting repeats. A
// denied lookup is listed as a read (the spec's ops are read, write, exec,
// connect and mount); its rule still says it was a lookup.
func (j *Judge) list(pid int, name, spelled, host string, op grant.Op, res Result, d grant.Decision) {
	if op == grant.OpLookup {
		op = grant.OpRead
	}
	k := findingKey{host, op}
	if i, ok := j.found[k]; ok {
		j.out[i].Count++
		return
	}
	f := Finding{Path: host, Op: op, Syscall: name, Pid: pid, Result: resultText(res), Reason: d.Reason, Count: 1}
	if d.Rule.Kind != grant.RuleNone {
		f.Rule = d.String()
	}
	if spelled != host {
		f.Spelled = spelled
	}
	j.found[k] = len(j.out)
	j.out = append(j.out, f)
}

// connect lists a connection or datagram to a Unix socket file that the
// kernel did not refuse.
func (j *Judge) connect(pid int, name string, args []string, res Result) {
	if !res.Unknown && refused[res.Errno] {
		return
	}
	p := j.procs[pid]
	for _, a := range args {
		for rest := a; ; {
			i := strings.Index(rest, "sun_path=")
			if i < 0 {
				break
			}
			rest = rest[i+len("sun_path="):]
			if strings.HasPrefix(rest, "@") {
				continue // abstract: no file
			}
			end, ok := skipString([]byte(rest), 0)
			if !ok || !strings.HasPrefix(rest, `"`) {
				break
			}
			v, _, uok := Unquote(rest[:end+1])
			rest = rest[end+1:]
			if !uok || v == "" {
				continue
			}
			path := v
			cands := []string{v, filepath.Clean(v)}
			if !strings.HasPrefix(v, "/") {
				path = join(p.fs.cwd, v)
				if p.fs.cwd == "" {
					cands = []string{v}
				} else {
					cands = []string{strings.TrimSuffix(p.fs.cwd, "/") + "/" + v, path}
				}
			}
			j.judgeReal(pid, name, false, v, cands, "", grant.OpConnect, res)
		}
	}
}

// rawJoin is p relative to base, ".." left for walkLinks to resolve as
// the kernel would (after a link, the parent of its target).
func rawJoin(base, p string) string {
	if strings.HasPrefix(p, "/") || base == "" {
		return p
	}
	return strings.TrimSuffix(base, "/") + "/" + p
}

// bind records a bind mount the target made: paths beneath the
// destination are the source's files from now on.
func (j *Judge) bind(src, dst string) {
	from, _ := j.walkLinks(src)
	if b, ok := j.bound(from); ok {
		from = b
	}
	to, _ := j.walkLinks(dst)
	if to == from {
		return
	}
	if j.binds == nil {
		j.binds = map[string]string{}
	}
	j.binds[to] = from
}

// moveMount records the new mount API's bind mount: open_tree(src,
// OPEN_TREE_CLONE) returns a descriptor -y names by the source's path, and
// move_mount(fd, "", dirfd, dst, MOVE_MOUNT_F_EMPTY_PATH) attaches it.
func (j *Judge) moveMount(p *proc, args []string, res Result) {
	if res.Unknown || res.Errno != "" || len(args) < 4 {
		return
	}
	if from, _, ok := Unquote(args[1]); !ok || from != "" {
		return
	}
	fd, ok := j.fd(args[0])
	if !ok || !strings.HasPrefix(fd.Path, "/") {
		return
	}
	dst, _, ok := Unquote(args[3])
	if !ok || dst == "" {
		return
	}
	if !strings.HasPrefix(dst, "/") {
		base, known := j.base(p, args, pathSpec{dirfd: 2})
		if !known {
			return
		}
		dst = rawJoin(base, dst)
	}
	j.bind(fd.Path, dst)
}

// mount lists a bind mount whose source is outside the places a target may
// write (spec 001: "listed by its source").
func (j *Judge) mount(p *proc, pid int, name string, args []string, res Result) {
	if !res.Unknown && notFound[res.Errno] || len(args) < 4 {
		return
	}
	flags, ok := ParseFlags(args[3], map[string]uint64{"MS_BIND": msBind})
	if ok && flags&msBind == 0 {
		return
	}
	src, _, uok := Unquote(args[0])
	if !uok || src == "" {
		return
	}
	path := join(p.fs.cwd, src)
	if !res.Unknown && res.Errno == "" {
		// Later paths beneath the destination are the source's files.
		if dst, _, dok := Unquote(args[1]); dok && dst != "" {
			j.bind(rawJoin(p.fs.cwd, src), rawJoin(p.fs.cwd, dst))
		}
	}
	var hosts []string
	if r := j.realOf(rawJoin(p.fs.cwd, src)); r != "" {
		// Where the source really is: after the target's links and binds
		// (realOf gives the host's view).
		hosts = append(hosts, r)
	}
	hosts = append(hosts, j.mapped(src), j.mapped(path))
	for _, host := range hosts {
		if d := j.Table.Access(host, grant.OpConnect); d.Allowed() {
			continue
		}
		k := findingKey{host, grant.OpMount}
		if i, seen := j.found[k]; seen {
			j.out[i].Count++
			return
		}
		f := Finding{Path: host, Op: grant.OpMount, Syscall: name, Pid: pid, Result: resultText(res),
			Reason: "a bind mount of a source outside the workspace, call directories and home", Count: 1}
		if src != host {
			f.Spelled = src
		}
		j.found[k] = len(j.out)
		j.out = append(j.out, f)
		return
	}
}

// Finish judges the calls still waiting when the trace ended (a call the
// end of the run interrupted made it as far as it got) and returns the report.
func (j *Judge) Finish() Report {
	j.init()
	pids := make([]int, 0, len(j.pending))
	for pid := range j.pending {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		u := j.pending[pid]
		delete(j.pending, pid)
		j.call(j.proc(pid), pid, u.Name, u.Args, Result{Unknown: true})
	}
	return Report{Findings: j.out, Lines: j.lines, Started: j.started, FirstKilled: j.killed[j.firstPid]}
}
