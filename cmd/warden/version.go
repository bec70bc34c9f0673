package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/sdk"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print warden's version and the plugin protocol it speaks",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			v := struct {
				Version    string `json:"version"`
				Protocol   int    `json:"protocol"`
				SDKVersion string `json:"sdkVersion"`
				Go         string `json:"go"`
				Platform   string `json:"platform"`
			}{version, sdk.ProtocolVersion, sdk.Version, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
			if c.Bool("json") {
				b, _ := json.MarshalIndent(v, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			fmt.Fprintf(c.App.Writer, "warden %s (plugin protocol %d, sdk %s, %s, %s)\n", v.Version, v.Protocol, v.SDKVersion, v.Go, v.Platform)
			return nil
		},
	}
}
