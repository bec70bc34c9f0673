package main

// End-to-end tests of the audit (issue 5): real warden, real bubblewrap,
// real strace, through the engine. Each needs the confined demo's tools.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const py = "/usr/bin/python3"

func needAudit(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"bwrap", "strace"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if _, err := os.Stat(filepath.Join(binDir, "warden-plugin-strace")); err != nil {
		t.Skip("the strace plugin is not built (make build; WARDEN_BIN=$PWD/bin)")
	}
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s is not installed", py)
	}
}

// runDirOf is the run directory of a `run --json` summary.
func runDirOf(t *testing.T, r result) string {
	t.Helper()
	var sum struct{ RunDir string }
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.RunDir == "" {
		t.Fatalf("summary: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return sum.RunDir
}

func trialStdout(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "trials", "1", "stdout"))
	must(t, err)
	return string(b)
}

// listed returns the observed access of path with op, or nil.
func listed(obs []map[string]any, path, op string) map[string]any {
	for _, a := range obs {
		if a["path"] == path && a["op"] == op {
			return a
		}
	}
	return nil
}

// script writes a Python program into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// Looking up the directories on the way to a granted place (cd /, realpath,
// stat of "/", of /usr and of the workspace's parents) is no finding, so an
// ordinary program passes; listing "/" (its entries) and a stat of the
// withheld folder are listed.
func TestAuditLookupsOnTheWay(t *testing.T) {
	needAudit(t)
	dir, p := confined(t, `[sh, -c, 'cd / && cd "$OLDPWD" && realpath . >/dev/null && stat / /usr "$(dirname "$PWD")" >/dev/null && test -x /usr/bin/env && sh solve.sh']`, "")
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 0)
	if obs := observed(t, r); len(obs) != 0 {
		t.Fatalf("lookups on the way to granted places were listed: %v", obs)
	}

	dir, p = confined(t, "[true]", "")
	repo := filepath.Join(dir, "repo")
	b, _ := os.ReadFile(p)
	look := fmt.Sprintf(`run: [sh, -c, 'ls / >/dev/null; stat %s/eval >/dev/null; sh solve.sh']`, repo)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "run: [true]", look, 1)), 0o644))
	r = warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	obs := observed(t, r)
	if listed(obs, "/", "read") == nil {
		t.Errorf("the listing of / is not listed: %v", obs)
	}
	a := listed(obs, filepath.Join(repo, "eval"), "read")
	if a == nil {
		t.Fatalf("the stat of the withheld folder is not listed: %v", obs)
	}
	if rule, _ := a["rule"].(string); !strings.Contains(rule, "lookup") {
		t.Errorf("the stat's rule does not say it was a lookup: %v", a)
	}
}

// An exec of a program the grants deny, inside the sandbox, is listed.
func TestAuditExecDeniedInsideIsListed(t *testing.T) {
	needAudit(t)
	dir, p := confined(t, "[sh, -c, 'cat /etc/hostname; sh solve.sh']", "    deny: [cat]\n")
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	cat, err := exec.LookPath("cat")
	must(t, err)
	real, _ := filepath.EvalSymlinks(cat)
	obs := observed(t, r)
	if listed(obs, cat, "exec") == nil && listed(obs, real, "exec") == nil && listed(obs, "/bin/cat", "exec") == nil {
		t.Fatalf("the exec of cat is not listed: %v", obs)
	}
}

// io_uring_setup answers ENOSYS to a confined, audited target (strace's
// fault injection): io_uring's calls would bypass the trace.
func TestAuditIoUringSetupIsENOSYS(t *testing.T) {
	needAudit(t)
	needPython(t)
	grants := t.TempDir()
	s := script(t, grants, "uring.py", `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
r = libc.syscall(425, 1, params)
print("io_uring_setup", r, ctypes.get_errno())
`)
	dir, p := confined(t, fmt.Sprintf("[sh, -c, '%s %s; sh solve.sh']", py, s), fmt.Sprintf("  read: [%s]\n", grants))
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 0)
	if out := trialStdout(t, runDirOf(t, r)); !strings.Contains(out, fmt.Sprintf("io_uring_setup -1 %d", syscall.ENOSYS)) {
		t.Fatalf("io_uring_setup did not answer ENOSYS: %q", out)
	}
}

