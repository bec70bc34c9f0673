package bwrapplan

import (
	"errors"
	"fmt"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// The escape suite (issue 4 "Tests that must exist", sandbox-anchors §8):
// the helper's escape mode (helpers_linux_test.go) tries each attack under the planned bwrap; each test
// asserts the outcome and that the host did not change. The cases the
// view tests already cover (writes outside, links out, hard links, mknod,
// the home's secret, sockets, host processes, CapEff, the background job)
// are not repeated here.

// attack runs the helper's escape mode with the attacks in the sandbox and returns
// its lines by attack.
func (f *fixture) attack(t *testing.T, attacks ...string) map[string]string {
	t.Helper()
	f.spec.Path, f.spec.Argv = helperBin, append([]string{"escape", escapeArg}, attacks...)
	out, stderr, code := f.run(t)
	if code != 0 {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	return attackLines(t, out, attacks)
}

func attackLines(t *testing.T, out string, attacks []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		for _, a := range attacks {
			if r, ok := strings.CutPrefix(l, a+" "); ok {
				got[a] = r
			}
		}
	}
	if len(got) != len(attacks) {
		t.Fatalf("stdout %q lacks attacks of %q", out, attacks)
	}
	return got
}

func TestEscapeKernelSurface(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, "")
	mnt := filepath.Join(f.ws, "m")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	const (
		eperm  = "operation not permitted"
		enoent = "no such file or directory"
	)
	want := map[string]string{
		"umount:/proc":    eperm,  // no capability to reveal the outer /proc
		"mount:" + mnt:    eperm,  // nor to mount over the view
		"read:/dev/kmsg":  enoent, // the minimal /dev has no kmsg
		"read:/proc/kmsg": eperm,
		"syslog":          eperm,
	}
	attacks := []string{"userns"}
	for a := range want {
		attacks = append(attacks, a)
	}
	slices.Sort(attacks)
	got := f.attack(t, attacks...)
	// /proc/kmsg is root's (0400): another user meets EACCES before the
	// capability check.
	if os.Geteuid() != 0 && got["read:/proc/kmsg"] == "permission denied" {
		want["read:/proc/kmsg"] = "permission denied"
	}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("%s: %s, want %s", a, got[a], w)
		}
	}
	// --disable-userns: a nested user namespace is refused, and the facts say so.
	if got["userns"] == "ok" {
		t.Errorf("a nested user namespace was made")
	}
	if fc := planFacts(t, f); fc.NestedUserns != "disabled" {
		t.Errorf("facts nestedUserns %q", fc.NestedUserns)
	}
	if ents, _ := os.ReadDir(mnt); len(ents) != 0 {
		t.Errorf("the mount point changed on the host: %v", ents)
	}
}

// TestEscapePtrace tries PID 1 of the sandbox (bwrap's own reaper: the
// same uid, no capability, no-new-privs). The kernel's ptrace checks alone
// would let the target attach to it (gaining nothing bwrap's reaper has
// beyond the target's own rights, but able to stop it); the Landlock
// domain the shim enforces, whether it limits exec or not, puts PID 1
// outside the target's domain. Both a table Landlock can express and one
// it cannot (a name veto) are tried.
func TestEscapePtrace(t *testing.T) {
	needBwrap(t)
	if abi, err := bwrapshim.LandlockABI(); err != nil || abi < 1 {
		t.Skipf("the kernel has no Landlock: %v", err)
	}
	attacks := []string{"ptrace:1", "procmem:1", "signal:1"}
	want := map[string]string{"ptrace:1": "operation not permitted", "procmem:1": "permission denied", "signal:1": "operation not permitted"}
	for name, layer := range map[string]*pb.GrantLayer{
		"exec limited":   {Name: "pipeline", ExecAllow: keys(helperBin)},
		"isolation only": {Name: "pipeline", ExecAllow: keys(helperBin, "@system"), ExecDeny: keys("sudo")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "")
			f.spec.Grants = []*pb.GrantLayer{layer}
			fc := planFacts(t, f)
			if !strings.HasPrefix(fc.Landlock, "in force") {
				t.Fatalf("landlock %q", fc.Landlock)
			}
			got := f.attack(t, attacks...)
			abi, _ := bwrapshim.LandlockABI()
			for _, a := range attacks {
				if a == "signal:1" && abi < 6 {
					continue // signal scoping came with ABI 6
				}
				if got[a] != want[a] {
					t.Errorf("%s: %s, want %s (landlock %s)", a, got[a], want[a], fc.Landlock)
				}
			}
		})
	}
}

