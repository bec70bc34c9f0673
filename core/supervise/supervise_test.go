package supervise

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// sh returns a Spec that runs script with /bin/sh, capturing into dir.
func sh(dir, script string) Spec {
	return Spec{
		Path:       "/bin/sh",
		Args:       []string{"sh", "-c", script},
		Env:        []string{"PATH=/usr/bin:/bin"},
		StdoutPath: filepath.Join(dir, "stdout"),
		StderrPath: filepath.Join(dir, "stderr"),
	}
}

// run runs spec and checks that supervision left nothing behind: no live
// process in the target's group and no child (watchdog, gate) of the test.
// The duration runs from Start's return, so it measures supervision, not
// the start of the helpers (slow under -race).
func run(t *testing.T, spec Spec) (Result, time.Duration) {
	t.Helper()
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	start := time.Now()
	res, err := p.Wait()
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	checkNothingLeft(t, res.Pid)
	return res, elapsed
}

func checkNothingLeft(t *testing.T, pgid int) {
	t.Helper()
	if pgid > 0 && GroupAlive(pgid) {
		t.Errorf("process group %d still has live processes", pgid)
		_ = KillGroup(pgid)
	}
	if kids := childrenOf(os.Getpid()); len(kids) > 0 {
		t.Errorf("children left behind: %v", kids)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBackgroundChildIsKilledAndRunReturnsPromptly(t *testing.T) {
	dir := t.TempDir()
	res, elapsed := run(t, sh(dir, "sleep 1000 & echo $!; echo hi"))
	if res.ExitCode != 0 || res.Signal != 0 || res.TimedOut || res.Stopped {
		t.Errorf("result = %+v, want a clean exit 0", res)
	}
	// Under the drain's 2 s bound: the pipe reached EOF because the group
	// kill took the background child, not because the drain gave up.
	if elapsed >= drainTotal {
		t.Errorf("Run took %s with a background child holding stdout", elapsed)
	}
	lines := strings.Fields(readFile(t, filepath.Join(dir, "stdout")))
	if len(lines) != 2 || lines[1] != "hi" {
		t.Fatalf("stdout = %q", lines)
	}
	bg, _ := strconv.Atoi(lines[0])
	if !processGone(bg) {
		t.Errorf("background child %d survived", bg)
	}
}

// A process that leaves the group keeps running (a documented limit), but
// holding the output pipe cannot keep warden waiting beyond the drain bounds.
func TestDrainIsBoundedWhenAnEscapeeHoldsThePipe(t *testing.T) {
	for _, tc := range []struct {
		role          string
		max           time.Duration
		wantTruncated bool
	}{
		// Upper bounds only, with slack for a loaded host: a chatty writer
		// that the scheduler pauses for 100 ms ends the drain early, as it
		// should.
		{"holder-idle", drainIdle + 1500*time.Millisecond, false},
		{"holder-chatty", drainTotal + 1500*time.Millisecond, true},
	} {
		t.Run(tc.role, func(t *testing.T) {
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "holder.pid")
			spec := sh(dir, `"$0" & echo started; until [ -s "$PIDFILE" ]; do sleep 0.01; done`)
			spec.Args = append(spec.Args, os.Args[0])
			spec.Env = append(spec.Env, testRoleEnv+"="+tc.role, "PIDFILE="+pidfile)
			spec.OutputLimit = 16 // more than "started\n", less than it plus one chatty line
			res, elapsed := run(t, spec)
			pid, err := strconv.Atoi(readFile(t, pidfile))
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Kill(pid, unix.SIGKILL)
			if elapsed > tc.max {
				t.Errorf("Run took %s, want at most %s", elapsed, tc.max)
			}
			if !strings.HasPrefix(readFile(t, filepath.Join(dir, "stdout")), "started\n") {
				t.Errorf("stdout lost the target's own output")
			}
			if res.StdoutTruncated != tc.wantTruncated {
				t.Errorf("StdoutTruncated = %v after %d bytes", res.StdoutTruncated, res.StdoutBytes)
			}
			// The idle escapee lives on outside the group; the chatty one
			// dies of SIGPIPE once warden closes the pipe.
			if tc.role == "holder-idle" && processGone(pid) {
				t.Errorf("the escapee %d is gone; this test no longer shows the drain bound", pid)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     string
		wantSignal syscall.Signal
		min, max   time.Duration
	}{
		{"honours SIGTERM", "sleep 1000 & sleep 1000", unix.SIGTERM, 200 * time.Millisecond, 2 * time.Second},
		{"ignores SIGTERM", `trap "" TERM; sleep 1000 & sleep 1000`, unix.SIGKILL, 500 * time.Millisecond, 2500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := sh(t.TempDir(), tc.script)
			spec.Timeout = 200 * time.Millisecond
			spec.Grace = 300 * time.Millisecond
			res, elapsed := run(t, spec)
			if !res.TimedOut || res.Stopped || res.Signal != tc.wantSignal || res.ExitCode != -1 {
				t.Errorf("result = %+v (%s), want timed out by %v", res, res, tc.wantSignal)
			}
			if elapsed > tc.max {
				t.Errorf("Run took %s, want at most %s", elapsed, tc.max)
			}
			if got := errdefs.Code(res.Err()); got != errdefs.ExitTimeout {
				t.Errorf("exit code of %v = %d, want %d", res.Err(), got, errdefs.ExitTimeout)
			}
		})
	}
}

func TestOutputIsCapturedAndBounded(t *testing.T) {
	dir := t.TempDir()
	spec := sh(dir, `printf "%0100d" 0; printf err >&2`)
	spec.OutputLimit = 10
	var echo bytes.Buffer
	spec.StdoutEcho = &echo
	res, _ := run(t, spec)
	if got := readFile(t, spec.StdoutPath); got != strings.Repeat("0", 10) {
		t.Errorf("stdout capture = %q, want the first 10 bytes", got)
	}
	if res.StdoutBytes != 100 || !res.StdoutTruncated {
		t.Errorf("stdout: %d bytes, truncated %v; want 100, true", res.StdoutBytes, res.StdoutTruncated)
	}
	if got := readFile(t, spec.StderrPath); got != "err" || res.StderrBytes != 3 || res.StderrTruncated {
		t.Errorf("stderr: %q, %d bytes, truncated %v", got, res.StderrBytes, res.StderrTruncated)
	}
	if echo.Len() != 100 {
		t.Errorf("echo got %d bytes, want every byte (100)", echo.Len())
	}

	// Without a capture file the stream is counted, not kept.
	spec = sh(dir, `printf "%0100d" 0`)
	spec.StdoutPath, spec.StderrPath, spec.OutputLimit = "", "", 10
	if res, _ := run(t, spec); res.StdoutBytes != 100 || res.StdoutTruncated {
		t.Errorf("uncaptured stdout: %d bytes, truncated %v; want 100, false", res.StdoutBytes, res.StdoutTruncated)
	}
}

// The target gets exactly the Spec: argv spelling, environment, directory,
// /dev/null as stdin, the extra files and no descriptor of warden's.
func TestTargetGetsExactlyTheSpec(t *testing.T) {
	dir := t.TempDir()
	res, _ := run(t, Spec{
		Path:       os.Args[0],
		Args:       []string{"spelled-argv0", "a b", ""},
		Env:        []string{testRoleEnv + "=introspect", "ONLY=this"},
		Dir:        dir,
		StdoutPath: filepath.Join(dir, "stdout"),
	})
	if res.ExitCode != 0 {
		t.Fatalf("introspect target: %s", res)
	}
	var got struct {
		Args, Env []string
		Dir       string
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "stdout"))), &got); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if strings.Join(got.Args, "|") != "spelled-argv0|a b|" || strings.Join(got.Env, "|") != testRoleEnv+"=introspect|ONLY=this" || got.Dir != realDir {
		t.Errorf("target saw %+v", got)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec := sh(dir, `if read x; then echo stdin:data; else echo stdin:eof; fi
echo extra >&3
{ true >&4; } 2>/dev/null && echo fd4:open || echo fd4:closed`)
	spec.ExtraFiles = []*os.File{w}
	run(t, spec)
	w.Close()
	if got := readFile(t, spec.StdoutPath); got != "stdin:eof\nfd4:closed\n" {
		t.Errorf("stdout = %q, want stdin at EOF and fd 4 (the gate's socket) closed", got)
	}
	if extra, _ := bufio.NewReader(r).ReadString('\n'); extra != "extra\n" {
		t.Errorf("extra file got %q", extra)
	}
}

// waitForOutput polls a capture file until it contains want.
func waitForOutput(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never contained %q", path, want)
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     string
		wantExit   int
		wantSignal syscall.Signal
	}{
		{"handled", `trap "echo got-int; exit 7" INT; echo ready; while :; do sleep 0.05; done`, 7, 0},
		{"ignored", `trap "" INT; echo ready; sleep 1000 & sleep 1000`, -1, unix.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := sh(t.TempDir(), tc.script)
			spec.Grace = 300 * time.Millisecond
			p, err := Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			waitForOutput(t, spec.StdoutPath, "ready")
			p.Stop(unix.SIGINT)
			res, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			checkNothingLeft(t, res.Pid)
			if !res.Stopped || res.TimedOut || res.ExitCode != tc.wantExit || res.Signal != tc.wantSignal {
				t.Errorf("result = %+v", res)
			}
			p.Stop(unix.SIGTERM) // after the end: nothing to do, nothing to break
		})
	}
}

