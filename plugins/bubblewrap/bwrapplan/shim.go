package bwrapplan

import (
	"encoding/json"
	"fmt"
	"os"
)

// The shim is the plugin's own binary, bound read-only into the sandbox at
// shimPath and run by bwrap in place of the target when a launch needs
// something bwrap cannot do: resource limits set inside the sandbox's user
// namespace (RLIMIT_NPROC then counts the sandbox's processes, not the
// user's on the host) and a Landlock execute layer. It sets them, then
// executes the target with the spec's own argv (argv[0] included). It
// fails closed: when it cannot set what the plan says, the target does not
// run and the shim exits shimFailed.
const (
	shimPath   = "/dev/.warden-shim"
	shimArg    = "--warden-bwrap-shim"
	shimFailed = 125
)

// shimConfig is the shim's first argument after shimArg, as JSON.
type shimConfig struct {
	AS    uint64 `json:"as,omitempty"`    // RLIMIT_AS, bytes
	NProc uint64 `json:"nproc,omitempty"` // RLIMIT_NPROC
	// Landlock is the ABI the plan expects (0: no Landlock layer); Exec
	// the sandbox paths whose programs may be executed.
	Landlock int      `json:"landlock,omitempty"`
	Exec     []string `json:"exec,omitempty"`
}

// MaybeShim runs the shim and does not return when the process was started
// as the shim (os.Args[1] is shimArg). The plugin's main and the package's
// TestMain call it first.
func MaybeShim() {
	if len(os.Args) < 2 || os.Args[1] != shimArg {
		return
	}
	if len(os.Args) < 5 {
		shimFail(fmt.Errorf("usage: %s %s CONFIG PATH ARGV0 [ARG...]", shimPath, shimArg))
	}
	var c shimConfig
	if err := json.Unmarshal([]byte(os.Args[2]), &c); err != nil {
		shimFail(fmt.Errorf("config %q: %v", os.Args[2], err))
	}
	shimFail(runShim(c, os.Args[3], os.Args[4:]))
}

func shimFail(err error) {
	fmt.Fprintf(os.Stderr, "warden-bwrap-shim: %v; the target did not run\n", err)
	os.Exit(shimFailed)
}
