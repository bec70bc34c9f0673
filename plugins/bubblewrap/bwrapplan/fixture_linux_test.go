package bwrapplan

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// fixture is a host layout like the engine's: a home with a secret, a
// workspace, a private root holding the run's private parent and its call
// directory, and a user repository whose git directory is covered.
type fixture struct {
	root, home, ws, priv, parent, call, repo, gitDir string
	spec                                             *pb.LaunchSpec
	// cred, when set, is who runs the plan (the socket scan's view).
	cred *cred
	// stdin, when set, is the sandbox's standard input; ctty makes it the
	// controlling terminal of a new session bwrap starts in.
	stdin *os.File
	ctty  bool
	// with is the plugin's `with:` block (JSON).
	with string
}

// plan plans f.spec with the plugin configured by f.with.
func (f *fixture) plan(t *testing.T) (*pb.LaunchPlan, error) {
	t.Helper()
	p := New()
	if f.with != "" {
		if err := p.Configure(context.Background(), &pb.ConfigureRequest{WithJson: []byte(f.with)}); err != nil {
			return nil, err
		}
	}
	plan, err := p.Plan(context.Background(), f.spec)
	if err == nil && f.cred != nil {
		var scan socketScan
		if scan, err = scanSockets("/proc/net/unix", *f.cred); err == nil {
			plan, err = buildWith(plan.GetArgv()[0], "0.8.0", f.spec, scan, p.planOptions())
		}
	}
	return plan, err
}

const secret = "s3cr3t-token"

func newFixture(t testing.TB, script string) *fixture {
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

func write(t testing.TB, p, s string) {
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
//
// Other processes of the host bind and remove sockets all the time (other
// test runs): a socket listed at Plan and gone when bwrap starts stops the
// start by design. Such a start is planned and run again, at most 3 times.
func (f *fixture) run(t *testing.T, wrap ...string) (stdout, stderr string, code int) {
	t.Helper()
	for try := 1; ; try++ {
		stdout, stderr, code = f.runOnce(t, wrap...)
		gone, ok := strings.CutPrefix(stderr, "bwrap: Can't find source path ")
		if code == 0 || !ok || strings.HasPrefix(gone, f.root) || try == 3 {
			return stdout, stderr, code
		}
		t.Logf("a host socket went away between the plan and the start; starting again: %s", stderr)
	}
}

func (f *fixture) runOnce(t *testing.T, wrap ...string) (stdout, stderr string, code int) {
	t.Helper()
	plan, err := f.plan(t)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	argv := append(append([]string{}, wrap...), plan.GetArgv()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = plan.GetEnv(), plan.GetDir()
	if f.stdin != nil {
		cmd.Stdin = f.stdin
	}
	if f.ctty {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
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
