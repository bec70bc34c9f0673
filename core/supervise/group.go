package supervise

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

// KillGroup sends SIGKILL to every process in process group pgid, then
// SIGCONT (SIGKILL already ends a stopped process; the SIGCONT only makes sure
// nothing of the group stays suspended). A group that no longer exists is not
// an error. KillGroup refuses pgid 0 and 1, negative values and the caller's
// own group, since kill(2) reads those as "every process I may signal" or
// "myself".
func KillGroup(pgid int) error {
	if err := signalGroup(pgid, unix.SIGKILL); err != nil {
		return err
	}
	return signalGroup(pgid, unix.SIGCONT)
}

// signalGroup sends sig to process group pgid; a group that is gone counts as
// signalled.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 || pgid == unix.Getpgrp() {
		return errdefs.Errorf(errdefs.ErrInvalid, "refusing to signal process group %d", pgid)
	}
	err := unix.Kill(-pgid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("unable to send %s to process group %d: %w", unix.SignalName(sig), pgid, err)
}

// killUntilGone sends SIGKILL to group pgid while a live process is left
// in it, for at most bound, and reports whether the group is gone. One kill
// normally suffices; repeating covers a member that was between fork and
// return when the first one landed. It signals only a group it has just
// seen alive, whose live members keep the number from being reused.
func killUntilGone(pgid int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for GroupAlive(pgid) {
		if KillGroup(pgid) != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
