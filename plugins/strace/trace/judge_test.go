package trace

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/core/grant"
)

// allowUnder allows every op beneath its prefixes, like a table with a
// workspace; /proc/self/root is denied by a rule that speaks, like the
// grant package's magic-link rule.
type allowUnder []string

func (a allowUnder) Access(p string, op grant.Op) grant.Decision {
	d := grant.Decision{Subject: p, Op: op, Verdict: grant.Deny, Reason: "no match denies"}
	if strings.HasPrefix(p, "/proc/self/root") {
		d.Rule = grant.Rule{Kind: grant.RuleSpecial}
		return d
	}
	for _, x := range a {
		if p == x || strings.HasPrefix(p, x+"/") {
			d.Verdict = grant.Allow
		}
	}
	return d
}

func run(t *testing.T, lines ...string) Report {
	t.Helper()
	j := &Judge{Table: allowUnder{"/ws", "/usr", "/bin", "/lib"}, Cwd: "/ws"}
	rep := j.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	return rep
}

const start = `10  execve("/bin/t", ["t"], 0x0 /* 1 vars */) = 0`

func paths(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Op.String()+" "+f.Path)
	}
	return out
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"ungranted read", []string{start, `10  openat(-100</ws>, "/etc/shadow", 0) = 3</etc/shadow>`}, []string{"read /etc/shadow"}},
		{"granted read", []string{start, `10  openat(-100</ws>, "a", 0) = 3</ws/a>`}, nil},
		{"not found", []string{start, `10  openat(-100</ws>, "/etc/x", 0) = -1 ENOENT (No such file or directory)`,
			`10  stat("/etc/y/z", 0x1) = -1 ENOTDIR (Not a directory)`}, nil},
		{"refused", []string{start, `10  openat(-100</ws>, "/etc/x", 0) = -1 EACCES (Permission denied)`,
			`10  mkdir("/etc/d", 0777) = -1 EROFS (Read-only file system)`}, []string{"read /etc/x", "write /etc/d"}},
		{"write by flags", []string{start, `10  openat(-100</ws>, "/etc/w", 0x241, 0666) = 3</etc/w>`}, []string{"write /etc/w"}},
		{"write into the workspace", []string{start, `10  openat(-100</ws>, "w", 0x241, 0666) = 3</ws/w>`}, nil},
		{"before the start", []string{`10  openat(-100</>, "/etc/shadow", 0) = 3</etc/shadow>`, `10  mount("/etc", "/newroot/etc", NULL, 0x1000, NULL) = 0`, start}, nil},
		{"no start", []string{`10  openat(-100</>, "/etc/shadow", 0) = 3</etc/shadow>`}, nil},
		{"relative after chdir", []string{start, `10  chdir("/etc") = 0`, `10  stat("passwd", 0x1) = 0`}, []string{"read /etc", "read /etc/passwd"}},
		{"relative after fchdir", []string{start, `10  fchdir(3</etc>) = 0`, `10  stat("passwd", 0x1) = 0`}, []string{"read /etc/passwd"}},
		{"dirfd", []string{start, `10  openat(4</etc>, "passwd", 0) = 3</etc/passwd>`}, []string{"read /etc/passwd"}},
		{"link to the outside", []string{start, `10  openat(-100</ws>, "lnk", 0) = 3</etc/passwd>`}, []string{"read /etc/passwd"}},
		{"system link", []string{start, `10  openat(-100</ws>, "/lib/libc.so", 0) = 3</usr/lib/libc.so>`}, nil},
		{"proc self root", []string{start, `10  openat(-100</ws>, "/proc/self/root/ws/a", 0) = 3</ws/a>`}, []string{"read /proc/self/root/ws/a"}},
		{"dotdot", []string{start, `10  stat("/ws/../etc/passwd", 0x1) = 0`}, []string{"read /etc/passwd"}},
		{"child inherits cwd", []string{start, `10  chdir("/etc") = 0`, `10  vfork( <unfinished ...>`, `11  stat("passwd", 0x1) = 0`,
			`10  <... vfork resumed>) = 11`}, []string{"read /etc", "read /etc/passwd"}},
		{"clone in a pid namespace", []string{start, `10  chdir("/etc") = 0`,
			`10  clone(child_stack=NULL, flags=0x1200000|17) = 2 /* 12 in strace's PID NS */`, `10  chdir("/ws") = 0`, `12  stat("passwd", 0x1) = 0`}, []string{"read /etc", "read /etc/passwd"}},
		{"threads share cwd", []string{start, `10  clone3({flags=0x3d0f00, exit_signal=0} => {parent_tid=[13]}, 88) = 13`,
			`13  chdir("/etc") = 0`, `10  stat("passwd", 0x1) = 0`}, []string{"read /etc", "read /etc/passwd"}},
		{"fork copies cwd", []string{start, `10  clone(child_stack=NULL, flags=0x1200000|17) = 14`,
			`14  chdir("/etc") = 0`, `10  stat("passwd", 0x1) = 0`}, []string{"read /etc"}},
		{"unfinished at the end", []string{start, `10  openat(-100</ws>, "/etc/fifo", 0 <unfinished ...>`}, []string{"read /etc/fifo"}},
		{"killed inside a call", []string{start, `10  openat(-100</ws>, "/etc/fifo", 0 <unfinished ...>`, `10  +++ killed by SIGKILL +++`}, []string{"read /etc/fifo"}},
		{"exec denied", []string{start, `10  execve("/opt/evil", ["evil"], 0x0 /* 1 vars */) = 0`}, []string{"exec /opt/evil"}},
		{"exec of a descriptor", []string{start, `10  execveat(3</ws/a>, "", [""], 0x0 /* 1 vars */, 0x1000) = 0`}, []string{"exec /proc/self/fd/3"}},
		{"connect", []string{start,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/run/host.sock"}, 110) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/run/refused.sock"}, 110) = -1 ECONNREFUSED (Connection refused)`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path=@"abstract"}, 110) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/mine.sock"}, 110) = 0`,
			`10  sendto(4<socket:[2]>, "x", 1, 0, {sa_family=0x1, sun_path="/run/full.sock"}, 14) = -1 EAGAIN (Resource temporarily unavailable)`,
			`10  sendmsg(4<socket:[2]>, {msg_name={sa_family=0x1, sun_path="/run/msg.sock"}, msg_namelen=16}, 0) = 1`,
			`10  connect(5<socket:[3]>, {sa_family=0x1, sun_path="/run/wait.sock"}, 110 <unfinished ...>`,
		}, []string{"connect /run/host.sock", "connect /run/full.sock", "connect /run/msg.sock", "connect /run/wait.sock"}},
		{"bind mount", []string{start, `10  mount("/etc", "/ws/m", NULL, 0x1000, NULL) = 0`, `10  mount("proc", "/ws/p", "proc", 0xe, NULL) = 0`,
			`10  mount("/ws/a", "/ws/b", NULL, 0x1000, NULL) = 0`}, []string{"mount /etc"}},
		{"descriptor that is no file", []string{start, `10  newfstatat(1<pipe:[123]>, "", {st_mode=010600, ...}, 0x1000) = 0`,
			`10  newfstatat(3<socket:[9]>, "", {st_mode=0140777, ...}, 0x1000) = 0`}, nil},
		{"connect through a link the target made and removed", []string{start,
			`10  symlinkat("/run/host.sock", -100</ws>, "s") = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="s"}, 110) = 0`,
			`10  unlinkat(-100</ws>, "s", 0) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/s"}, 110) = 0`}, []string{"connect /run/host.sock"}},
		{"dotdot after a link", []string{start, `10  symlink("/etc/ssl", "/ws/l") = 0`, `10  stat("/ws/l/../passwd", 0x1) = 0`}, []string{"read /etc/passwd"}},
		{"link in a renamed directory", []string{start, `10  symlink("/etc/passwd", "/ws/d/l") = 0`, `10  rename("/ws/d", "/ws/e") = 0`,
			`10  stat("/ws/e/l", 0x1) = 0`, `10  stat("/ws/d/l", 0x1) = 0`}, []string{"read /etc/passwd"}},
		{"relative link", []string{start, `10  symlink("../../etc/x", "/ws/d/l") = 0`, `10  stat("/ws/d/l", 0x1) = 0`}, []string{"read /etc/x"}},
		{"exec through a link", []string{start, `10  symlink("/opt/evil", "/ws/run") = 0`, `10  execve("/ws/run", ["run"], 0x0 /* 1 vars */) = 0`}, []string{"exec /opt/evil"}},
		{"AT_SYMLINK_NOFOLLOW judges the link itself", []string{start, `10  symlink("/opt/secret", "/ws/l") = 0`,
			`10  newfstatat(-100</ws>, "/ws/l", {st_mode=S_IFLNK|0777, ...}, 0x100) = 0`,
			`10  statx(-100</ws>, "l", 0x100|0x800, 0x7ff, {stx_mask=0x17ff, ...}) = 0`,
			`10  fchownat(-100</ws>, "l", 0, 0, 0x100) = 0`,
			`10  statx(-100</ws>, "/ws/l", |0x900, 0xfff, {stx_mask=0x1fff, ...}) = 0`,
			`10  newfstatat(-100</ws>, "/ws/l", {st_mode=S_IFREG|0644, ...}, 0) = 0`}, []string{"read /opt/secret"}},
		{"AT_SYMLINK_NOFOLLOW on a link to the outside, then followed", []string{start, `10  symlink("/opt/secret", "/ws/l") = 0`,
			`10  statx(-100</ws>, "l", 0, 0x7ff, {stx_mask=0x17ff, ...}) = 0`}, []string{"read /opt/secret"}},
		{"connect through a hard link the target made", []string{start,
			`10  link("/run/host.sock", "/ws/h") = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/h"}, 110) = 0`}, []string{"read /run/host.sock", "connect /run/host.sock"}},
		{"connect through a hard link of a followed symlink", []string{start,
			`10  symlink("/run/s.sock", "/ws/s") = 0`,
			`10  linkat(-100</ws>, "s", -100</ws>, "h", 0x400) = 0`,
			`10  unlink("/ws/s") = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="h"}, 110) = 0`}, []string{"read /run/s.sock", "connect /run/s.sock"}},
		{"connect through a hard link of a symlink itself", []string{start,
			`10  symlink("/run/s.sock", "/ws/s") = 0`,
			`10  linkat(-100</ws>, "s", -100</ws>, "h", 0) = 0`,
			`10  unlink("/ws/s") = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/h"}, 110) = 0`}, []string{"connect /run/s.sock"}},
		{"connect through a bind mount destination", []string{start,
			`10  mount("/run/dir", "/ws/m", NULL, 0x1000, NULL) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/m/host.sock"}, 110) = 0`,
			`10  stat("/ws/m/../x", 0x1) = 0`,
			`10  umount2("/ws/m", 0) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/m/later.sock"}, 110) = 0`}, []string{"mount /run/dir", "connect /run/dir/host.sock"}},
		{"connect through a destination of the new mount API", []string{start,
			`10  open_tree(-100</ws>, "/run/dir", 0x1) = 3</run/dir>`,
			`10  move_mount(3</run/dir>, "", -100</ws>, "m", 0x4) = 0`,
			`10  connect(4<socket:[1]>, {sa_family=0x1, sun_path="/ws/m/host.sock"}, 110) = 0`}, []string{"mount /run/dir", "connect /run/dir/host.sock"}},
		{"a bind mount after a link: .. leaves the link's target", []string{start,
			`10  symlink("/run/dir/sub", "/ws/l") = 0`,
			`10  mount("/ws/l/..", "/ws/m", NULL, 0x1000, NULL) = 0`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/m/host.sock"}, 110) = 0`}, []string{"mount /run/dir", "connect /run/dir/host.sock"}},
		{"a refused bind mount binds nothing", []string{start,
			`10  mount("/run/dir", "/ws/m", NULL, 0x1000, NULL) = -1 EPERM (Operation not permitted)`,
			`10  connect(3<socket:[1]>, {sa_family=0x1, sun_path="/ws/m/host.sock"}, 110) = 0`}, []string{"mount /run/dir"}},
		{"a thread ended inside an unknown call", []string{start, `11  ???( <unfinished ...>`, `11  +++ exited with 0 +++`,
			`10  openat(-100</ws>, "/etc/x", 0) = 3</etc/x>`}, []string{"read /etc/x"}},
		{"exec from a thread", []string{start,
			`10  clone3({flags=0x3d0f00, exit_signal=0} => {parent_tid=[11]}, 88) = 11`,
			`10  openat(-100</ws>, "/etc/fifo", 0 <unfinished ...>`,
			`11  execve("/opt/evil", ["evil"], 0x0 /* 1 vars */ <pid changed to 10 ...>`,
			`10  +++ superseded by execve in pid 11 +++`,
			`10  <... execve resumed>) = -1 (errno 18446744073709551595)`,
			`10  openat(-100</ws>, "/etc/x", 0) = 3</etc/x>`}, []string{"exec /opt/evil", "read /etc/fifo", "read /etc/x"}},
		{"hostile name", []string{start, `10  openat(-100<\x2f\x77\x73>, "\x2e\x2e\x2f\x61\x0a\x22\xff", 0) = 3<\x2f\x61\x0a\x22\xff>`}, []string{"read /a\n\"\xff"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := run(t, c.lines...)
			if c.name == "no start" {
				if rep.Started || rep.Error == "" {
					t.Fatalf("a trace without the target's start is evidence: %+v", rep)
				}
				return
			}
			if rep.Error != "" {
				t.Fatal(rep.Error)
			}
			got := paths(rep)
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("listed %q, want %q", got, c.want)
			}
		})
	}
}

