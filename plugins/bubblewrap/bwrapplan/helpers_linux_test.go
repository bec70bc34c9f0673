package bwrapplan

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The sandboxed programs of the tests are this test binary (helperBin, a
// copy every user can reach) run with a mode as its first argument, so the
// suite needs no toolchain at run time (it runs as an unprivileged user
// too):
//
//   - escapeArg ATTACK...: tries each attack (see attacks) and prints one
//     line each: "<attack> ok" when the kernel let it through, or
//     "<attack> <errno text>";
//   - connectArg ADDRESS...: tries each address (unix:/path,
//     abstract:name, tcp:host:port) and prints "<address> ok" or the
//     error number's text.
const (
	escapeArg  = "--warden-test-escape"
	connectArg = "--warden-test-connect"
)

// helperMain runs a mode and exits, when the binary was started in one.
func helperMain() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case escapeArg:
		escapeMain(os.Args[2:])
	case connectArg:
		connectMain(os.Args[2:])
	default:
		return
	}
	os.Exit(0)
}

const (
	tiocsti = 0x5412
	// tiocstiHigh is TIOCSTI with high bits set, the form that passed a
	// 64-bit seccomp comparison (CVE-2019-10063); the kernel truncates it.
	tiocstiHigh = 0x100000000 | tiocsti
)

var attacks = map[string]func(arg string) error{
	// ptrace:PID attaches to the process.
	"ptrace": func(a string) error {
		pid, err := strconv.Atoi(a)
		if err != nil {
			return err
		}
		if err := syscall.PtraceAttach(pid); err != nil {
			return err
		}
		// Let it run again: wait for the attach's stop, then detach.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		_ = syscall.PtraceDetach(pid)
		return nil
	},
	// procmem:PID opens the process's memory for writing.
	"procmem": func(a string) error {
		fd, err := syscall.Open("/proc/"+a+"/mem", syscall.O_RDWR, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	},
	// tiocsti:FD pushes "X" into the terminal's input queue.
	"tiocsti":     func(a string) error { return sti(a, tiocsti) },
	"tiocstihigh": func(a string) error { return sti(a, tiocstiHigh) },
	// signal:PID sends SIGCONT (harmless to a running process).
	"signal": func(a string) error {
		pid, err := strconv.Atoi(a)
		if err != nil {
			return err
		}
		return syscall.Kill(pid, syscall.SIGCONT)
	},
	// umount:PATH detaches the mount.
	"umount": func(a string) error { return syscall.Unmount(a, syscall.MNT_DETACH) },
	// mount:PATH mounts a tmpfs on it.
	"mount": func(a string) error { return syscall.Mount("tmpfs", a, "tmpfs", 0, "") },
	// read:PATH reads one byte.
	"read": func(a string) error {
		f, err := os.Open(a)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Read(make([]byte, 1))
		return err
	},
	// syslog reads the kernel log buffer (dmesg).
	"syslog": func(string) error {
		_, err := syscall.Klogctl(3, make([]byte, 4096))
		return err
	},
	// userns makes a nested user namespace.
	"userns": func(string) error { return syscall.Unshare(syscall.CLONE_NEWUSER) },
}

func sti(a string, cmd uintptr) error {
	fd, err := strconv.Atoi(a)
	if err != nil {
		return err
	}
	c := byte('X')
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), cmd, uintptr(unsafe.Pointer(&c))); e != 0 {
		return e
	}
	return nil
}

func escapeMain(args []string) {
	runtime.LockOSThread() // ptrace requests come from the attaching thread
	for _, a := range args {
		name, arg, _ := strings.Cut(a, ":")
		f, ok := attacks[name]
		if !ok {
			fmt.Fprintln(os.Stderr, "escape: unknown attack", name)
			os.Exit(2)
		}
		err := f(arg)
		var errno syscall.Errno
		switch {
		case err == nil:
			fmt.Println(a, "ok")
		case errors.As(err, &errno):
			fmt.Println(a, errno.Error())
		default:
			fmt.Println(a, err)
		}
	}
}

func connectMain(args []string) {
	for _, a := range args {
		kind, addr, _ := strings.Cut(a, ":")
		network := kind
		switch kind {
		case "abstract":
			network, addr = "unix", "@"+addr
		}
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Println(a, "ok")
			continue
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Println(a, errno.Error())
		} else {
			fmt.Println(a, err)
		}
	}
}
