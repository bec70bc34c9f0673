package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/supervise"
)

// How warden's run command drives a target: Init first in main, signals to
// warden passed on to the target, the timeout mapped to exit 4.
func Example() {
	if supervise.Init() {
		return
	}
	ctx, stop := supervise.NotifyStop(context.Background())
	defer stop()

	res, err := supervise.Run(ctx, supervise.Spec{
		Path:       "/bin/sh",
		Args:       []string{"sh", "-c", "make test"},
		Env:        []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"},
		Dir:        "/tmp/workspace",
		StdoutPath: "runs/1/target.stdout",
		StderrPath: "runs/1/target.stderr",
		StderrEcho: os.Stderr, // --stream
		Timeout:    10 * time.Minute,
	})
	if err != nil {
		os.Exit(errdefs.Code(err)) // 126/127 for exec failures, 4 for a watchdog that could not arm
	}
	var intr *supervise.Interrupted
	switch {
	case errors.As(context.Cause(ctx), &intr):
		fmt.Println("run failed:", intr) // run.json status "failed"
	case res.Err() != nil:
		os.Exit(errdefs.Code(res.Err())) // 4
	default:
		fmt.Println("target:", res)
	}
}
