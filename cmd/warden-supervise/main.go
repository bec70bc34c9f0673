// Command warden-supervise serves warden's process supervision helpers (the
// watchdog and the gate that becomes the target). warden re-executes it
// instead of itself when it is installed beside warden, because it starts in
// a fraction of the time: it links nothing but core/supervise. It is not run
// by hand.
package main

import (
	"fmt"
	"os"

	"github.com/warden-run/warden/core/supervise"
)

func main() {
	if supervise.Init() {
		return
	}
	fmt.Fprintln(os.Stderr, "warden-supervise serves warden's process supervision; it is not run by hand")
	os.Exit(2)
}
