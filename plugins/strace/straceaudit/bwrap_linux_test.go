package straceaudit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// TestUnderBwrap audits a real bubblewrap sandbox: bwrap's own set-up
// (its mounts and reads) is not the target's and is not listed; the
// target's read of a host file is; a call directory is judged at its host
// path through its sandbox path /dev/<name>.
func TestUnderBwrap(t *testing.T) {
	needStrace(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed")
	}
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	ws := t.TempDir()
	call := t.TempDir()
	os.WriteFile(filepath.Join(call, "in-call"), []byte("c"), 0o600)

	target := []string{"/bin/sh", "-c", "cat " + secret + " /dev/warden-call/in-call " + ws + "/../" + filepath.Base(host) + "/secret; echo x > /dev/warden-call/out"}
	s := spec(t, ws, target...)
	// As the bubblewrap plugin does: bwrap 0.8 has no --argv0, so the
	// target runs with the admitted path as argv[0].
	s.Argv = append([]string{"sh"}, target[1:]...)
	s.Path, _ = filepath.EvalSymlinks("/bin/sh")
	target[0] = s.Path
	s.CallDirs = []*pb.CallDir{{Name: "warden-call", HostPath: call, SandboxPath: "/dev/warden-call"}}
	plan := []string{bwrap, "--unshare-user", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--bind", ws, ws, "--bind", call, "/dev/warden-call", "--chdir", ws, "--"}
	f := runPlan(t, s, append(plan, target...))
	if f.GetObserverFailed() {
		if strings.Contains(f.GetObserverError(), "no start") {
			t.Fatalf("target start not found under bwrap: %v", f)
		}
		t.Fatal(f)
	}
	if listed(f, secret, "read") == nil {
		t.Errorf("the target's read of %s not listed: %v", secret, f.GetAccesses())
	}
	for _, a := range f.GetAccesses() {
		if a.GetPath() != secret || strings.HasPrefix(a.GetPath(), call) || strings.Contains(a.GetPath(), "newroot") || strings.Contains(a.GetPath(), "oldroot") {
			t.Errorf("listed %v", a)
		}
	}
	if _, err := os.Stat(filepath.Join(call, "out")); err != nil {
		t.Errorf("the target did not run: %v", err)
	}
}
