//go:build !linux

package pluginhost

import "syscall"

// sysProcAttr puts the plugin in its own process group. Without Pdeathsig,
// the SDK's parent watcher ends a plugin whose core has died.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
