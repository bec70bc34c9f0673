package bwrapplan

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestViewUnprivileged runs the plan as the nobody account (setpriv), the
// way users run warden: bwrap then needs an unprivileged user namespace.
func TestViewUnprivileged(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: the other view tests cover this user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is not installed")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody account to run as")
	}
	f := newFixture(t, `id -u; echo w > "$PWD/out"; echo t > "$TMPDIR/t"; cat "$HOME/.ssh/id_ed25519"; ls -A "$HOME" /root /home `+"\"$(dirname \"$PWD\")/warden-p0\""+`; touch /tmp/warden-nobody-escape; ls /proc | grep -c '^[0-9]'`)
	// nobody must reach the fixture: open its temp dirs to others and give
	// it the writable places.
	for _, d := range []string{filepath.Dir(f.root), f.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	uid, gid := nobody.Uid, nobody.Gid
	nuid, _ := strconv.Atoi(uid)
	ngid, _ := strconv.Atoi(gid)
	f.cred = &cred{uid: uint32(nuid), groups: []uint32{uint32(ngid)}}
	for _, d := range []string{f.ws, f.call, f.home} {
		if err := exec.Command("chown", uid+":"+gid, d).Run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(f.home, ".ssh", "id_ed25519"), 0o644); err != nil { // readable to nobody on the host
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove("/tmp/warden-nobody-escape") })
	out, stderr, code := f.run(t, setpriv, "--reuid="+uid, "--regid="+gid, "--clear-groups", "--")
	if code != 0 && (strings.Contains(stderr, "No permissions to create new namespace") || strings.Contains(stderr, "setting up uid map") || strings.Contains(stderr, "Creating new namespace failed")) {
		t.Skipf("bwrap cannot make a user namespace as nobody on this host: %s", stderr)
	}
	if strings.Contains(out, secret) {
		t.Errorf("nobody read the secret through the sandbox")
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || lines[0] != uid {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	want := []string{uid, "/home:", "", "/root:", "", f.home + ":", "", f.priv + ":"}
	if len(lines) < len(want)+1 || strings.Join(lines[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout %q\nwant prefix %q\nstderr %s", out, want, stderr)
	}
	if n := lines[len(lines)-1]; len(n) != 1 {
		t.Errorf("nobody sees %s processes", n)
	}
	for _, p := range []string{filepath.Join(f.ws, "out"), filepath.Join(f.call, "t")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("nobody could not write %s: %v (stderr %s)", p, err, stderr)
		}
	}
	if _, err := os.Lstat("/tmp/warden-nobody-escape"); err == nil {
		t.Errorf("nobody wrote /tmp")
	}
	if !strings.Contains(stderr, "Read-only file system") && !strings.Contains(stderr, "Permission denied") {
		t.Errorf("the write to /tmp was not refused: %s", stderr)
	}
}

// openToOthers lets another user reach the fixture's temp directories.
func openToOthers(t *testing.T, f *fixture) {
	t.Helper()
	for _, d := range []string{filepath.Dir(f.root), f.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// asNobody prepares f to run as the nobody account (root only): the
// fixture reachable, the writable places nobody's, the socket scan from
// nobody's view. It returns the setpriv prefix that switches to nobody.
func asNobody(t *testing.T, f *fixture) ([]string, bool) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil || os.Geteuid() != 0 {
		return nil, false
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		return nil, false
	}
	openToOthers(t, f)
	nuid, _ := strconv.Atoi(nobody.Uid)
	ngid, _ := strconv.Atoi(nobody.Gid)
	f.cred = &cred{uid: uint32(nuid), groups: []uint32{uint32(ngid)}}
	for _, d := range []string{f.ws, f.call, f.home} {
		if err := os.Chown(d, nuid, ngid); err != nil {
			t.Fatal(err)
		}
	}
	return []string{setpriv, "--reuid=" + nobody.Uid, "--regid=" + nobody.Gid, "--clear-groups", "--"}, true
}
