package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/engine"
	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pipeline"
	"github.com/warden-run/warden/core/supervise"
)

func preflightCommand() *cli.Command {
	return &cli.Command{
		Name:  "preflight",
		Usage: "probe the host and run the target's legs confined and audited, and report what a run would list (exit 3) so grants can be fixed first",
		Description: "preflight runs every plugin's probe, builds the workspace and runs the target once per trial\n" +
			"(each a leg), confined and audited, without scoring. It reports the accesses outside the grants\n" +
			"that every leg made, with the grant that would admit each.",
		ArgsUsage: "PIPELINE",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.StringFlag{Name: "runs-dir", Value: "runs", Usage: "where run directories are made"},
			&cli.StringFlag{Name: "policy", Usage: "host policy file (default " + engine.DefaultPolicy + " when present)"},
			&cli.StringFlag{Name: "log-level", EnvVars: []string{"WARDEN_LOG"}, Value: "warn", Usage: "log level of warden and its plugins"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitError{code: errdefs.ExitUsage, msg: "preflight takes one pipeline file"}
			}
			p, err := pipeline.Load(c.Args().First())
			if err != nil {
				return err
			}
			if !p.Confinement {
				return exitError{code: errdefs.ExitUsage, msg: fmt.Sprintf("%s: confinement: false: a preflight audits the target, and this pipeline opts out of confinement and audit", c.Args().First())}
			}
			ctx, stop := supervise.NotifyStop(c.Context)
			defer stop()
			sum, err := engine.Run(ctx, engine.Options{
				Pipeline: c.Args().First(), Policy: c.String("policy"), RunsDir: c.String("runs-dir"),
				Stdout: c.App.Writer, Stderr: c.App.ErrWriter, LogLevel: c.String("log-level"),
				Version: version, Preflight: true,
			})
			if c.Bool("json") {
				b, _ := json.MarshalIndent(sum, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
			} else {
				printPreflight(c.App.Writer, sum)
			}
			if err != nil {
				return exitError{code: errdefs.Code(err), msg: err.Error()}
			}
			return nil
		},
	}
}

func printPreflight(w io.Writer, sum engine.Summary) {
	if len(sum.ObservedMounts) == 0 {
		if sum.ExitCode == 0 {
			fmt.Fprintln(w, "preflight: every leg stayed within the grants")
		}
		return
	}
	fmt.Fprintf(w, "preflight: %d access(es) outside the grants in every leg:\n", len(sum.ObservedMounts))
	for _, a := range sum.ObservedMounts {
		fmt.Fprintf(w, "  %-7s %s  (%s, pid %d)\n", a.Op, a.Path, a.Syscall, a.PID)
		if hint := grantHint(a); hint != "" {
			fmt.Fprintf(w, "          to allow it: %s\n", hint)
		}
	}
}

// grantHint names the grant that would admit an access, when one can.
func grantHint(a engine.Access) string {
	switch a.Op {
	case "read":
		return fmt.Sprintf("grants.read: [%s]", a.Path)
	case "write":
		return fmt.Sprintf("grants.write: [%s]", a.Path)
	case "exec":
		return fmt.Sprintf("grants.exec.allow: [%s]", a.Path)
	case "connect":
		return "no grant: host services are closed to the target"
	}
	return ""
}
