package privroot

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/errdefs"
)

func openTestRoot(t *testing.T) *Root {
	t.Helper()
	r, err := OpenIn(t.TempDir())
	if err != nil {
		t.Fatalf("OpenIn: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func rootPath(base string) string {
	return filepath.Join(base, "warden-p"+strconv.Itoa(os.Geteuid()))
}

func TestOpenCreatesRoot0700(t *testing.T) {
	base := t.TempDir()
	// Even a umask that takes every bit leaves the root 0700.
	old := umask(0o777)
	defer umask(old)
	r, err := OpenIn(base)
	if err != nil {
		t.Fatalf("OpenIn: %v", err)
	}
	defer r.Close()
	if r.Path() != rootPath(base) {
		t.Errorf("Path() = %q, want %q", r.Path(), rootPath(base))
	}
	fi, err := os.Lstat(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("root mode = %v, want drwx------", fi.Mode())
	}
	// Parents and call directories are 0700 under that umask too.
	p, err := r.NewParent()
	if err != nil {
		t.Fatalf("NewParent under umask 0777: %v", err)
	}
	defer p.Remove()
	tmp, err := p.CallDir("target-tmp")
	if err != nil {
		t.Fatalf("CallDir under umask 0777: %v", err)
	}
	for _, dir := range []string{p.Path(), tmp} {
		if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want drwx------", dir, fi, err)
		}
	}
	// Opening an existing, correct root succeeds.
	r2, err := OpenIn(base)
	if err != nil {
		t.Fatalf("second OpenIn: %v", err)
	}
	r2.Close()
}

func TestOpenIgnoresTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	want := rootPath("/tmp")
	_, statErr := os.Lstat(want)
	r, err := Open()
	if err != nil {
		t.Skipf("the host's own private root is unusable: %v", err)
	}
	r.Close()
	if os.IsNotExist(statErr) {
		// Leave /tmp as it was; a run that started meanwhile keeps the
		// root, since Remove fails on a directory that is not empty.
		os.Remove(want)
	}
	if r.Path() != want {
		t.Errorf("Open().Path() = %q, want %q whatever TMPDIR says", r.Path(), want)
	}
}

func TestOpenRefusesBadRoot(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, root string)
		want string
	}{
		{"symlink", func(t *testing.T, root string) {
			target := t.TempDir()
			os.Chmod(target, 0o700)
			must(t, os.Symlink(target, root))
		}, "is a link"},
		{"dangling symlink", func(t *testing.T, root string) {
			must(t, os.Symlink(filepath.Join(t.TempDir(), "missing"), root))
		}, "is a link"},
		{"file", func(t *testing.T, root string) {
			must(t, os.WriteFile(root, nil, 0o600))
		}, "is not a directory"},
		{"group readable", func(t *testing.T, root string) {
			must(t, os.Mkdir(root, 0o700))
			must(t, os.Chmod(root, 0o750))
		}, "has mode 0750"},
		{"world writable", func(t *testing.T, root string) {
			must(t, os.Mkdir(root, 0o700))
			must(t, os.Chmod(root, 0o777))
		}, "has mode 0777"},
		{"other owner", func(t *testing.T, root string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			must(t, os.Mkdir(root, 0o700))
			must(t, os.Chown(root, 54321, 54321))
		}, "owned by uid 54321"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			root := rootPath(base)
			tt.make(t, root)
			r, err := OpenIn(base)
			if err == nil {
				r.Close()
				t.Fatal("OpenIn succeeded, want an error")
			}
			if !errors.Is(err, errdefs.ErrHostUnsupported) || errdefs.Code(err) != errdefs.ExitHost {
				t.Errorf("error %v is not ErrHostUnsupported (exit 12)", err)
			}
			if !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %s and %q", err, root, tt.want)
			}
		})
	}
}

