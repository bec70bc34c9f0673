package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/engine"
	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/supervise"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a pipeline: workspace, trials confined and audited, score, seal",
		ArgsUsage: "PIPELINE",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.StringFlag{Name: "runs-dir", Value: "runs", Usage: "where run directories are made"},
			&cli.StringFlag{Name: "policy", Usage: "host policy file that restricts the pipeline's grants (default " + engine.DefaultPolicy + " when present)"},
			&cli.BoolFlag{Name: "stream", Usage: "echo the target's output while it runs"},
			&cli.StringFlag{Name: "log-level", EnvVars: []string{"WARDEN_LOG"}, Value: "warn", Usage: "log level of warden and its plugins"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitError{code: errdefs.ExitUsage, msg: "run takes one pipeline file"}
			}
			ctx, stop := supervise.NotifyStop(c.Context)
			defer stop()
			sum, err := engine.Run(ctx, engine.Options{
				Pipeline: c.Args().First(), Policy: c.String("policy"), RunsDir: c.String("runs-dir"),
				Stream: c.Bool("stream"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter, LogLevel: c.String("log-level"), Version: version,
			})
			if c.Bool("json") {
				b, _ := json.MarshalIndent(sum, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
			} else if sum.RunDir != "" {
				fmt.Fprintf(c.App.ErrWriter, "warden: run %s %s (exit %d): %s\n", sum.InvocationID, sum.Status, sum.ExitCode, sum.RunDir)
			}
			if err != nil {
				return exitError{code: errdefs.Code(err), msg: err.Error()}
			}
			return nil
		},
	}
}
