package trace_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/plugins/strace/trace"
)

// runStrace runs argv under the plugin's strace command line in dir and
// returns the trace.
func runStrace(t *testing.T, dir string, argv ...string) []byte {
	t.Helper()
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	file := filepath.Join(t.TempDir(), "trace")
	a := trace.Argv(st, file, argv)
	cmd := exec.Command(a[0], a[1:]...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("strace: %v: %s", err, stderr.String())
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// table grants the system, /etc and the given workspace.
func table(t *testing.T, ws string) grant.Table {
	t.Helper()
	l := grant.Layer{Name: "pipeline", Exec: grant.ExecSpec{Allow: []grant.Spec{{Text: "@system"}}}}
	tb, err := grant.Compile(grant.Places{Workspace: ws, ExtraRead: []string{"/etc", "/proc/self", "/dev/null"}}, grant.Tools{}, l)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func judge(t *testing.T, tb grant.Table, cwd string, target []string, tr []byte) trace.Report {
	t.Helper()
	j := &trace.Judge{Table: tb.Files, Exec: tb.Exec, Targets: [][]string{target}, Cwd: cwd, Real: func(p string) string {
		r, _ := filepath.EvalSymlinks(p)
		return r
	}}
	rep := j.Read(bytes.NewReader(tr))
	if rep.Error != "" {
		t.Fatalf("trace is no evidence: %s\n%s", rep.Error, tail(tr))
	}
	return rep
}

func has(rep trace.Report, path string, op grant.Op) *trace.Finding {
	for i, f := range rep.Findings {
		if (f.Path == path || f.Spelled == path) && f.Op == op {
			return &rep.Findings[i]
		}
	}
	return nil
}

func python(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("python3 is not installed")
	return ""
}

func TestRealReads(t *testing.T) {
	host := t.TempDir() // outside the grants
	ws := t.TempDir()
	secret := filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	os.MkdirAll(filepath.Join(host, "sub"), 0o700)
	os.WriteFile(filepath.Join(host, "sub", "rel"), []byte("r"), 0o600)
	hostile := filepath.Join(host, "a\nb\"c\xff) = 0<x>")
	os.WriteFile(hostile, []byte("h"), 0o600)
	missing := filepath.Join(host, "missing")

	py := python(t)
	script := `import os,sys
fd=os.open(sys.argv[1],os.O_RDONLY)
os.close(os.open("rel",os.O_RDONLY,dir_fd=fd))
os.close(os.open("new",os.O_WRONLY|os.O_CREAT,0o600,dir_fd=fd))
`
	cases := []struct {
		name   string
		argv   []string
		cwd    string
		listed []string // paths listed, with op read unless ending in " write"
		not    []string
	}{
		{"cat", []string{"/bin/cat", secret}, ws, []string{secret}, nil},
		{"missing", []string{"/bin/cat", missing}, ws, nil, []string{missing}},
		{"relative after chdir", []string{"/bin/sh", "-c", "cd " + host + "/sub && cat rel"}, ws, []string{filepath.Join(host, "sub", "rel")}, nil},
		{"relative to the start", []string{"/bin/cat", "sub/rel"}, host, []string{filepath.Join(host, "sub", "rel")}, nil},
		{"dirfd", []string{py, "-c", script, filepath.Join(host, "sub")}, ws,
			[]string{filepath.Join(host, "sub", "rel"), filepath.Join(host, "sub", "new") + " write"}, nil},
		{"hostile name", []string{"/bin/cat", hostile}, ws, []string{hostile}, nil},
		{"proc self root", []string{"/bin/cat", "/proc/self/root" + secret}, ws, []string{"/proc/self/root" + secret}, nil},
		{"granted", []string{"/bin/cat", filepath.Join(ws, "x")}, ws, nil, []string{filepath.Join(ws, "x")}},
		{"proc self root, granted file", []string{"/bin/cat", "/proc/self/root" + filepath.Join(ws, "x")}, ws, []string{"/proc/self/root" + filepath.Join(ws, "x")}, nil},
		{"proc self cwd", []string{"/bin/cat", "/proc/self/cwd/x"}, ws, []string{"/proc/self/cwd/x"}, nil},
		{"proc self fd", []string{"/bin/sh", "-c", "exec 3<x; cat /proc/self/fd/3"}, ws, []string{"/proc/self/fd/3"}, nil},
		{"link to a host file", []string{"/bin/sh", "-c", "ln -s " + secret + " lnk && cat lnk && rm lnk"}, ws, []string{secret}, nil},
	}
	os.WriteFile(filepath.Join(ws, "x"), []byte("x"), 0o600)
	tb := table(t, ws)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := runStrace(t, c.cwd, c.argv...)
			rep := judge(t, tb, c.cwd, c.argv, tr)
			if !rep.Started {
				t.Fatal("no start of the target")
			}
			for _, p := range c.listed {
				op := grant.OpRead
				if q, ok := strings.CutSuffix(p, " write"); ok {
					p, op = q, grant.OpWrite
				}
				if has(rep, p, op) == nil {
					t.Errorf("%s %q not listed; findings %+v", op, p, rep.Findings)
				}
			}
			if len(c.listed) == 0 && len(rep.Findings) != 0 {
				t.Errorf("listed %+v", rep.Findings)
			}
			for _, p := range c.not {
				for _, f := range rep.Findings {
					if f.Path == p {
						t.Errorf("%q listed: %+v", p, f)
					}
				}
			}
		})
	}
}