func TestNewParentWritesRecordFirst(t *testing.T) {
	r := openTestRoot(t)
	p, err := r.NewParent()
	if err != nil {
		t.Fatalf("NewParent: %v", err)
	}
	defer p.Remove()
	if filepath.Dir(p.Path()) != r.Path() || !strings.HasPrefix(filepath.Base(p.Path()), "run-") {
		t.Errorf("parent %s is not run-<random> beneath %s", p.Path(), r.Path())
	}
	fi, err := os.Lstat(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("parent mode = %v, want drwx------", fi.Mode())
	}
	entries, err := os.ReadDir(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != recordName {
		t.Fatalf("parent holds %v, want only the record", entries)
	}
	fd, err := openDir(atFdcwd, p.Path())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readRecord(fd)
	closeFd(fd)
	if err != nil {
		t.Fatalf("readRecord: %v", err)
	}
	own, _, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Pid != os.Getpid() || rec.Start != own {
		t.Errorf("record = %+v, want pid %d start %s", rec, os.Getpid(), own)
	}
	if !running(rec) {
		t.Error("running(own record) = false")
	}

	q, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Remove()
	if q.Path() == p.Path() {
		t.Error("two parents share a path")
	}
}

func TestCallDirAndDir(t *testing.T) {
	r := openTestRoot(t)
	p, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove()

	tmp, err := p.CallDir("target-tmp")
	if err != nil {
		t.Fatalf("CallDir: %v", err)
	}
	name := filepath.Base(tmp)
	if filepath.Dir(tmp) != p.Path() || !strings.HasPrefix(name, "warden-target-tmp-") || len(name) <= len("warden-target-tmp-") {
		t.Errorf("call dir %s is not warden-target-tmp-<random> beneath %s", tmp, p.Path())
	}
	if fi, err := os.Lstat(tmp); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("call dir: %v, %v; want drwx------", fi, err)
	}
	tmp2, err := p.CallDir("target-tmp")
	if err != nil || tmp2 == tmp {
		t.Errorf("second CallDir = %s, %v; want a new directory", tmp2, err)
	}
	for _, bad := range []string{"", "../x", "a/b", "Target", "x-"} {
		if _, err := p.CallDir(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("CallDir(%q) = %v, want ErrInvalid", bad, err)
		}
	}

	socks, err := p.Dir(SocketsDir)
	if err != nil {
		t.Fatalf("Dir: %v", err)
	}
	again, err := p.Dir(SocketsDir)
	if err != nil || again != socks {
		t.Errorf("Dir twice = %s, %v; want %s", again, err, socks)
	}
	// With the production root the socket directory leaves room for a
	// socket name within macOS's 104 bytes.
	prodLen := len("/tmp/warden-p4294967295/") + len(filepath.Base(p.Path())) + len("/"+SocketsDir+"/")
	if prodLen > 60 {
		t.Errorf("socket directory path is %d bytes, want at most 60", prodLen)
	}
	for _, bad := range []string{"", ".", "..", "a/b", recordName} {
		if _, err := p.Dir(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Dir(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	link := filepath.Join(p.Path(), "staging")
	must(t, os.Symlink(t.TempDir(), link))
	if _, err := p.Dir("staging"); !errors.Is(err, errdefs.ErrHostUnsupported) {
		t.Errorf("Dir over a link = %v, want ErrHostUnsupported", err)
	}

	must(t, os.WriteFile(filepath.Join(tmp, "f"), []byte("x"), 0o600))
	if err := p.RemoveDir(tmp); err != nil {
		t.Fatalf("RemoveDir: %v", err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("call dir still there after RemoveDir: %v", err)
	}
	if err := p.RemoveDir(filepath.Join(tmp2, "x")); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("RemoveDir of a non-child = %v, want ErrInvalid", err)
	}
}

func TestRemoveNeverFollowsLinks(t *testing.T) {
	r := openTestRoot(t)
	p, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	must(t, os.WriteFile(keep, []byte("keep"), 0o600))

	tmp, err := p.CallDir("target-tmp")
	if err != nil {
		t.Fatal(err)
	}
	// What a target may leave: deep read-only directories, a directory with
	// no permissions at all, links out of the tree.
	deep := filepath.Join(tmp, "a", "b", "c")
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o400))
	must(t, os.Symlink(outside, filepath.Join(deep, "out")))
	must(t, os.Symlink(keep, filepath.Join(tmp, "keeplink")))
	must(t, os.Chmod(deep, 0o500))
	must(t, os.Chmod(filepath.Join(tmp, "a"), 0o500))
	must(t, os.Mkdir(filepath.Join(tmp, "locked"), 0o700))
	must(t, os.WriteFile(filepath.Join(tmp, "locked", "f"), nil, 0o600))
	must(t, os.Chmod(filepath.Join(tmp, "locked"), 0))

	if err := p.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Lstat(p.Path()); !os.IsNotExist(err) {
		t.Errorf("parent still there after Remove: %v", err)
	}
	if data, err := os.ReadFile(keep); err != nil || string(data) != "keep" {
		t.Errorf("file outside the tree = %q, %v; want it untouched", data, err)
	}
	if _, err := os.Lstat(r.Path()); err != nil {
		t.Errorf("root removed with the parent: %v", err)
	}
	if err := p.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := p.CallDir("target-tmp"); err == nil {
		t.Error("CallDir after Remove succeeded")
	}
}

func TestRemoveLeavesReplacedParent(t *testing.T) {
	r := openTestRoot(t)
	p, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	must(t, os.Rename(p.Path(), moved))
	must(t, os.Mkdir(p.Path(), 0o700))
	must(t, os.WriteFile(filepath.Join(p.Path(), "other"), nil, 0o600))
	if err := p.Remove(); !errors.Is(err, errdefs.ErrHostUnsupported) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("Remove of a replaced parent = %v, want ErrHostUnsupported naming the replacement", err)
	}
	if _, err := os.Lstat(filepath.Join(p.Path(), "other")); err != nil {
		t.Errorf("Remove touched the directory that replaced the parent: %v", err)
	}
}

