// Command warden-bwrap-shim is the bubblewrap plugin's shim: bwrap runs it
// in the sandbox to set resource limits and the Landlock execute layer
// before it executes the target. See package bwrapshim.
package main

import (
	"fmt"
	"os"

	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
)

func main() {
	bwrapshim.Main()
	fmt.Fprintf(os.Stderr, "usage: %s %s CONFIG PATH ARGV0 [ARG...] (the bubblewrap plugin runs it in its sandbox)\n", bwrapshim.Binary, bwrapshim.Arg)
	os.Exit(2)
}
