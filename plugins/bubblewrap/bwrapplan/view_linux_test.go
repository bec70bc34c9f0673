package bwrapplan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run the planned bwrap command for real (no mocks) with a
// shell target and assert what the target could and could not do, and
// that nothing changed on the host.

func TestViewWorkspaceWritable(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `echo made > "$PWD/out" && cat out`)
	out, stderr, code := f.run(t)
	if code != 0 || out != "made\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "out")); err != nil || string(b) != "made\n" {
		t.Fatalf("the host workspace lacks the target's file: %q %v", b, err)
	}
}

func TestViewExitCode(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `exit 7`)
	if _, stderr, code := f.run(t); code != 7 {
		t.Fatalf("exit %d, want 7 (stderr %q)", code, stderr)
	}
}

func TestViewCannotWriteOutside(t *testing.T) {
	needBwrap(t)
	name := fmt.Sprintf("warden-escape-%d", rand.Uint64())
	dirs := []string{"/tmp", "/var/tmp", "/srv", "/", "/etc", "/usr/bin"}
	f := newFixture(t, "")
	dirs = append(dirs, f.root, f.repo)
	var script strings.Builder
	for _, d := range dirs {
		p := filepath.Join(d, name)
		t.Cleanup(func() { os.Remove(p) }) // only if the test fails
		fmt.Fprintf(&script, "if echo x > %q; then echo WROTE %s; fi\n", p, p)
		fmt.Fprintf(&script, "if mkdir %q; then echo MADE %s; fi\n", p+"d", p)
	}
	// a link out of the workspace leads to the same read-only view
	fmt.Fprintf(&script, "ln -s /srv \"$PWD/out\"; if echo x > \"$PWD/out/%s\"; then echo WROTE through a link; fi\n", name)
	// the host file stays unchanged
	fmt.Fprintf(&script, "if echo x >> %q; then echo APPENDED; fi\n", filepath.Join(f.repo, ".git", "config"))
	f.spec.Argv[2] = script.String()
	out, stderr, _ := f.run(t)
	if out != "" {
		t.Errorf("the target wrote outside the workspace:\n%s", out)
	}
	for _, d := range dirs {
		for _, p := range []string{filepath.Join(d, name), filepath.Join(d, name) + "d"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host", p)
				os.Remove(p)
			}
		}
	}
	if n := strings.Count(stderr, "Read-only file system") + strings.Count(stderr, "Permission denied"); n != 2*len(dirs)+2 {
		t.Errorf("want %d refusals (EROFS or EACCES), got %d:\n%s", 2*len(dirs)+2, n, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(f.gitDir, "config")); string(b) != "[core]\n" {
		t.Errorf("the covered git config changed on the host: %q", b)
	}
}

func TestViewHomeIsPrivateAndEmpty(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `cat "$HOME/.ssh/id_ed25519"; echo "home=$HOME"; ls -A "$HOME" /root /home; echo mine > "$HOME/note" && cat "$HOME/note"`)
	out, stderr, _ := f.run(t)
	if strings.Contains(out, secret) || strings.Contains(stderr, secret) {
		t.Fatalf("the target read the secret in the real home:\n%s", out)
	}
	// ls sorts its operands: /home, /root, then the home.
	want := "home=" + f.home + "\n/home:\n\n/root:\n\n" + f.home + ":\nmine\n"
	if out != want {
		t.Errorf("stdout\n%q\nwant\n%q\nstderr %s", out, want, stderr)
	}
	if !strings.Contains(stderr, "No such file or directory") {
		t.Errorf("reading the secret did not fail with ENOENT: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(f.home, "note")); err == nil {
		t.Errorf("the private home's file reached the host home")
	}
	if b, _ := os.ReadFile(filepath.Join(f.home, ".ssh", "id_ed25519")); string(b) != secret {
		t.Errorf("the host secret changed")
	}
}

