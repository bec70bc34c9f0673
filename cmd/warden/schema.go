package main

import (
	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/pipeline"
)

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema (draft-07) of pipeline files, for editors",
		Action: func(c *cli.Context) error {
			_, err := c.App.Writer.Write(append(pipeline.Schema(), '\n'))
			return err
		},
	}
}
