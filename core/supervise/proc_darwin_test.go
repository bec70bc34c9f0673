package supervise

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processGone reports whether pid has exited; on darwin an unreaped zombie
// still counts as present.
func processGone(pid int) bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }

// childrenOf is not implemented on darwin (no /proc); the leak check is
// Linux-only.
func childrenOf(int) []int { return nil }
