//go:build !linux

package bwrapshim

import (
	"fmt"
	"runtime"
)

func run(Config, string, []string) error {
	return fmt.Errorf("the shim runs on Linux only, not %s", runtime.GOOS)
}

// LandlockABI says there is no Landlock off Linux.
func LandlockABI() (int, error) {
	return 0, fmt.Errorf("no Landlock on %s", runtime.GOOS)
}
