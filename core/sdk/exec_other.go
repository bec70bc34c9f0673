//go:build !linux

package sdk

import "os/exec"

// setPdeathsig has nothing to set outside Linux: the helper stays in the
// plugin's process group, which the core kills as a whole.
func setPdeathsig(*exec.Cmd) {}