func TestContextEndStopsTarget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	spec := sh(t.TempDir(), "echo ready; sleep 1000")
	p, err := Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	waitForOutput(t, spec.StdoutPath, "ready")
	cancel()
	res, err := p.Wait()
	checkNothingLeft(t, res.Pid)
	if err != nil || !res.Stopped || res.Signal != unix.SIGTERM {
		t.Errorf("result = %+v, %v; want stopped by SIGTERM", res, err)
	}
	if _, err := Start(ctx, spec); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with an ended context: %v", err)
	}
}

func TestNotifyStopForwardsWardensSignalToEveryTarget(t *testing.T) {
	ctx, stop := NotifyStop(context.Background())
	defer stop()
	var procs []*Process
	for range 3 {
		spec := sh(t.TempDir(), "echo ready; sleep 1000 & sleep 1000")
		p, err := Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		waitForOutput(t, spec.StdoutPath, "ready")
		procs = append(procs, p)
	}
	if err := unix.Kill(os.Getpid(), unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		res, err := p.Wait()
		if err != nil || !res.Stopped || res.Signal != unix.SIGHUP {
			t.Errorf("result = %+v, %v; want stopped by SIGHUP", res, err)
		}
		if GroupAlive(res.Pid) {
			t.Errorf("process group %d still has live processes", res.Pid)
		}
	}
	checkNothingLeft(t, 0)
	var intr *Interrupted
	if !errors.As(context.Cause(ctx), &intr) || intr.Signal != unix.SIGHUP {
		t.Errorf("context cause = %v, want *Interrupted{SIGHUP}", context.Cause(ctx))
	}
}