// TestEscapeTIOCSTI pushes a keystroke into the terminal the sandbox was
// started on (it is the controlling terminal of bwrap's session): bwrap's
// --new-session leaves the target without one, so TIOCSTI is refused and no
// keystroke reaches the host's input queue. The control run, bare on the
// same terminal, shows the keystroke would arrive.
func TestEscapeTIOCSTI(t *testing.T) {
	needBwrap(t)
	attacks := []string{"tiocsti:0", "tiocstihigh:0"}

	// control: bare, the terminal is the attacker's controlling terminal
	master, slave := openPty(t)
	cmd := exec.Command(helperBin, append([]string{escapeArg}, attacks...)...)
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bare: %v", err)
	}
	if got := attackLines(t, string(out), attacks); got["tiocsti:0"] != "ok" {
		t.Skipf("TIOCSTI is refused on this host even bare (%s): nothing to show", got["tiocsti:0"])
	}
	if q := pending(t, slave); q != "XX" {
		t.Fatalf("bare: the terminal's input queue holds %q, want XX", q)
	}
	master.Close()
	slave.Close()

	master, slave = openPty(t)
	defer master.Close()
	defer slave.Close()
	f := newFixture(t, "")
	f.stdin, f.ctty = slave, true
	got := f.attack(t, attacks...)
	for _, a := range attacks {
		if got[a] != "operation not permitted" {
			t.Errorf("%s: %s, want operation not permitted", a, got[a])
		}
	}
	if q := pending(t, slave); q != "" {
		t.Errorf("keystrokes reached the host's terminal: %q", q)
	}
}

// openPty opens a pseudo-terminal pair in raw mode (no line discipline: an
// injected byte is readable at once, and not echoed).
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	var unlock int32
	var n uint32
	if err := ioctl(m.Fd(), syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatal(err)
	}
	if err := ioctl(m.Fd(), syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tio syscall.Termios
	if err := ioctl(s.Fd(), syscall.TCGETS, unsafe.Pointer(&tio)); err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= syscall.ICANON | syscall.ECHO | syscall.ISIG
	tio.Cc[syscall.VMIN], tio.Cc[syscall.VTIME] = 0, 0
	if err := ioctl(s.Fd(), syscall.TCSETS, unsafe.Pointer(&tio)); err != nil {
		t.Fatal(err)
	}
	return m, s
}