// A connection to a host Unix socket bound after the call started (so no
// confiner could mask it) is listed by the socket's path.
func TestAuditConnectToSocketBoundLater(t *testing.T) {
	needAudit(t)
	needPython(t)
	grants, sockDir := t.TempDir(), t.TempDir()
	sock := filepath.Join(sockDir, "late.sock")
	marker := filepath.Join(grants, "started")
	s := script(t, grants, "connect.py", fmt.Sprintf(`import os, socket, time
open(%q, "w").close()
for _ in range(400):
    if os.path.exists(%q):
        break
    time.sleep(0.01)
c = socket.socket(socket.AF_UNIX)
c.connect(%q)
print("connected", c.recv(2).decode())
`, marker, sock, sock))
	dir, p := confined(t, fmt.Sprintf("[sh, -c, '%s %s; sh solve.sh']", py, s), fmt.Sprintf("  write: [%s]\n", grants))
	done := runUntilMarker(t, dir, p, marker)
	ln, err := net.Listen("unix", sock)
	must(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	r := <-done
	r.want(t, 3)
	if out := trialStdout(t, runDirOf(t, r)); !strings.Contains(out, "connected hi") {
		t.Fatalf("the target did not reach the socket: %q", out)
	}
	if a := listed(observed(t, r), sock, "connect"); a == nil || a["syscall"] != "connect" {
		t.Fatalf("the connection to %s is not listed: %v", sock, observed(t, r))
	}
}

// A bind mount in a nested user namespace: bwrap >= 0.8.0 disables nested
// user namespaces, so unshare is refused and nothing is mounted or listed;
// on a host where it is allowed, the mount of /usr is listed by its source.
func TestAuditNestedNamespaceBindMount(t *testing.T) {
	needAudit(t, "unshare")
	dir, p := confined(t, `[sh, -c, 'mkdir -p m; unshare -Urm mount --bind /usr m; echo "rc=$?"; sh solve.sh']`, "")
	r := warden(t, dir, "run", "--json", p)
	out := trialStdout(t, runDirOf(t, r))
	obs := observed(t, r)
	switch {
	case strings.Contains(out, "rc=0"):
		r.want(t, 3)
		if listed(obs, "/usr", "mount") == nil {
			t.Fatalf("the nested bind mount of /usr is not listed: %v", obs)
		}
	case strings.Contains(out, "rc="):
		// Refused: the user namespace was not made, nothing was mounted.
		t.Logf("nested user namespace refused: %s", strings.TrimSpace(out))
		r.want(t, 0)
		for _, a := range obs {
			if a["op"] == "mount" {
				t.Fatalf("a refused nested mount was listed: %v", obs)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(runDirOf(t, r), "trials", "1", "stderr")); !strings.Contains(string(b), "unshare") {
			t.Fatalf("unshare did not say why it was refused: %q", b)
		}
	default:
		t.Fatalf("the target did not run: %q\n%s", out, r.stderr)
	}
}

// A target of many processes and threads (a thread, a fork, a vfork'd
// subprocess, a shell pipeline) is audited in every one of them.
func TestAuditEveryProcessAndThread(t *testing.T) {
	needAudit(t)
	needPython(t)
	grants, secrets := t.TempDir(), t.TempDir()
	var files []string
	for _, n := range []string{"main", "thread", "fork", "spawn", "grandchild"} {
		f := filepath.Join(secrets, n)
		must(t, os.WriteFile(f, []byte(n+"\n"), 0o644))
		files = append(files, f)
	}
	s := script(t, grants, "many.py", fmt.Sprintf(`import os, subprocess, threading
def read(p):
    with open(p) as f:
        f.read()
read(%q)
th = threading.Thread(target=read, args=(%q,))
th.start(); th.join()
pid = os.fork()
if pid == 0:
    read(%q)
    os._exit(0)
os.waitpid(pid, 0)
subprocess.run(["/bin/cat", %q], stdout=subprocess.DEVNULL, check=True)
subprocess.run(["/bin/sh", "-c", "(cat %s) >/dev/null"], check=True)
print("done")
`, files[0], files[1], files[2], files[3], files[4]))
	dir, p := confined(t, fmt.Sprintf("[sh, -c, '%s %s && sh solve.sh']", py, s), fmt.Sprintf("  read: [%s]\n", grants))
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	if out := trialStdout(t, runDirOf(t, r)); !strings.Contains(out, "done") {
		t.Fatalf("the target did not finish: %q", out)
	}
	obs := observed(t, r)
	pids := map[any]bool{}
	for _, f := range files {
		a := listed(obs, f, "read")
		if a == nil {
			t.Errorf("the read of %s is not listed", f)
			continue
		}
		pids[a["pid"]] = true
	}
	if len(pids) < 4 {
		t.Errorf("the reads were made by %d pids, want at least 4 (the thread shares the process): %v", len(pids), obs)
	}
}

// A killed strace is no evidence: the run stops with 12 and the trial has
// no audit record.
func TestAuditKilledStraceIs12(t *testing.T) {
	needAudit(t)
	grants := t.TempDir()
	marker := filepath.Join(grants, "started")
	dir, p := confined(t, fmt.Sprintf("[sh, -c, 'touch %s; sleep 3; sh solve.sh']", marker), fmt.Sprintf("  write: [%s]\n", grants))
	done := runUntilMarker(t, dir, p, marker)
	pid := straceOf(marker)
	if pid == 0 {
		t.Fatalf("no strace process traces the target: %+v", <-done)
	}
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r := <-done
	r.want(t, 12, "observer")
	t.Logf("%s", r.stderr)
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "run.json"))
	if len(runs) != 1 {
		t.Fatalf("run.json: %v", runs)
	}
	raw, err := os.ReadFile(runs[0])
	must(t, err)
	var rec struct {
		ExitCode int
		Trials   []map[string]json.RawMessage
	}
	must(t, json.Unmarshal(raw, &rec))
	if rec.ExitCode != 12 || len(rec.Trials) != 1 {
		t.Fatalf("run.json after a killed strace: %s", raw)
	}
	if a, ok := rec.Trials[0]["audit"]; ok {
		t.Fatalf("the trial of a killed strace has an audit record: %s", a)
	}
	if m := rec.Trials[0]["observedMounts"]; len(m) > 0 && string(m) != "[]" && string(m) != "null" {
		t.Fatalf("the trial of a killed strace lists accesses: %s", m)
	}
}