// deadPid returns the pid of a process this test started and waited for.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	pid := cmd.Process.Pid
	if pidExists(pid) {
		t.Skipf("pid %d was reused at once", pid)
	}
	return pid
}

func TestReclaim(t *testing.T) {
	r := openTestRoot(t)
	dead := deadPid(t)
	own, _, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	must(t, os.WriteFile(keep, []byte("keep"), 0o600))

	// Removed: a parent whose process is gone, with a read-only tree and a
	// link out of it inside.
	deadRun := owned(t, r, "run-dead", dead, "12345")
	must(t, os.MkdirAll(filepath.Join(deadRun, "warden-target-tmp-x", "sub"), 0o700))
	must(t, os.Symlink(outside, filepath.Join(deadRun, "warden-target-tmp-x", "out")))
	must(t, os.Chmod(filepath.Join(deadRun, "warden-target-tmp-x"), 0o500))
	// Removed: own pid, but another start time, so the pid was reused.
	reused := owned(t, r, "run-reused", os.Getpid(), own+"0")
	// Removed: a probe of a dead process, with and without a record.
	deadProbe := filepath.Join(r.Path(), "observer-probe-"+strconv.Itoa(dead)+"-ab12")
	must(t, os.Mkdir(deadProbe, 0o700))
	deadProbe2 := owned(t, r, "observer-probe-"+strconv.Itoa(dead)+"-cd34", dead, "1")

	// Kept: this run's parent and probe.
	live, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	liveProbe, err := r.NewProbe()
	if err != nil {
		t.Fatal(err)
	}
	defer liveProbe.Remove()
	liveProbeBare := filepath.Join(r.Path(), "observer-probe-"+strconv.Itoa(os.Getpid())+"-ef56")
	must(t, os.Mkdir(liveProbeBare, 0o700))
	// Kept: a link to a dead run's parent, a file, a directory with another
	// mode, a parent with no record (it may be being made), one with a
	// record that is not a file, names Reclaim does not own.
	elsewhere := owned(t, r, "elsewhere-dead", dead, "1")
	link := filepath.Join(r.Path(), "run-link")
	must(t, os.Symlink(elsewhere, link))
	file := filepath.Join(r.Path(), "run-file")
	must(t, os.WriteFile(file, nil, 0o600))
	otherMode := owned(t, r, "run-mode", dead, "1")
	must(t, os.Chmod(otherMode, 0o750))
	noRecord := filepath.Join(r.Path(), "run-norecord")
	must(t, os.Mkdir(noRecord, 0o700))
	badRecord := filepath.Join(r.Path(), "run-badrecord")
	must(t, os.MkdirAll(filepath.Join(badRecord, recordName), 0o700))
	must(t, os.Chmod(badRecord, 0o700))
	probeLink := filepath.Join(r.Path(), "observer-probe-"+strconv.Itoa(dead)+"-link")
	must(t, os.Symlink(elsewhere, probeLink))
	var otherOwner string
	if os.Geteuid() == 0 {
		otherOwner = owned(t, r, "run-otherowner", dead, "1")
		must(t, os.Chown(otherOwner, 54321, 54321))
	}

	removed, err := r.Reclaim()
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	want := []string{deadRun, reused, deadProbe, deadProbe2}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("Reclaim removed %v, want %v", removed, want)
	}
	for _, p := range want {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after Reclaim: %v", p, err)
		}
	}
	kept := []string{live.Path(), liveProbe.Path(), liveProbeBare, elsewhere, link, file, otherMode, noRecord, badRecord, probeLink, keep}
	if otherOwner != "" {
		kept = append(kept, otherOwner)
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("Reclaim removed %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(live.Path(), recordName)); err != nil {
		t.Errorf("Reclaim touched the live parent: %v", err)
	}

	// Nothing left to reclaim.
	removed, err = r.Reclaim()
	if err != nil || len(removed) != 0 {
		t.Errorf("second Reclaim = %v, %v; want nothing", removed, err)
	}
}

