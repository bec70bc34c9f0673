// Command warden-plugin-workspace is warden's workspace plugin: a
// disposable git checkout with the evaluation folder withheld. See package
// gitcheckout.
package main

import (
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/workspace/gitcheckout"
)

func main() { sdk.Serve(gitcheckout.New()) }
