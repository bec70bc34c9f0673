// Package bwrapshim is the bubblewrap plugin's shim: a small program that
// bwrap runs in place of the target when a launch needs what bwrap cannot
// do, that is resource limits set inside the sandbox's user namespace
// (RLIMIT_NPROC then counts the sandbox's processes, not the user's on the
// host) and a Landlock execute layer. It sets them, then executes the
// target with the spec's own argv (argv[0] included). It fails closed: when
// it cannot set what the plan says, the target does not run and the shim
// exits Failed.
//
// The shim is its own binary (warden-bwrap-shim, built from
// plugins/bubblewrap/shim) so that it starts in a few milliseconds; the
// plugin's binary can serve as the shim too (it calls Main first), at the
// cost of its larger start. This package imports nothing heavy for that
// reason.
package bwrapshim

import (
	"encoding/json"
	"fmt"
	"os"
)

const (
	// Path is where the plan binds the shim in the sandbox.
	Path = "/dev/.warden-shim"
	// Arg is the shim's first argument: it tells a binary that serves as
	// the shim and as something else which it is.
	Arg = "--warden-bwrap-shim"
	// Failed is the shim's exit status when it could not set a limit or
	// the Landlock layer, or execute the target.
	Failed = 125
	// Binary is the dedicated shim's file name, beside the plugin's.
	Binary = "warden-bwrap-shim"
)

// Config is the shim's argument after Arg, as JSON.
type Config struct {
	AS    uint64 `json:"as,omitempty"`    // RLIMIT_AS, bytes
	NProc uint64 `json:"nproc,omitempty"` // RLIMIT_NPROC
	// Landlock is the ABI the plan expects (0: no Landlock layer); Exec
	// the sandbox paths beneath which programs may be executed.
	Landlock int      `json:"landlock,omitempty"`
	Exec     []string `json:"exec,omitempty"`
	// Scope adds Landlock's scopes (ABI 6): no signal to, and no abstract
	// Unix socket connection with, a process outside the domain.
	Scope bool `json:"scope,omitempty"`
}

// Main runs the shim and does not return when the process was started as
// the shim (os.Args[1] is Arg): Arg CONFIG PATH ARGV0 [ARG...].
func Main() {
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	if len(os.Args) < 5 {
		fail(fmt.Errorf("usage: %s %s CONFIG PATH ARGV0 [ARG...]", Path, Arg))
	}
	var c Config
	if err := json.Unmarshal([]byte(os.Args[2]), &c); err != nil {
		fail(fmt.Errorf("config %q: %v", os.Args[2], err))
	}
	fail(run(c, os.Args[3], os.Args[4:]))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "warden-bwrap-shim: %v; the target did not run\n", err)
	os.Exit(Failed)
}