func TestProcessStart(t *testing.T) {
	a, zombie, err := processStart(os.Getpid())
	if err != nil || a == "" || zombie {
		t.Fatalf("processStart(self) = %q, %v, %v", a, zombie, err)
	}
	b, _, err := processStart(os.Getpid())
	if err != nil || a != b {
		t.Errorf("start time changed: %q then %q (%v)", a, b, err)
	}
	if _, _, err := processStart(deadPid(t)); !errors.Is(err, errNoProcess) {
		t.Errorf("processStart(dead) err = %v, want errNoProcess", err)
	}
	// A child that exited but was not waited for is a zombie.
	cmd := exec.Command("true")
	must(t, cmd.Start())
	defer cmd.Wait()
	for range 1000 {
		if _, zombie, _ := processStart(cmd.Process.Pid); zombie {
			return
		}
		sleepBriefly()
	}
	t.Error("an exited, unwaited child never showed as a zombie")
}

// owned makes name beneath r with an ownership record for pid and start and
// returns its path.
func owned(t *testing.T, r *Root, name string, pid int, start string) string {
	t.Helper()
	p, err := r.makeOwned(name, pid, start)
	if err != nil {
		t.Fatalf("makeOwned %s: %v", name, err)
	}
	closeFd(p.fd)
	closeFd(p.rootFd)
	return p.path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestChmodDirNoFollow(t *testing.T) {
	base := t.TempDir()
	must(t, os.Mkdir(filepath.Join(base, "locked"), 0))
	target := filepath.Join(base, "target")
	must(t, os.Mkdir(target, 0o755))
	must(t, os.Symlink(target, filepath.Join(base, "link")))
	fd, err := openDir(atFdcwd, base)
	must(t, err)
	defer closeFd(fd)

	must(t, chmodDirNoFollow(fd, "locked", 0o700))
	if fi, err := os.Lstat(filepath.Join(base, "locked")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("after chmodDirNoFollow: %v, %v; want drwx------", fi, err)
	}
	if err := chmodDirNoFollow(fd, "link", 0o700); err == nil {
		t.Error("chmodDirNoFollow followed a link")
	}
	if fi, err := os.Lstat(target); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the link's target changed: %v, %v", fi, err)
	}
}
