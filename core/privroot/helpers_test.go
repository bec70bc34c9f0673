package privroot

import (
	"time"

	"golang.org/x/sys/unix"
)

func umask(mask int) int { return unix.Umask(mask) }

func closeFd(fd int) { unix.Close(fd) }

const atFdcwd = unix.AT_FDCWD

func sleepBriefly() { time.Sleep(time.Millisecond) }