func ioctl(fd uintptr, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// pending reads what the terminal's input queue holds, without waiting.
func pending(t *testing.T, s *os.File) string {
	t.Helper()
	fd := int(s.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	defer syscall.SetNonblock(fd, false)
	buf := make([]byte, 64)
	n, err := syscall.Read(fd, buf)
	if n <= 0 || err != nil {
		if err != nil && !errors.Is(err, syscall.EAGAIN) {
			t.Fatal(err)
		}
		return ""
	}
	return string(buf[:n])
}

// TestEscapeSetuidCopy copies id(1) into the workspace, owned by another
// user and setuid: run in the sandbox it still reports the caller's uid
// (no-new-privs, and the owner is not mapped in the user namespace). The
// control, bare, shows the copy does change the uid. It runs as root (who
// can give the copy away) and as nobody.
func TestEscapeSetuidCopy(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("giving the setuid copy to another user needs root; as this user the copy would be its own")
	}
	const owner = "4242" // an unused, unprivileged uid
	f := newFixture(t, "")
	openToOthers(t, f)
	id := filepath.Join(f.ws, "suid-id")
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skip("no /usr/bin/id")
	}
	if err := os.WriteFile(id, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(id, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(id, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(id, "-u").Output(); err != nil || strings.TrimSpace(string(out)) != owner {
		t.Skipf("the setuid bit does not take effect bare here (%q %v): nothing to show", out, err)
	}
	f.spec.Argv[2] = fmt.Sprintf(`%q -u; grep NoNewPrivs /proc/self/status`, id)
	out, stderr, code := f.run(t)
	if want := "0\nNoNewPrivs:\t1\n"; code != 0 || out != want {
		t.Errorf("as root: exit %d stdout %q want %q stderr %q", code, out, want, stderr)
	}
	if setpriv, ok := asNobody(t, f); ok {
		out, stderr, code = f.run(t, setpriv...)
		if want := "65534\nNoNewPrivs:\t1\n"; code != 0 || out != want {
			t.Errorf("as nobody: exit %d stdout %q want %q stderr %q", code, out, want, stderr)
		}
	}
	if fi, err := os.Stat(id); err != nil || fi.Mode()&os.ModeSetuid == 0 || fi.Sys().(*syscall.Stat_t).Uid != 4242 {
		t.Errorf("the copy changed on the host: %v %v", fi, err)
	}
}

// TestEscapeRunsDirCovered plants files in a covered runs directory: it
// is empty and read-only in the view, unchanged on the host.
func TestEscapeRunsDirCovered(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, "")
	runs := filepath.Join(f.root, "runs")
	run := filepath.Join(runs, "r-1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(run, "run.json"), `{"ok":true}`)
	f.spec.Cover = append(f.spec.Cover, runs)
	f.spec.Argv[2] = fmt.Sprintf(`r=%q; ls -A "$r"; cat "$r/r-1/run.json"; echo x > "$r/planted" && echo PLANTED; mkdir "$r/r-2" && echo MADE; ln -s / "$r/l" && echo LINKED; mv "$r" "$PWD/runs" && echo MOVED; true`, runs)
	out, stderr, code := f.run(t)
	if code != 0 || out != "" {
		t.Errorf("exit %d stdout %q (want nothing: empty and nothing written) stderr %q", code, out, stderr)
	}
	if n := strings.Count(stderr, "Read-only file system") + strings.Count(stderr, "Device or resource busy"); n != 4 {
		t.Errorf("want 4 refusals, stderr %s", stderr)
	}
	ents, _ := os.ReadDir(runs)
	if len(ents) != 1 || ents[0].Name() != "r-1" {
		t.Errorf("the runs directory changed on the host: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(run, "run.json")); string(b) != `{"ok":true}` {
		t.Errorf("run.json changed: %q", b)
	}
	if !slices.Contains(planFacts(t, f).Covered, runs) {
		t.Errorf("the facts do not list %s as covered", runs)
	}
}

// TestEscapeWorkspaceSwap (§8.4): the workspace is made a link to another
// host directory between the plan and the start. bwrap does not mount
// through the link: the start fails, and nothing lands in the link's target.
func TestEscapeWorkspaceSwap(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `echo x > "$PWD/planted"; echo STARTED`)
	plan, err := New().Plan(t.Context(), f.spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.ws, f.ws+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.repo, f.ws); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plan.GetArgv()[0], plan.GetArgv()[1:]...)
	cmd.Env = plan.GetEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "STARTED") {
		t.Errorf("the target started through the swapped workspace: %v %s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(f.repo, "planted")); err == nil {
		t.Errorf("the target wrote through the swapped workspace")
	}
}

func planFacts(t *testing.T, f *fixture) Facts {
	t.Helper()
	plan, err := f.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	var fc Facts
	if err := jsonUnmarshal(plan.GetFactsJson(), &fc); err != nil {
		t.Fatal(err)
	}
	return fc
}

// TestEscapeKilledWrapperTakesTree (§8.20): the engine's timeout ends the
// outer bwrap with SIGTERM; every process of the sandbox dies with it
// (--die-with-parent, then the PID namespace).
func TestEscapeKilledWrapperTakesTree(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `sleep 30 & sleep 30 & (sleep 30; echo late > "$PWD/late") & wait`)
	plan, err := f.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plan.GetArgv()[0], plan.GetArgv()[1:]...)
	cmd.Env, cmd.Dir = plan.GetEnv(), plan.GetDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tree []int
	for range 50 {
		if tree = descendants(cmd.Process.Pid); len(tree) >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(tree) < 5 {
		t.Fatalf("the sandbox started %d processes, want bwrap's PID 1, the shell and its sleeps", len(tree))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// the processes seen before, wherever they were reparented to
	var alive []int
	for range 50 {
		alive = slices.DeleteFunc(slices.Clone(tree), func(p int) bool { return !running(p) })
		if len(alive) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(alive) != 0 {
		t.Errorf("processes %v outlived the killed wrapper", alive)
	}
	if strings.Contains(fmt.Sprint(cmd.ProcessState), "exit status 0") {
		t.Errorf("the wrapper was not killed: %v", cmd.ProcessState)
	}
}

// TestEscapeSharedMemory (§8.29): /dev/shm is the sandbox's own, not the
// host's: the host's files there are not seen, the sandbox's stay inside.
func TestEscapeSharedMemory(t *testing.T) {
	needBwrap(t)
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("the host has no /dev/shm")
	}
	name := fmt.Sprintf("warden-shm-%d", os.Getpid())
	t.Cleanup(func() { os.Remove("/dev/shm/" + name) }) // only if the test fails
	// the host's /dev/shm holds something of its own to hide
	host := filepath.Join("/dev/shm", name+"-host")
	write(t, host, "host")
	t.Cleanup(func() { os.Remove(host) })
	f := newFixture(t, `echo x > /dev/shm/`+name+` && echo WROTE; ls -A /dev/shm`)
	out, stderr, code := f.run(t)
	// the sandbox's /dev/shm is an empty directory of its private /dev
	if want := "WROTE\n" + name + "\n"; code != 0 || out != want {
		t.Errorf("exit %d stdout %q want %q stderr %q", code, out, want, stderr)
	}
	if _, err := os.Lstat("/dev/shm/" + name); err == nil {
		t.Errorf("the sandbox's /dev/shm file reached the host's /dev/shm")
	}
}

// running says whether process p exists and is no zombie.
func running(p int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