func TestJudgeCounts(t *testing.T) {
	rep := run(t, start, `10  openat(-100</ws>, "/etc/x", 0) = 3</etc/x>`, `11  openat(-100</ws>, "/etc/x", 0) = 3</etc/x>`)
	if len(rep.Findings) != 1 || rep.Findings[0].Count != 2 || rep.Findings[0].Pid != 10 || rep.Findings[0].Syscall != "openat" {
		t.Fatalf("%+v", rep.Findings)
	}
}

func TestJudgeNoEvidence(t *testing.T) {
	for name, text := range map[string]string{
		"cut short":     start + "\n" + `10  openat(-100</ws>, "/etc/x", 0) = 3</e`,
		"garbage":       start + "\nnot a line\n",
		"orphan resume": start + "\n10  <... openat resumed>) = 0\n",
		"wrong resume":  start + "\n10  openat(-100</ws>, \"x\", 0 <unfinished ...>\n10  <... stat resumed>) = 0\n",
		"empty":         "",
		"only bwrap":    `10  execve("/usr/bin/bwrap", ["bwrap"], 0x0 /* 1 vars */) = 0` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			j := &Judge{Table: allowUnder{}, Targets: [][]string{{"t"}}}
			if name == "only bwrap" {
				j.Targets = [][]string{{"x"}}
			}
			if rep := j.Read(strings.NewReader(text)); rep.Error == "" {
				t.Fatalf("no error: %+v", rep)
			}
		})
	}
}