func TestViewCallDirAtDev(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `echo "$TMPDIR $TMP $TEMP"; echo t > "$TMPDIR/f" && cat "$TMPDIR/f"; mktemp -p "$TMPDIR" >/dev/null && echo mktemp`)
	out, stderr, code := f.run(t)
	dev := "/dev/" + filepath.Base(f.call)
	if want := dev + " " + dev + " " + dev + "\nt\nmktemp\n"; code != 0 || out != want {
		t.Fatalf("exit %d stdout %q want %q stderr %q", code, out, want, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(f.call, "f")); err != nil || string(b) != "t\n" {
		t.Fatalf("the call directory on the host lacks the file: %q %v", b, err)
	}
}

func TestViewCoveredPathsAreEmptyAndReadOnly(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, "")
	f.spec.Argv[2] = fmt.Sprintf(`ls -A %q %q; cat %q; cat %q; touch %q/x; touch %q/x`,
		f.gitDir, f.priv, filepath.Join(f.gitDir, "config"), filepath.Join(f.parent, "record.json"), f.gitDir, f.priv)
	out, stderr, _ := f.run(t)
	if want := f.gitDir + ":\n\n" + f.priv + ":\n"; out != want {
		t.Errorf("stdout %q want %q", out, want)
	}
	if n := strings.Count(stderr, "No such file or directory"); n != 2 {
		t.Errorf("reading covered files: %s", stderr)
	}
	if n := strings.Count(stderr, "Read-only file system"); n != 2 {
		t.Errorf("writing covered dirs: %s", stderr)
	}
	for _, p := range []string{filepath.Join(f.gitDir, "x"), filepath.Join(f.priv, "x")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
}

func TestViewProcessesAndKernel(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `ls /proc | grep -c '^[0-9]'; grep '^CapEff' /proc/self/status; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; mknod "$PWD/null" c 1 3 && echo MKNOD; ln /etc/passwd "$PWD/pw" && echo LINKED; kill -0 HOSTPID && echo SIGNALED; unshare -Ur true && echo NESTED`)
	f.spec.Argv[2] = strings.Replace(f.spec.Argv[2], "HOSTPID", strconv.Itoa(os.Getpid()), 1)
	out, stderr, _ := f.run(t)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		t.Fatalf("stdout %q stderr %q", out, stderr)
	}
	if n, err := strconv.Atoi(lines[0]); err != nil || n > 5 {
		t.Errorf("the target sees %s processes in /proc", lines[0])
	}
	if lines[1] != "CapEff:\t0000000000000000" {
		t.Errorf("capabilities: %q", lines[1])
	}
	if len(lines) != 3 || lines[2] != "lo" {
		t.Errorf("network devices, or an escape: %q", lines[2:])
	}
	for _, bad := range []string{"MKNOD", "LINKED", "SIGNALED", "NESTED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s succeeded", bad)
		}
	}
	for _, p := range []string{"null", "pw"} {
		if _, err := os.Lstat(filepath.Join(f.ws, p)); err == nil {
			t.Errorf("%s was made in the workspace", p)
		}
	}
}

func TestViewBackgroundJobDies(t *testing.T) {
	needBwrap(t)
	marker := fmt.Sprintf("warden-bg-%d", rand.Uint64())
	f := newFixture(t, `sh -c 'while :; do echo . >> "$PWD/tick"; sleep 0.05; done; : `+marker+`' & sleep 0.3; exit 0`)
	if _, stderr, code := f.run(t); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tick := filepath.Join(f.ws, "tick")
	time.Sleep(200 * time.Millisecond)
	a, err := os.ReadFile(tick)
	if err != nil || len(a) == 0 {
		t.Fatalf("the background job never ran: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	if b, _ := os.ReadFile(tick); len(b) != len(a) {
		t.Errorf("the background job outlived the target: tick grew from %d to %d bytes", len(a), len(b))
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmd, []byte(marker)) {
			t.Errorf("process %s survived: %q", e.Name(), cmd)
		}
	}
}
