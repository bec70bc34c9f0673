package pluginhost

import "syscall"

// sysProcAttr puts the plugin in its own process group and has the kernel
// kill it when the core dies, SIGKILL included. Pdeathsig fires on the death
// of the thread that started the plugin (golang/go#27505); Go parks idle
// threads rather than ending them unless a goroutine exits while locked to
// its thread, which the core never does on a launching goroutine.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
