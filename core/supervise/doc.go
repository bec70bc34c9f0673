// Package supervise is warden's one launcher for target processes: it starts
// a target, keeps it and everything it spawns inside one process group, and
// makes sure none of that group outlives the run, whatever the target does
// and however warden itself ends. It applies spec 001 "How the skill runner
// supervises its agent" (POSIX part) to warden's target.
//
// # Processes
//
// Three processes take part besides warden:
//
//   - The target, which leads its own process group (its pid is the group
//     id). It starts life as the gate: a re-exec of the running binary, in
//     the target's group, directory and files, that waits until warden
//     releases it and then execs the target's program in place (same pid).
//   - The watchdog: a re-exec of the running binary in a session of its own
//     (so Ctrl-C, Ctrl-Z and the loss of warden's terminal do not reach it),
//     tied to warden by a socket only warden holds the other end of. If that
//     socket closes without a "release", warden has died: the watchdog
//     SIGKILLs the target's group and exits.
//   - On Linux the kernel adds Pdeathsig SIGKILL on the target itself.
//
// Both helpers are reached through Init, which must be the first call in
// main of every binary that starts targets, and in TestMain of every test
// binary that does.
//
// # Order of start
//
// Start forks the watchdog and the gate, hands the gate's pid to the watchdog
// and waits for it to acknowledge, and only then tells the gate to exec the
// target. So the target's program never runs unwatched: if warden dies
// before the acknowledgement, the gate, which has not run any target code,
// ends with warden (Pdeathsig on Linux, EOF on its socket everywhere).
//
// # Ending
//
// When the target exits, Start's supervision sends SIGKILL to its whole group
// while the target is still an unreaped zombie (so the group id cannot have
// been reused), drains the output pipes with a bound, releases the watchdog,
// reaps the target and waits until no live process is left in the group. A
// timeout, Stop, NotifyStop or the end of the context sends the group the
// stopping signal and SIGKILL after the grace period.
//
// # Limits
//
// A process that leaves the group (setsid, setpgid) escapes the group kill;
// confinement, not this package, keeps the target from doing that where it
// matters. A target running as warden's user can signal the watchdog; only
// SIGKILL ends it early, and then only Pdeathsig (Linux) still covers the
// target's own process if warden is SIGKILLed too. Between the exit of a
// target and Wait's return, warden holds no pipe open for output written
// after the drain: it is lost, and not counted.
package supervise