// straceOf finds the strace process whose command line names needle.
func straceOf(needle string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(string(b), "\x00")
		if filepath.Base(argv[0]) == "strace" && strings.Contains(string(b), needle) {
			return pid
		}
	}
	return 0
}

// Ordinary programs that resolve paths, start interpreters and walk a
// repository pass the audit with no finding: realpath, pwd -P, python3,
// git status, a shell's cd.
func TestAuditOrdinaryProgramsPass(t *testing.T) {
	needAudit(t, "git")
	needPython(t)
	dir, p := confined(t, fmt.Sprintf(`[sh, -c, 'realpath . && pwd -P && cd .. && cd - && %s -c "import os, json; print(os.getcwd(), os.path.realpath(\".\"))" && git status --porcelain && sh solve.sh']`, py), "")
	r := warden(t, dir, "run", "--json", p)
	if obs := observed(t, r); len(obs) != 0 {
		t.Fatalf("ordinary programs were listed: %v", obs)
	}
	r.want(t, 0)
}

// A thread that calls execve (the leader's pid changes hands) leaves the
// trace evidence: the run passes, it does not stop with 12.
func TestAuditExecFromThread(t *testing.T) {
	needAudit(t)
	needPython(t)
	grants := t.TempDir()
	s := script(t, grants, "thread_exec.py", `import os, threading, time
threading.Thread(target=lambda: os.execv("/bin/sh", ["sh", "solve.sh"])).start()
time.sleep(10)
`)
	dir, p := confined(t, fmt.Sprintf("[%s, %s]", py, s), fmt.Sprintf("  read: [%s]\n", grants))
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 0)
	if out := trialStdout(t, runDirOf(t, r)); !strings.Contains(out, "solved") {
		t.Fatalf("the exec'd program did not run: %q", out)
	}
}

// A target the time limit ends is still audited: the trace up to its end
// is evidence (not 12), and what it did before is listed (the listing's
// exit 3 outranks the timeout's 4).
func TestAuditTimedOutTarget(t *testing.T) {
	needAudit(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	must(t, os.WriteFile(secret, []byte("s\n"), 0o644))
	dir, p := confined(t, fmt.Sprintf("[sh, -c, 'cat %s; sleep 30']", secret), "")
	start := time.Now()
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3, "timed out")
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the run took %v", d)
	}
	if listed(observed(t, r), secret, "read") == nil {
		t.Fatalf("the read before the timeout is not listed: %v", observed(t, r))
	}
}

// runUntilMarker starts `warden run --json` on p and returns once the target
// has made marker; the result arrives on the channel when the run ends.
func runUntilMarker(t *testing.T, dir, p, marker string) <-chan result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- warden(t, dir, "run", "--json", p) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target never started: %+v", <-done)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