func TestExecFailures(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{filepath.Join(dir, "missing"), errdefs.ExitNotFound},
		{plain, errdefs.ExitNotExecutable},
		{dir, errdefs.ExitNotExecutable},
	} {
		_, err := Run(context.Background(), Spec{Path: tc.path})
		if got := errdefs.Code(err); got != tc.want {
			t.Errorf("Run(%s): %v (exit %d), want exit %d", tc.path, err, got, tc.want)
		}
		checkNothingLeft(t, 0)
	}
	if _, err := Run(context.Background(), Spec{Path: "/bin/true", Env: []string{"A=\x00"}}); errdefs.Code(err) != errdefs.ExitUsage {
		t.Errorf("NUL in Env: %v, want an invalid-input error", err)
	}
	if _, err := Run(context.Background(), Spec{Path: "/bin/true", Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Errorf("missing Dir: no error")
	}
	checkNothingLeft(t, 0)
}

// startMiniWarden runs the test binary as a warden (see playRole) and returns
// it with the target's group and the watchdog's pid.
func startMiniWarden(t *testing.T, role string) (cmd *exec.Cmd, lines *bufio.Scanner, pgid, watchdog int) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testRoleEnv+"="+role)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines = bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("mini warden said nothing: %v", lines.Err())
	}
	if _, err := fmtSscan(lines.Text(), &pgid, &watchdog); err != nil {
		t.Fatalf("mini warden said %q: %v", lines.Text(), err)
	}
	t.Cleanup(func() { _ = KillGroup(pgid) })
	return cmd, lines, pgid, watchdog
}

func fmtSscan(line string, pgid, watchdog *int) (int, error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "started" {
		return 0, errors.New("want: started PGID WATCHDOG")
	}
	var err1, err2 error
	*pgid, err1 = strconv.Atoi(f[1])
	*watchdog, err2 = strconv.Atoi(f[2])
	return 2, errors.Join(err1, err2)
}

