// Command warden-plugin-seal is warden's seal plugin: a SHA256SUMS of
// every file of the run directory. See package sums.
package main

import (
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/seal/sums"
)

func main() { sdk.Serve(sums.New()) }