func TestRealIoUringENOSYS(t *testing.T) {
	py := python(t)
	tr := runStrace(t, t.TempDir(), py, "-c", "import ctypes,sys; r=ctypes.CDLL(None,use_errno=True).syscall(425,1,ctypes.create_string_buffer(120)); sys.exit(0 if r==-1 and ctypes.get_errno()==38 else 1)")
	if !bytes.Contains(tr, []byte("io_uring_setup(")) || !bytes.Contains(tr, []byte("ENOSYS")) {
		t.Fatalf("io_uring_setup was not failed with ENOSYS:\n%s", tail(tr))
	}
}

func TestRealForkInheritsCwd(t *testing.T) {
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "f"), []byte("f"), 0o600)
	ws := t.TempDir()
	argv := []string{"/bin/sh", "-c", "cd " + host + " && (cat f; cat f & wait)"}
	rep := judge(t, table(t, ws), ws, argv, runStrace(t, ws, argv...))
	f := has(rep, filepath.Join(host, "f"), grant.OpRead)
	if f == nil || f.Count < 2 {
		t.Fatalf("reads in forked children not listed twice: %+v", rep.Findings)
	}
}

func tail(b []byte) []byte {
	if len(b) > 3000 {
		return b[len(b)-3000:]
	}
	return b
}

