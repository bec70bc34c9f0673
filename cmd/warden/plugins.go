package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/pluginhost"
	"github.com/warden-run/warden/core/privroot"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// pluginInfo is one line of `warden plugins`.
type pluginInfo struct {
	Name      string            `json:"name"`
	Path      string            `json:"path"`
	SHA256    string            `json:"sha256"`
	Version   string            `json:"version,omitempty"`
	Summary   string            `json:"summary,omitempty"`
	Stages    []string          `json:"stages,omitempty"`
	Supported bool              `json:"supportsHost"`
	Health    string            `json:"health"`
	Reason    string            `json:"reason,omitempty"`
	Facts     map[string]string `json:"facts,omitempty"`
	Shadowed  []string          `json:"shadowed,omitempty"`
	Error     string            `json:"error,omitempty"`
}

func pluginsCommand() *cli.Command {
	return &cli.Command{
		Name:  "plugins",
		Usage: "list the plugins on the search path, with version, stages, health on this host and sha256",
		Flags: []cli.Flag{jsonFlag, &cli.BoolFlag{Name: "no-probe", Usage: "describe only; do not probe the host"}},
		Action: func(c *cli.Context) error {
			dirs := pluginhost.SearchPath()
			found, skipped := pluginhost.Discover(dirs)
			root, err := privroot.Open()
			if err != nil {
				return err
			}
			defer root.Close()
			parent, err := root.NewParent()
			if err != nil {
				return err
			}
			defer parent.Remove()
			sock, err := parent.Dir(privroot.SocketsDir)
			if err != nil {
				return err
			}
			infos := make([]pluginInfo, len(found))
			var wg sync.WaitGroup
			for i, f := range found {
				wg.Add(1)
				go func() {
					defer wg.Done()
					infos[i] = inspect(c.Context, f, sock, !c.Bool("no-probe"))
				}()
			}
			wg.Wait()
			if c.Bool("json") {
				b, _ := json.MarshalIndent(struct {
					SearchPath []string             `json:"searchPath"`
					Plugins    []pluginInfo         `json:"plugins"`
					Skipped    []pluginhost.Skipped `json:"skipped"`
				}{dirs, infos, skipped}, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			fmt.Fprintf(c.App.Writer, "search path: %s\n\n", strings.Join(dirs, ":"))
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSTAGES\tHEALTH\tPATH\tSHA256")
			for _, in := range infos {
				health := in.Health
				if in.Reason != "" && in.Health != "healthy" {
					health += ": " + in.Reason
				}
				if in.Error != "" {
					health = "error: " + firstLine(in.Error)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Version, strings.Join(in.Stages, ","), health, in.Path, short12(in.SHA256))
				for _, s := range in.Shadowed {
					fmt.Fprintf(tw, "  (shadowed)\t\t\t\t%s\t\n", s)
				}
			}
			tw.Flush()
			for _, s := range skipped {
				fmt.Fprintf(c.App.Writer, "skipped %s: %s\n", s.Path, s.Reason)
			}
			return nil
		},
	}
}

func inspect(ctx context.Context, f pluginhost.Found, sock string, probe bool) pluginInfo {
	in := pluginInfo{Name: f.Name, Path: f.Path, Shadowed: f.Shadowed, Health: "unknown"}
	in.SHA256, _ = pluginhost.FileSHA256(f.Path)
	p, err := pluginhost.Launch(ctx, pluginhost.Options{Name: f.Name, Path: f.Path, SocketDir: sock})
	if err != nil {
		in.Error = err.Error()
		return in
	}
	defer p.Kill()
	d := p.Desc
	in.Version, in.Summary = d.GetVersion(), d.GetSummary()
	for _, s := range d.GetStages() {
		in.Stages = append(in.Stages, strings.ToLower(strings.TrimPrefix(s.String(), "STAGE_")))
	}
	in.Supported = p.SupportsHost(runtime.GOOS, runtime.GOARCH)
	if !probe {
		return in
	}
	home, _ := os.UserHomeDir()
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pr, err := pb.NewPluginClient(p.Conn()).Probe(pctx, &pb.ProbeRequest{Host: &pb.HostInfo{
		Goos: runtime.GOOS, Goarch: runtime.GOARCH, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Home: home,
	}})
	if err != nil {
		in.Error = p.CallError(pctx, "Probe", err).Error()
		return in
	}
	in.Health = strings.ToLower(strings.TrimPrefix(pr.GetHealth().String(), "HEALTH_"))
	in.Reason, in.Facts = pr.GetReason(), pr.GetFacts()
	return in
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func short12(sum string) string {
	s := strings.TrimPrefix(sum, "sha256:")
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
