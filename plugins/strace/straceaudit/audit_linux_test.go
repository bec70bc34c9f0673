package straceaudit_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/grantwire"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/strace/straceaudit"
)

func needStrace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed")
	}
}

func spec(t *testing.T, ws string, argv ...string) *pb.LaunchSpec {
	l := grant.Layer{Name: "pipeline", Exec: grant.ExecSpec{Allow: []grant.Spec{{Text: "@system"}}},
		File: grant.FileSpec{Read: []grant.Spec{{Text: "/etc/"}}}}
	return &pb.LaunchSpec{Argv: argv, Path: argv[0], Dir: ws, Workspace: ws, Home: t.TempDir(),
		Grants: []*pb.GrantLayer{grantwire.ToProto(l, nil)}}
}

// run wraps the plan, runs it as the core would and judges its trace.
func run(t *testing.T, s *pb.LaunchSpec, mutate func(trace []byte) []byte) *sdk.Findings {
	t.Helper()
	return runMutated(t, s, s.Argv, mutate)
}

func runPlan(t *testing.T, s *pb.LaunchSpec, plan []string) *sdk.Findings {
	t.Helper()
	return runMutated(t, s, plan, nil)
}

func runMutated(t *testing.T, s *pb.LaunchSpec, plan []string, mutate func(trace []byte) []byte) *sdk.Findings {
	t.Helper()
	a := straceaudit.New()
	ctx := context.Background()
	dir := t.TempDir()
	res, err := a.Wrap(ctx, &sdk.WrapRequest{Spec: s, Plan: &pb.LaunchPlan{Argv: plan, Dir: s.Dir}, TraceDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	argv := res.GetPlan().GetArgv()
	if argv[0] != "strace" || argv[len(argv)-len(plan)-1] != "--" {
		t.Fatalf("plan %q", argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = res.GetPlan().GetDir()
	exit := &pb.LaunchExit{}
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		exit.ExitCode = int32(ee.ExitCode())
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.Signal = ws.Signal().String()
			exit.ExitCode = -1
		}
	}
	names := res.GetTraceFiles()
	if len(names) != 1 || filepath.Dir(names[0]) != dir {
		t.Fatalf("trace files %q", names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		b = mutate(b)
	}
	f, err := a.Judge(ctx, sdk.NewObservations(&pb.JudgeHeader{Spec: s, Exit: exit, TraceFiles: names}, names, [][]byte{b}))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func listed(f *sdk.Findings, path, op string) *pb.Access {
	for _, a := range f.GetAccesses() {
		if a.GetPath() == path && a.GetOp() == op {
			return a
		}
	}
	return nil
}

func TestEndToEnd(t *testing.T) {
	needStrace(t)
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	ws := t.TempDir()
	mine := filepath.Join(ws, "mine")
	os.WriteFile(mine, []byte("m"), 0o600)

	f := run(t, spec(t, ws, "/bin/cat", secret, mine, filepath.Join(host, "missing")), nil)
	if f.GetObserverFailed() || f.GetCompleteness() != pb.Completeness_COMPLETENESS_COMPLETE {
		t.Fatalf("observer: %v", f)
	}
	a := listed(f, secret, "read")
	if a == nil || a.GetSyscall() != "openat" || a.GetResult() != "0" || a.GetPid() == 0 {
		t.Fatalf("ungranted read not listed as such: %v", f.GetAccesses())
	}
	for _, a := range f.GetAccesses() {
		if strings.HasPrefix(a.GetPath(), ws) || strings.HasSuffix(a.GetPath(), "missing") || strings.HasPrefix(a.GetPath(), "/usr/") {
			t.Errorf("listed %v", a)
		}
	}
	if f.GetLines() == 0 {
		t.Error("no lines counted")
	}

	// The same read, granted, is not listed.
	s := spec(t, ws, "/bin/cat", secret)
	s.Grants[0].Read = append(s.Grants[0].Read, &pb.GrantKey{Text: host + "/"})
	if f := run(t, s, nil); listed(f, secret, "read") != nil || f.GetObserverFailed() {
		t.Fatalf("granted read listed: %v", f)
	}
}

func TestObserverFailure(t *testing.T) {
	needStrace(t)
	ws := t.TempDir()
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   string
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)-3] }, "cut short"},
		{"empty", func([]byte) []byte { return nil }, "no start of the target"},
		{"garbage", func(b []byte) []byte { return append(b, "not a trace line\n"...) }, "unparsable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := run(t, spec(t, ws, "/bin/true"), c.mutate)
			if !f.GetObserverFailed() || !strings.Contains(f.GetObserverError(), c.want) || f.GetCompleteness() != pb.Completeness_COMPLETENESS_UNSPECIFIED {
				t.Fatalf("want observer failure %q, got %v", c.want, f)
			}
		})
	}
	t.Run("target not started", func(t *testing.T) {
		s := spec(t, ws, "/bin/true")
		s.Argv = []string{"/bin/true", "other"}
		// The plan runs /bin/true, the spec names another argv: no start.
		a := straceaudit.New()
		res, _ := a.Wrap(context.Background(), &sdk.WrapRequest{Spec: s, Plan: &pb.LaunchPlan{Argv: []string{"/bin/true"}}, TraceDir: t.TempDir()})
		argv := res.GetPlan().GetArgv()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(res.GetTraceFiles()[0])
		f, _ := a.Judge(context.Background(), sdk.NewObservations(&pb.JudgeHeader{Spec: s, Exit: &pb.LaunchExit{}}, res.GetTraceFiles(), [][]byte{b}))
		if !f.GetObserverFailed() || !strings.Contains(f.GetObserverError(), "no start") {
			t.Fatalf("%v", f)
		}
	})
	t.Run("strace killed", func(t *testing.T) {
		f := run(t, spec(t, ws, "/bin/true"), nil)
		if f.GetObserverFailed() {
			t.Fatal(f)
		}
		// The same sound trace with strace itself killed is no evidence.
		s := spec(t, ws, "/bin/true")
		a := straceaudit.New()
		res, _ := a.Wrap(context.Background(), &sdk.WrapRequest{Spec: s, Plan: &pb.LaunchPlan{Argv: s.Argv}, TraceDir: t.TempDir()})
		argv := res.GetPlan().GetArgv()
		exec.Command(argv[0], argv[1:]...).Run()
		b, _ := os.ReadFile(res.GetTraceFiles()[0])
		f, _ = a.Judge(context.Background(), sdk.NewObservations(&pb.JudgeHeader{Spec: s, Exit: &pb.LaunchExit{ExitCode: -1, Signal: "killed"}}, res.GetTraceFiles(), [][]byte{b}))
		if !f.GetObserverFailed() || !strings.Contains(f.GetObserverError(), "killed") {
			t.Fatalf("%v", f)
		}
	})
	t.Run("target killed", func(t *testing.T) {
		// strace re-raises the signal that killed its tracee: that is the
		// target's death, not the observer's.
		f := run(t, spec(t, ws, "/bin/sh", "-c", "kill -9 $$"), nil)
		if f.GetObserverFailed() {
			t.Fatalf("target's death taken for the observer's: %v", f)
		}
	})
}

