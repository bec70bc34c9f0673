package bwrapplan

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// fixture is a host layout like the engine's: a home with a secret, a
// workspace, a private root holding the run's private parent and its call
// directory, and a user repository whose git directory is covered.
type fixture struct {
	root, home, ws, priv, parent, call, repo, gitDir string
	spec                                             *pb.LaunchSpec
}

const secret = "s3cr3t-token"

func newFixture(t *testing.T, script string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"),
		priv: filepath.Join(root, "warden-p0"), repo: filepath.Join(root, "repo"),
	}
	f.parent = filepath.Join(f.priv, "run-1")
	f.call = filepath.Join(f.parent, "warden-target-tmp-1a2b3c")
	f.gitDir = filepath.Join(f.repo, ".git")
	for _, d := range []string{f.home, f.ws, f.call, f.gitDir, filepath.Join(f.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(f.home, ".ssh", "id_ed25519"), secret)
	write(t, filepath.Join(f.gitDir, "config"), "[core]\n")
	write(t, filepath.Join(f.parent, "record.json"), "{}")
	f.spec = &pb.LaunchSpec{
		Argv: []string{"sh", "-c", script}, Path: "/bin/sh",
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + f.home, "TMPDIR=" + f.call, "TMP=" + f.call, "TEMP=" + f.call, "LANG=C"},
		Dir: f.ws, Workspace: f.ws,
		CallDirs:    []*pb.CallDir{{Name: filepath.Base(f.call), HostPath: f.call, SandboxPath: f.call}},
		PrivateRoot: f.priv, PrivateParent: f.parent, Home: f.home,
		Cover: []string{f.gitDir}, Trial: 1,
	}
	return f
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// needBwrap skips only when the host truly lacks bwrap.
func needBwrap(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed")
	}
	return p
}

// run plans f.spec and runs the plan as the core would, without the SDK.
func (f *fixture) run(t *testing.T, wrap ...string) (stdout, stderr string, code int) {
	t.Helper()
	plan, err := New().Plan(context.Background(), f.spec)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	argv := append(append([]string{}, wrap...), plan.GetArgv()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = plan.GetEnv(), plan.GetDir()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return o.String(), e.String(), ee.ExitCode()
		}
		t.Fatalf("run %q: %v", argv, err)
	}
	return o.String(), e.String(), 0
}
