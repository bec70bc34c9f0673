// Command warden runs untrusted target code in a confined, disposable
// workspace, records every access it makes outside its grants, scores the
// result and seals the evidence. Each verb lives in its own file and is a
// thin adapter from flags to a core call.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/supervise"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if supervise.Init() {
		return
	}
	supervise.UseHelperBeside()
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(args)
	if err == nil {
		return 0
	}
	var ex exitError
	if errors.As(err, &ex) {
		if ex.msg != "" {
			fmt.Fprintln(stderr, "warden:", ex.msg)
		}
		return ex.code
	}
	var cliExit cli.ExitCoder
	if errors.As(err, &cliExit) {
		// urfave/cli's own exits (an unknown command answers 3) are usage
		// errors here: 3 means an access outside the grants.
		fmt.Fprintln(stderr, "warden:", err)
		return errdefs.ExitUsage
	}
	fmt.Fprintln(stderr, "warden:", err)
	code := errdefs.Code(err)
	if code == errdefs.ExitPlugin && !errors.Is(err, errdefs.ErrPlugin) {
		// An error of no class here comes from flag parsing: usage.
		code = errdefs.ExitUsage
	}
	return code
}

// exitError carries an exit code whose message was already printed (or
// that has none to print).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
func (e exitError) ExitCode() int { return e.code }

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:  "warden",
		Usage: "run untrusted code confined, audit what it touches, score it and seal the evidence",
		Description: "Exit codes: 0 passed · 1 evaluation failed · 2 usage or invalid pipeline · " +
			"3 access outside the grants observed · 4 timeout or structural failure · 5 plugin or runtime fault · " +
			"12 host cannot confine/observe or integrity failed · 126/127 target not executable/not found.",
		Version:         version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			pluginsCommand(),
			schemaCommand(),
			versionCommand(),
			explainCommand(),
			preflightCommand(),
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return exitError{code: errdefs.ExitUsage, msg: err.Error()}
		},
	}
}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print a JSON result on stdout"}
