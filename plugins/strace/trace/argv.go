package trace

// Syscalls are the calls the trace records: every file syscall, the socket
// calls that carry an address, the mount calls, exec, and the calls the judge
// needs to follow working directories and processes.
const Syscalls = "%file,connect,sendto,sendmsg,sendmmsg,bind,mount,umount2,pivot_root,open_tree,move_mount,mount_setattr," +
	"fsopen,fsmount,fsconfig,chdir,fchdir,clone,clone3,fork,vfork,io_uring_setup"

// Argv is the observer's command line around plan, writing the trace to
// file:
//
//   - -f follows every process and thread; --seccomp-bpf stops a process only
//     at the traced calls, so a process that makes few runs at about its
//     untraced speed;
//   - --decode-pids=pidns prints every pid in strace's own namespace, so the
//     pids of a bwrap --unshare-pid sandbox do not collide;
//   - -q drops the attach notes but keeps "+++ exited/killed +++";
//   - -xx prints every string in hex and -y every descriptor with its path
//     (also in hex), so no file name can break a line; -X raw prints flags as
//     numbers; -s 65535 never cuts a path (PATH_MAX is 4096);
//   - io_uring_setup fails with ENOSYS, so no ring carries an unseen access.
//
// One trace file, not -ff: its name is known before the run and the parser
// joins "<unfinished ...>" with "<... resumed>" by pid.
func Argv(strace, file string, plan []string) []string {
	argv := []string{strace, "-f", "--seccomp-bpf", "--decode-pids=pidns", "-q", "-xx", "-y", "-X", "raw", "-s", "65535",
		"-e", "trace=" + Syscalls, "-e", "inject=io_uring_setup:error=ENOSYS", "-o", file, "--"}
	return append(argv, plan...)
}
