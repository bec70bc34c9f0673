// Command warden-plugin-strace is warden's Linux audit plugin: strace around
// the confined launch, every access outside the grants listed. See package
// straceaudit.
package main

import (
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/strace/straceaudit"
)

func main() { sdk.Serve(straceaudit.New()) }