func TestTargetStartUnderBwrap(t *testing.T) {
	lines := []string{
		`20  execve("/usr/bin/bwrap", ["bwrap", "--", "sh", "-c", "x"], 0x0 /* 1 vars */) = 0`,
		`20  clone(child_stack=NULL, flags=0x30020000|17) = 21`,
		`21  mount("/oldroot/etc", "/newroot/etc", NULL, 0xd000, NULL) = 0`,
		`21  clone(child_stack=NULL, flags=0x1200000|17) = 2 /* 22 in strace's PID NS */`,
		`22  execve("/usr/local/bin/sh", ["sh", "-c", "x"], 0x0 /* 1 vars */) = -1 ENOENT (No such file or directory)`,
		`22  execve("/usr/bin/sh", ["sh", "-c", "x"], 0x0 /* 1 vars */) = 0`,
		`22  openat(-100</ws>, "/etc/shadow", 0) = 3</etc/shadow>`,
		`21  openat(-100</>, "/etc/bwrap-own", 0) = 3</etc/bwrap-own>`,
		`22  +++ exited with 0 +++`,
	}
	j := &Judge{Table: allowUnder{"/usr", "/ws"}, Targets: [][]string{{"sh", "-c", "x"}}}
	rep := j.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if rep.Error != "" || strings.Join(paths(rep), "|") != "read /etc/shadow" {
		t.Fatalf("%+v", rep)
	}
}