func TestProbe(t *testing.T) {
	needStrace(t)
	root := t.TempDir()
	p := straceaudit.New().Probe(context.Background(), &sdk.HostInfo{PrivateRoot: root})
	if p.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Fatalf("probe: %v", p)
	}
	if p.GetFacts()["strace.version"] == "" {
		t.Errorf("facts %v", p.GetFacts())
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("probe left %v", ents)
	}
	bad := straceaudit.Audit{Strace: "/nonexistent/strace"}
	if p := bad.Probe(context.Background(), &sdk.HostInfo{PrivateRoot: root}); p.GetHealth() == pb.ProbeResponse_HEALTH_HEALTHY {
		t.Fatal("healthy without strace")
	}
}

func TestProbeReclaims(t *testing.T) {
	needStrace(t)
	root := t.TempDir()
	// A pid that no process holds: a child that has been reaped.
	c := exec.Command("/bin/true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := c.Process.Pid
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.WriteFile(filepath.Join(p, "canary"), nil, 0o600)
		return p
	}
	stale := mk(fmt.Sprintf("observer-probe-%d-ab12", dead), 0o700)
	live := mk(fmt.Sprintf("observer-probe-%d-ab12", os.Getppid()), 0o700)
	mode := mk(fmt.Sprintf("observer-probe-%d-cd34", dead), 0o755)
	file := filepath.Join(root, fmt.Sprintf("observer-probe-%d-ef56", dead))
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(root, fmt.Sprintf("observer-probe-%d-0789", dead))
	os.Symlink(stale, link)

	p := straceaudit.New().Probe(context.Background(), &sdk.HostInfo{PrivateRoot: root})
	if p.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Fatal(p)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("a dead process's probe directory stayed: %v", err)
	}
	if !strings.Contains(p.GetFacts()["observer.reclaimed"], stale) {
		t.Errorf("reclaimed directory not named: %v", p.GetFacts())
	}
	for _, keep := range []string{live, mode, file, link} {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s removed", keep)
		}
	}
}
