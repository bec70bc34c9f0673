package bwrapshim

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

func run(c Config, path string, argv []string) error {
	// Landlock and no-new-privs bind the calling thread; exec keeps only it.
	runtime.LockOSThread()
	if c.Landlock > 0 {
		if err := restrictExec(c.Landlock, c.Exec, c.Scope); err != nil {
			return err
		}
	}
	// The limits last, right before the exec: a small address space must
	// not starve this Go process first.
	for _, l := range []struct {
		name     string
		resource int
		v        uint64
	}{{"RLIMIT_AS", unix.RLIMIT_AS, c.AS}, {"RLIMIT_NPROC", unix.RLIMIT_NPROC, c.NProc}} {
		if l.v == 0 {
			continue
		}
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("setrlimit %s %d: %v", l.name, l.v, err)
		}
	}
	err := unix.Exec(path, argv, os.Environ())
	return fmt.Errorf("exec %s: %v", path, err)
}

// LandlockABI is the kernel's Landlock ABI version, or why it has none.
func LandlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// restrictExec enforces a Landlock domain that handles only the execute
// right and grants it beneath each path that exists in the view ("/" for a
// domain that limits no exec). Being in a domain also keeps the target
// from tracing processes outside it (the sandbox's PID 1), and with scope
// from signalling them or connecting to their abstract Unix sockets.
func restrictExec(want int, paths []string, scope bool) error {
	abi, err := LandlockABI()
	if err != nil || abi < want {
		return fmt.Errorf("the plan needs Landlock ABI %d, the kernel has %d (%v)", want, abi, err)
	}
	// ABI 1 knows handled_access_fs and handled_access_net (16 bytes),
	// ABI 6 scoped too (24 bytes).
	attr := unix.LandlockRulesetAttr{Handled_access_fs: unix.LANDLOCK_ACCESS_FS_EXECUTE}
	size := uintptr(16)
	if scope {
		if abi < 6 {
			return fmt.Errorf("the plan needs Landlock scopes (ABI 6), the kernel has ABI %d", abi)
		}
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size = 24
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %v", e)
	}
	defer unix.Close(int(fd))
	for _, p := range paths {
		pfd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) {
			continue // not in the view: nothing there to execute
		}
		if err != nil {
			return fmt.Errorf("open %s: %v", p, err)
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: unix.LANDLOCK_ACCESS_FS_EXECUTE, Parent_fd: int32(pfd)}
		_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		unix.Close(pfd)
		if e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %v", p, e)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", e)
	}
	return nil
}
