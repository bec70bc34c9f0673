// Command escape tries each attack it is named (see attacks) inside the
// sandbox and prints one line each: "<attack> ok" when the kernel let it
// through, or "<attack> <errno text>". The escape tests run it under the
// planned bwrap and, as a control, bare.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

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

func main() {
	for _, a := range os.Args[1:] {
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