// Metadata lookups on the way to a granted place are not listed; a lookup
// of a hidden place, of a sibling, or a listing of an ancestor is.
func TestJudgeLookupOnTheWay(t *testing.T) {
	places := grant.Places{Workspace: "/ws/proj", Hidden: []string{"/ws/proj/eval", "/priv"}}
	tb, err := grant.Compile(places, grant.Tools{}, grant.Layer{Name: "pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{`10  execve("/ws/proj/t", ["t"], 0x0 /* 1 vars */) = 0`,
		`10  stat("/", {st_mode=S_IFDIR|0755, ...}) = 0`,
		`10  chdir("/ws") = 0`,
		`10  newfstatat(-100</ws>, "proj", {st_mode=S_IFDIR|0755, ...}, 0) = 0`,
		`10  access("/ws", 0x4) = 0`,
		`10  readlink("/ws", 0x7ffc, 4095) = -1 EINVAL (Invalid argument)`,
		`10  statfs("/", {f_type=0x794c7630, ...}) = 0`,
		`10  getxattr("/ws", "security.selinux", 0x0, 0) = -1 ENODATA (No data available)`,
		`10  chdir("/ws/proj") = 0`,
		`10  stat("..", {st_mode=S_IFDIR|0755, ...}) = 0`,
		`10  access("/ws/proj/eval", 0) = 0`,
		`10  stat("/priv", {st_mode=S_IFDIR|0700, ...}) = 0`,
		`10  lstat("/ws/other", {st_mode=S_IFDIR|0755, ...}) = 0`,
		`10  openat(-100</ws/proj>, "/ws", 0x90800) = 3</ws>`,
		`10  getdents64(3</ws>, 0x5 /* 4 entries */, 32768) = 112`,
		`10  readlink("/proc/self/fd/0", "/dev/pts/0", 4095) = 10`,
		`10  newfstatat(-100</ws/proj>, "/proc/self/root/etc", {st_mode=S_IFDIR|0755, ...}, 0) = 0`,
	}
	j := &Judge{Table: tb.Files, Cwd: "/ws/proj"}
	rep := j.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if rep.Error != "" {
		t.Fatal(rep.Error)
	}
	want := "read /ws/proj/eval|read /priv|read /ws/other|read /ws|read /proc/self/root/etc"
	if got := strings.Join(paths(rep), "|"); got != want {
		t.Fatalf("listed %q, want %q", got, want)
	}
	if r := rep.Findings[0].Rule; !strings.Contains(r, "lookup /ws/proj/eval") || !strings.Contains(r, "hidden") {
		t.Errorf("a denied lookup's rule says it was a lookup of a hidden place: %q", r)
	}
}
