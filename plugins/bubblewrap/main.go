// Command warden-plugin-bubblewrap is warden's Linux confine plugin: it
// plans a bwrap command for each target launch. See package bwrapplan.
package main

import (
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapplan"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
)

func main() {
	bwrapshim.Main() // without warden-bwrap-shim beside it, the sandbox runs this binary as its shim
	sdk.Serve(bwrapplan.New())
}
