//go:build !linux

package bwrapplan

import (
	"fmt"
	"runtime"
)

func runShim(shimConfig, string, []string) error {
	return fmt.Errorf("the shim runs on Linux only, not %s", runtime.GOOS)
}