func waitUntil(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWardenKilledBySIGKILLTakesTheGroupAlong(t *testing.T) {
	for _, groupStopped := range []bool{false, true} {
		t.Run("group stopped "+strconv.FormatBool(groupStopped), func(t *testing.T) {
			cmd, _, pgid, watchdog := startMiniWarden(t, "warden-kill")
			waitUntil(t, "target group alive", 5*time.Second, func() bool { return GroupAlive(pgid) })
			if groupStopped {
				if err := unix.Kill(-pgid, unix.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			waitUntil(t, "target group gone after warden's SIGKILL", 5*time.Second, func() bool { return !GroupAlive(pgid) })
			waitUntil(t, "watchdog gone", 5*time.Second, func() bool { return processGone(watchdog) })
		})
	}
}

// Ctrl-Z suspends warden; the target, in its own group, runs on and ends,
// and warden reports it once resumed.
func TestSuspendedWardenReportsOnResume(t *testing.T) {
	cmd, lines, pgid, _ := startMiniWarden(t, "warden-suspend")
	if err := cmd.Process.Signal(unix.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "target finished while warden is suspended", 5*time.Second, func() bool { return !GroupAlive(pgid) })
	if err := cmd.Process.Signal(unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := readResult(t, lines)
	if res.ExitCode != 0 || res.Signal != 0 || res.TimedOut || res.StdoutBytes != int64(len("done\n")) {
		t.Errorf("result = %+v", res)
	}
}

// While warden is suspended past the target's timeout, the watchdog's
// backstop kills the group; warden reports a timeout once resumed.
func TestBackstopWhileWardenSuspended(t *testing.T) {
	cmd, lines, pgid, _ := startMiniWarden(t, "warden-backstop")
	if err := cmd.Process.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "watchdog backstop kills the group", 8*time.Second, func() bool { return !GroupAlive(pgid) })
	if err := cmd.Process.Signal(unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := readResult(t, lines)
	if !res.TimedOut || res.Signal != unix.SIGKILL {
		t.Errorf("result = %+v, want timed out by SIGKILL", res)
	}
}

func readResult(t *testing.T, lines *bufio.Scanner) Result {
	t.Helper()
	if !lines.Scan() {
		t.Fatalf("mini warden gave no result: %v", lines.Err())
	}
	var res Result
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines.Text(), "result ")), &res); err != nil {
		t.Fatalf("mini warden said %q: %v", lines.Text(), err)
	}
	return res
}

// startGroup starts sleep in a process group of its own, outside Start.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = KillGroup(cmd.Process.Pid); cmd.Wait() })
	return cmd
}

func TestWatch(t *testing.T) {
	t.Run("abandoned kills the group", func(t *testing.T) {
		cmd := startGroup(t)
		w, err := Watch(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		w.abandon() // what warden's death does
		cmd.Wait()
		if GroupAlive(cmd.Process.Pid) || !processGone(w.proc.Pid) {
			t.Errorf("group alive %v, watchdog gone %v", GroupAlive(cmd.Process.Pid), processGone(w.proc.Pid))
		}
	})
	t.Run("released leaves the group alone", func(t *testing.T) {
		cmd := startGroup(t)
		w, err := Watch(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Release(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if !GroupAlive(cmd.Process.Pid) || !processGone(w.proc.Pid) {
			t.Errorf("group alive %v, watchdog gone %v", GroupAlive(cmd.Process.Pid), processGone(w.proc.Pid))
		}
	})
}

func TestKillGroupRefusesDangerousIDs(t *testing.T) {
	for _, pgid := range []int{-7, 0, 1, unix.Getpgrp()} {
		if err := KillGroup(pgid); errdefs.Code(err) != errdefs.ExitUsage {
			t.Errorf("KillGroup(%d) = %v, want a refusal", pgid, err)
		}
	}
	if !GroupAlive(unix.Getpgrp()) {
		t.Errorf("GroupAlive of the test's own group = false")
	}
}

// If the watchdog cannot arm, the target's program never runs.
func TestNoTargetWithoutAnArmedWatchdog(t *testing.T) {
	watchdogRole = "broken"
	defer func() { watchdogRole = roleWatchdog }()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	_, err := Run(context.Background(), sh(dir, "touch "+marker))
	if got := errdefs.Code(err); got != errdefs.ExitTimeout {
		t.Errorf("Run: %v (exit %d), want a setup failure (exit %d)", err, got, errdefs.ExitTimeout)
	}
	if _, statErr := os.Stat(marker); statErr == nil {
		t.Errorf("the target ran without an armed watchdog")
	}
	checkNothingLeft(t, 0)
}

func TestStartRefusesWithoutInit(t *testing.T) {
	initialized.Store(false)
	defer initialized.Store(true)
	if _, err := Start(context.Background(), Spec{Path: "/bin/true"}); !errors.Is(err, errNoInit) {
		t.Errorf("Start without Init: %v", err)
	}
	if _, err := Watch(12345); !errors.Is(err, errNoInit) {
		t.Errorf("Watch without Init: %v", err)
	}
}

// BenchmarkRunNoop measures the supervision overhead of one target: the
// watchdog and gate re-execs, the hand-off, the exit and the settling.
func BenchmarkRunNoop(b *testing.B) {
	for b.Loop() {
		if _, err := Run(context.Background(), Spec{Path: "/bin/true"}); err != nil {
			b.Fatal(err)
		}
	}
}
