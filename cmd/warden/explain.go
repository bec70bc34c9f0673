package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warden-run/warden/core/engine"
	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/pipeline"
)

func explainCommand() *cli.Command {
	common := []cli.Flag{
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true, Usage: "the pipeline whose grants judge"},
		&cli.StringFlag{Name: "policy", Usage: "host policy file (default " + engine.DefaultPolicy + " when present)"},
		&cli.StringFlag{Name: "workspace", Usage: "directory that stands for the workspace (default: the pipeline's repo)"},
	}
	return &cli.Command{
		Name:  "explain",
		Usage: "show the verdict the grants give a program or a path, and the rule that decided",
		Subcommands: []*cli.Command{
			{
				Name:      "exec",
				Usage:     "judge a program as the guard would before launch (exit 0 allow, 1 deny, 126/127 missing)",
				ArgsUsage: "-- PROGRAM [ARGS...]",
				Flags:     common,
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return exitError{code: errdefs.ExitUsage, msg: "explain exec needs a program: warden explain exec -f PIPELINE -- PROGRAM [ARGS...]"}
					}
					t, ws, err := explainTable(c)
					if err != nil {
						return err
					}
					return explainExec(c.App.Writer, t, ws, c.Args().Slice())
				},
			},
			{
				Name:      "path",
				Usage:     "judge a file access as the audit would (exit 0 allow, 1 deny)",
				ArgsUsage: "PATH",
				Flags: append(common,
					&cli.BoolFlag{Name: "write", Usage: "judge a write (same as --op write)"},
					&cli.StringFlag{Name: "op", Value: "read", Usage: "the access: read, write, connect, mount, or lookup (stat, readlink, chdir: metadata only)"}),
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return exitError{code: errdefs.ExitUsage, msg: "explain path takes one path"}
					}
					t, _, err := explainTable(c)
					if err != nil {
						return err
					}
					op, ok := map[string]grant.Op{"read": grant.OpRead, "write": grant.OpWrite, "connect": grant.OpConnect,
						"mount": grant.OpMount, "lookup": grant.OpLookup}[c.String("op")]
					if !ok {
						return exitError{code: errdefs.ExitUsage, msg: fmt.Sprintf("explain path --op %q: want read, write, connect, mount or lookup", c.String("op"))}
					}
					if c.Bool("write") {
						op = grant.OpWrite
					}
					return explainPath(c.App.Writer, t, c.Args().First(), op)
				},
			},
		},
	}
}

// explainTable compiles the table a trial of the pipeline would get, with
// the given directory standing for the workspace.
func explainTable(c *cli.Context) (grant.Table, string, error) {
	p, err := pipeline.Load(c.String("file"))
	if err != nil {
		return grant.Table{}, "", err
	}
	layers := []grant.Layer{p.Grants.Layer("pipeline")}
	policy := c.String("policy")
	if policy == "" {
		if _, err := os.Stat(engine.DefaultPolicy); err == nil {
			policy = engine.DefaultPolicy
		}
	}
	if policy != "" {
		l, err := pipeline.LoadPolicy(policy)
		if err != nil {
			return grant.Table{}, "", err
		}
		layers = append(layers, l)
	}
	ws := c.String("workspace")
	if ws == "" {
		ws = p.Repo
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return grant.Table{}, "", err
	}
	home, _ := os.UserHomeDir()
	places := grant.Places{Workspace: ws}
	if p.Confinement {
		places.PrivateHome = home
	}
	t, err := grant.Compile(places, grant.Tools{}, layers...)
	return t, ws, err
}

func explainExec(w io.Writer, t grant.Table, ws string, argv []string) error {
	head := grant.ResolveHead(argv[0], ws, os.Getenv("PATH"))
	if err := head.Err(); err != nil {
		fmt.Fprintf(w, "%s: missing — %v\n", argv[0], err)
		return exitError{code: errdefs.Code(err)}
	}
	prog := head.Program
	fmt.Fprintf(w, "program:  %s\n", prog)
	if prog.Real() != "" && prog.Real() != prog.Path() {
		fmt.Fprintf(w, "runs:     %s\n", prog.Real())
	}
	adm, err := t.CheckExec(head, argv)
	var denied *grant.DeniedError
	switch {
	case err == nil:
		printDecision(w, adm.Decision())
		return nil
	case errors.As(err, &denied):
		printDecision(w, denied.Decision)
		if denied.Decision.Verdict.Admits(nil) || !denied.Decision.Verdict.IsDeny() {
			fmt.Fprintf(w, "argv:     %s is not admitted with these arguments\n", strings.Join(argv, " "))
		}
		return exitError{code: 1}
	default:
		return err
	}
}

func explainPath(w io.Writer, t grant.Table, path string, op grant.Op) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	fmt.Fprintf(w, "access:   %s %s\n", op, abs)
	if real != abs {
		fmt.Fprintf(w, "resolves: %s\n", real)
	}
	d := t.Access(real, op)
	printDecision(w, d)
	if !d.Allowed() {
		return exitError{code: 1}
	}
	return nil
}

func printDecision(w io.Writer, d grant.Decision) {
	verdict := "allow"
	if !d.Allowed() {
		verdict = "deny"
	}
	if args, ok := d.Verdict.IsOnly(); ok {
		verdict = fmt.Sprintf("only with first argument %s", strings.Join(args, " | "))
	}
	fmt.Fprintf(w, "verdict:  %s\n", verdict)
	if d.Rule.Kind == grant.RuleNone {
		fmt.Fprintf(w, "rule:     none matched; what no rule allows is denied\n")
	} else {
		fmt.Fprintf(w, "rule:     %s\n", d.Rule)
		for _, s := range d.Rule.Sources {
			fmt.Fprintf(w, "  from    %s\n", s)
		}
	}
	if d.Respelled != "" {
		fmt.Fprintf(w, "respelled: the deny names %q; it holds this program under another spelling\n", d.Respelled)
	}
	if d.Reason != "" {
		fmt.Fprintf(w, "why:      %s\n", d.Reason)
	}
}
