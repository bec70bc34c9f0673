package supervise

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// The supervising helpers are re-execs of the running binary (like docker's
// reexec): roleEnv in their environment names the role, and Init runs it.
// The value is "watchdog" or "gate:<fd>", fd being the gate's socket.
const (
	roleEnv      = "_WARDEN_SUPERVISE_ROLE"
	roleWatchdog = "watchdog"
	roleGate     = "gate:"
	helperArgv0  = "warden-supervise"
)

// helperEnv is added to the environment of both helpers (see race.go).
var helperEnv []string

// watchdogRole is the role a watchdog is started with; a variable only so
// that a test can start a watchdog that never arms.
var watchdogRole = roleWatchdog

// initialized is set by Init; Start refuses to run without it, because a
// re-exec of a binary that does not call Init would run that binary's main
// instead of the helper.
var initialized atomic.Bool

var errNoInit = errors.New("supervise.Init was not called at the start of main (or TestMain)")

// Init must be the first call in main of every binary that uses this package
// (warden itself, and the TestMain of every test binary that starts targets):
//
//	func main() {
//		if supervise.Init() {
//			return
//		}
//		...
//	}
//
// When the process is one of the package's helpers (the watchdog, or the gate
// that becomes the target), Init runs the helper and ends the process; it
// never returns then. Otherwise it returns false at once and enables Start.
// The result is a bool so main reads like docker's reexec.Init.
func Init() bool {
	role, ok := os.LookupEnv(roleEnv)
	if !ok {
		initialized.Store(true)
		return false
	}
	switch {
	case role == roleWatchdog:
		os.Exit(runWatchdog(os.NewFile(3, "warden")))
	case strings.HasPrefix(role, roleGate):
		fd, err := strconv.Atoi(strings.TrimPrefix(role, roleGate))
		if err != nil || fd < 3 {
			os.Exit(gateExitSetup)
		}
		os.Exit(runGate(fd))
	}
	os.Exit(gateExitSetup)
	return false
}

// gateExitSetup is the gate's exit status when it ends before becoming the
// target (warden went away, or a malformed hand-off).
const gateExitSetup = 125

// The gate is the target's process before the target runs: a re-exec of this
// binary, started in the target's own process group with the target's
// directory, standard files and extra files, and Pdeathsig on Linux. It
// waits on its socket for the exec message, which warden sends only after the
// watchdog has armed for the group, then execs the target in place (same pid,
// same group). So the target never runs unwatched.
//
// Gate protocol on the socket: warden writes the message and shuts down its
// write side; the gate answers "x" just before execve. The socket is
// close-on-exec, so a successful exec shows warden EOF right after "x"; a
// failed exec appends the errno in decimal. EOF without "x" means the gate
// ended before exec.
func runGate(fd int) int {
	syscall.CloseOnExec(fd)
	sock := os.NewFile(uintptr(fd), "warden")
	msg, err := io.ReadAll(sock)
	if err != nil || len(msg) == 0 {
		return gateExitSetup // warden went away before releasing the target
	}
	path, argv, env, ok := decodeExec(msg)
	if !ok {
		return gateExitSetup
	}
	if _, err := sock.Write([]byte("x")); err != nil {
		return gateExitSetup
	}
	err = syscall.Exec(path, argv, env)
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	fmt.Fprintf(sock, "%d", int(errno))
	if errno == syscall.ENOENT {
		return errdefs.ExitNotFound
	}
	return errdefs.ExitNotExecutable
}

// encodeExec packs what the gate passes to execve: the fields path, argc,
// argv..., env... joined by NUL (which no exec argument can contain), as a
// netstring "<length>:<body>" so that a message cut short by warden's death
// is refused rather than run with half an environment.
func encodeExec(path string, argv, env []string) []byte {
	fields := append([]string{path, strconv.Itoa(len(argv))}, argv...)
	body := strings.Join(append(fields, env...), "\x00")
	return []byte(strconv.Itoa(len(body)) + ":" + body)
}

func decodeExec(msg []byte) (path string, argv, env []string, ok bool) {
	size, body, found := strings.Cut(string(msg), ":")
	if n, err := strconv.Atoi(size); !found || err != nil || n != len(body) {
		return "", nil, nil, false
	}
	fields := strings.Split(body, "\x00")
	if len(fields) < 2 {
		return "", nil, nil, false
	}
	argc, err := strconv.Atoi(fields[1])
	if err != nil || argc < 0 || argc > len(fields)-2 {
		return "", nil, nil, false
	}
	return fields[0], fields[2 : 2+argc], fields[2+argc:], true
}

// execError maps the errno the gate reports for a failed execve to the
// error class of DESIGN.md "Exit codes": not found is 127, anything else
// (permission, not an executable format, a directory) 126.
func execError(path string, errno syscall.Errno) error {
	if errno == syscall.ENOENT {
		return errdefs.Errorf(errdefs.ErrNotFound, "unable to execute %s: %w", path, errno)
	}
	return errdefs.Errorf(errdefs.ErrNotExecutable, "unable to execute %s: %w", path, errno)
}

// socketPair returns a connected pair: warden's end as a *net.UnixConn (for
// deadlines and half-close) and the helper's end as a file to pass to it.
// Both ends are close-on-exec in warden, so no other child inherits them: a
// leaked copy of warden's end would keep the watchdog from seeing warden die.
func socketPair() (*net.UnixConn, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("unable to create a socket pair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "supervise")
	defer ours.Close()
	theirs := os.NewFile(uintptr(fds[1]), "supervise-helper")
	conn, err := net.FileConn(ours) // a close-on-exec duplicate
	if err != nil {
		theirs.Close()
		return nil, nil, fmt.Errorf("unable to use a socket pair: %w", err)
	}
	return conn.(*net.UnixConn), theirs, nil
}
