package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pipeline"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check pipeline files and report every error of every file",
		ArgsUsage: "PIPELINE...",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitError{code: errdefs.ExitUsage, msg: "validate takes one or more pipeline files"}
			}
			err := pipeline.ValidateFiles(c.Args().Slice()...)
			if c.Bool("json") {
				out := struct {
					Valid  bool             `json:"valid"`
					Errors []pipeline.Error `json:"errors"`
				}{Valid: err == nil, Errors: []pipeline.Error{}}
				var pe *pipeline.Errors
				if errors.As(err, &pe) {
					out.Errors = pe.List
				}
				b, _ := json.MarshalIndent(out, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
				if err != nil {
					return exitError{code: errdefs.Code(err)}
				}
				return nil
			}
			if err != nil {
				return exitError{code: errdefs.Code(err), msg: err.Error()}
			}
			for _, f := range c.Args().Slice() {
				fmt.Fprintf(c.App.Writer, "%s: valid\n", f)
			}
			return nil
		},
	}
}
