// Command warden-plugin-scorer is warden's scorer plugin: it names the
// evaluator command and reads its result. See package score.
package main

import (
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/scorer/score"
)

func main() { sdk.Serve(score.New()) }