func TestRealConnect(t *testing.T) {
	py := python(t)
	host := t.TempDir()
	sock := filepath.Join(host, "host.sock")
	serveUnix(t, sock)
	gone := filepath.Join(host, "gone.sock")
	ws := t.TempDir()
	script := `import socket,sys,os
for p in sys.argv[1:]:
    s=socket.socket(socket.AF_UNIX)
    try: s.connect(p)
    except OSError: pass
    s.close()
s=socket.socket(socket.AF_UNIX)
try: s.connect("\0abstract-warden")
except OSError: pass
os.symlink(sys.argv[1], "lnk")
s=socket.socket(socket.AF_UNIX); s.connect("lnk"); s.close()
os.unlink("lnk")
`
	argv := []string{py, "-c", script, sock, gone}
	rep := judge(t, table(t, ws), ws, argv, runStrace(t, ws, argv...))
	if f := has(rep, sock, grant.OpConnect); f == nil || f.Syscall != "connect" || f.Result != "0" || f.Count != 2 {
		t.Errorf("connections to a host socket (directly and through a link the target removed) not listed: %+v", rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Op == grant.OpConnect && f.Path != sock {
			t.Errorf("listed %+v", f)
		}
	}
}

// TestRealProcesses: a target of forks, vforks and threads, each reading
// a host file of its own; every read is listed.
func TestRealProcesses(t *testing.T) {
	py := python(t)
	host := t.TempDir()
	var files []string
	for _, n := range []string{"main", "thread", "fork", "vfork-sh", "grandchild"} {
		p := filepath.Join(host, n)
		os.WriteFile(p, []byte(n), 0o600)
		files = append(files, p)
	}
	script := `import os,sys,threading,subprocess
main,thread,fork,vsh,grand=sys.argv[1:]
open(main).read()
t=threading.Thread(target=lambda: open(thread).read()); t.start(); t.join()
pid=os.fork()
if pid==0:
    open(fork).read()
    if os.fork()==0:
        os.chdir(os.path.dirname(grand)); open(os.path.basename(grand)).read(); os._exit(0)
    os.wait(); os._exit(0)
os.waitpid(pid,0)
subprocess.run(["/bin/sh","-c","cat "+vsh+" >/dev/null"])
`
	ws := t.TempDir()
	argv := append([]string{py, "-c", script}, files...)
	rep := judge(t, table(t, ws), ws, argv, runStrace(t, ws, argv...))
	pids := map[int]bool{}
	for _, p := range files {
		f := has(rep, p, grant.OpRead)
		if f == nil {
			t.Errorf("%s not listed: %+v", p, rep.Findings)
			continue
		}
		pids[f.Pid] = true
	}
	if len(pids) < 4 {
		t.Errorf("reads from %d processes, want at least 4 (main and thread may share one): %+v", len(pids), rep.Findings)
	}
}

// TestRealLookups: cd /, realpath and stat on the way to the workspace are
// no finding; a stat of a link the target made judges the link itself
// (AT_SYMLINK_NOFOLLOW), stat -L what it leads to; listing / is a read.
func TestRealLookups(t *testing.T) {
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	for _, c := range []struct {
		name   string
		script string
		listed []string
	}{
		{"on the way", `cd / && cd "$OLDPWD" && realpath . >/dev/null && stat / "$(dirname "$PWD")" >/dev/null && test -d /usr`, nil},
		{"the link itself", "ln -s " + secret + " l && stat l >/dev/null && readlink l >/dev/null", nil},
		{"what the link leads to", "ln -s " + secret + " l && stat -L l >/dev/null", []string{secret}},
		{"a sibling", "stat " + host + " >/dev/null", []string{host}},
		{"listing /", "ls / >/dev/null", []string{"/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			argv := []string{"/bin/sh", "-c", c.script}
			rep := judge(t, table(t, dir), dir, argv, runStrace(t, dir, argv...))
			var got []string
			for _, f := range rep.Findings {
				got = append(got, f.Path)
			}
			if strings.Join(got, "|") != strings.Join(c.listed, "|") {
				t.Fatalf("listed %q, want %q: %+v", got, c.listed, rep.Findings)
			}
		})
	}
}

// TestRealHardLinkAndBindMount: a connection through a hard link the
// target made to a host socket, and through the destination of a bind
// mount it made (in a mount namespace of its own), is listed by the
// socket's real path.
func TestRealHardLinkAndBindMount(t *testing.T) {
	py := python(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare is not installed")
	}
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("no mount namespace for the test: %v", err)
	}
	host := t.TempDir()
	sock := filepath.Join(host, "host.sock")
	serveUnix(t, sock)
	ws := t.TempDir()
	connect := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.close()
`
	for _, c := range []struct{ name, script string }{
		{"hard link", "ln " + sock + " h && " + py + " -c '" + connect + "' h && rm h"},
		{"bind mount destination", "mkdir -p m && mount --bind " + host + " m && " + py + " -c '" + connect + "' m/host.sock; umount m; rmdir m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv := []string{"unshare", "-m", "--propagation", "private", "/bin/sh", "-c", c.script}
			rep := judge(t, table(t, ws), ws, argv, runStrace(t, ws, argv...))
			if f := has(rep, sock, grant.OpConnect); f == nil || f.Result != "0" {
				t.Fatalf("the connection to %s is not listed by its real path: %+v", sock, rep.Findings)
			}
		})
	}
}

// TestRealExecFromThread: a thread that calls execve while others run
// makes strace print "<pid changed to …>", "+++ superseded by execve …"
// and a resume of the exec under the leader's pid; the trace stays
// evidence and the exec is judged.
func TestRealExecFromThread(t *testing.T) {
	py := python(t)
	host := t.TempDir()
	prog := filepath.Join(host, "prog")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	argv := []string{py, "-c", `import threading, os, sys, time
def go(): os.execv(sys.argv[1], ["prog"])
threading.Thread(target=go).start(); time.sleep(5)`, prog}
	tr := runStrace(t, ws, argv...)
	if !bytes.Contains(tr, []byte("superseded")) {
		t.Logf("strace printed no superseded line:\n%s", tail(tr))
	}
	rep := judge(t, table(t, ws), ws, argv, tr)
	if has(rep, prog, grant.OpExec) == nil {
		t.Fatalf("the exec from a thread is not listed: %+v\n%s", rep.Findings, tail(tr))
	}
}

// TestRealWorkloadsAreEvidence: ordinary workloads (git, a Go program of
// many goroutines, Python multiprocessing and threads ended by os._exit,
// signals and job control, killed and stopped children, an itimer
// interrupting calls) keep the trace parseable evidence: the lines strace
// prints for them ("???", resumes, pid changes, kills) are all read.
func TestRealWorkloadsAreEvidence(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nimport (\n\t\"fmt\"\n\t\"sync\"\n)\n\nfunc main() {\n\tvar wg sync.WaitGroup\n\tfor i := 0; i < 50; i++ {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done(); _ = fmt.Sprint(i) }()\n\t}\n\twg.Wait()\n}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n\ngo 1.22\n"), 0o644)
	py := python(t)
	cmds := [][]string{
		{"/bin/sh", "-c", "git init -q r && cd r && echo a > a && git add a && git -c user.name=a -c user.email=a@a commit -qm a && git clone -q . ../c && cd .. && rm -rf r c"},
		{"/bin/sh", "-c", "sleep 5 & kill -9 $!; wait; timeout -s KILL 0.2 cat /dev/zero >/dev/null; sleep 1 & p=$!; kill -STOP $p; kill -CONT $p; wait"},
		{py, "-c", "import os,signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\nfor i in range(2000): os.stat('/etc/hostname'); open('/etc/hostname').close()"},
		{py, "-c", "import threading,os\nts=[threading.Thread(target=lambda: [os.stat('/etc') for _ in range(300)]) for _ in range(8)]\n[t.start() for t in ts]\nos._exit(0)"},
		{py, "-c", "import multiprocessing as m\nif __name__=='__main__':\n  with m.Pool(4) as p: print(sum(p.map(abs, range(1000))))"},
	}
	if gobin, err := exec.LookPath("go"); err == nil {
		cmds = append(cmds, []string{gobin, "run", "."})
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		rep := judge(t, table(t, ws), ws, c, runStrace(t, ws, c...)) // fails on a trace that is no evidence
		if !rep.Started || rep.Lines < 10 {
			t.Errorf("%v: %d lines, started %v", c, rep.Lines, rep.Started)
		}
	}
}

// serveUnix listens on the Unix socket sock and closes every connection it
// accepts, until the test ends.
func serveUnix(t *testing.T, sock string) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}
