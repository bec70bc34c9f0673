package grant

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warden-run/warden/core/errdefs"
)

// Missing says why a head has no program.
type Missing uint8

const (
	Present       Missing = iota // the head names a program
	NotFound                     // nothing by that name: exit 127
	NotExecutable                // a file or directory that cannot be run: exit 126
)

// String renders "present", "not found" or "not executable".
func (m Missing) String() string {
	return [...]string{"present", "not found", "not executable"}[m]
}

// Head is the first word of a command resolved to what it would run.
// Shown is argv[0] as written. When Missing is Present, Program is what the
// kernel would execute; otherwise there is no program, no grant judges the
// head, and the launch fails with 127 or 126 (Err).
type Head struct {
	Shown   string
	Program Program
	Missing Missing
}

// Err is nil for a present head, else an error wrapping errdefs.ErrNotFound
// (127) or errdefs.ErrNotExecutable (126) that names the head.
func (h Head) Err() error {
	switch h.Missing {
	case NotFound:
		return errdefs.Errorf(errdefs.ErrNotFound, "%s: command not found", h.Shown)
	case NotExecutable:
		return errdefs.Errorf(errdefs.ErrNotExecutable, "%s: not an executable file", h.Shown)
	}
	return nil
}

// ResolveHead resolves argv0 as the kernel and a shell would, with no
// bundled tools: see Tools.ResolveHead.
func ResolveHead(argv0, cwd, pathEnv string) Head {
	return Tools{}.ResolveHead(argv0, cwd, pathEnv)
}

// ResolveHead resolves argv0 for a launch from the directory cwd with the
// effective PATH pathEnv:
//
//   - a bundled tool's name is that tool, with no walk;
//   - any other bare name is the first executable regular file of that name
//     in a PATH directory (a relative directory anchored at cwd); a name found
//     only as non-executable files is NotExecutable, else NotFound;
//   - a path head (one with '/') is anchored at cwd and spelled as written:
//     it is resolved component by component the way the kernel walks it, so
//     a ".." after a symlink leaves the link's target, and a trailing '/'
//     means a directory, which never runs.
//
// Preconditions: cwd is absolute.
func (ts Tools) ResolveHead(argv0, cwd, pathEnv string) Head {
	h := Head{Shown: argv0}
	switch {
	case argv0 == "":
		h.Missing = NotFound
	case !strings.Contains(argv0, "/"):
		if ts.has(argv0) {
			h.Program = ToolProgram(argv0)
			return h
		}
		h.Program, h.Missing = walkPath(argv0, cwd, pathEnv)
	default:
		p := argv0
		if !filepath.IsAbs(p) {
			p = cwd + "/" + p
		}
		h.Program, h.Missing = pathHead(p)
	}
	return h
}

// walkPath is execvp's search.
func walkPath(name, cwd, pathEnv string) (Program, Missing) {
	missing := NotFound
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		prog, m := pathHead(filepath.Join(dir, name))
		if m == Present {
			return prog, Present
		}
		if m == NotExecutable {
			missing = NotExecutable
		}
	}
	return Program{}, missing
}

// pathHead resolves an absolute spelling the way execve would.
func pathHead(p string) (Program, Missing) {
	if strings.HasSuffix(p, "/") {
		// execve on "x/" fails with ENOTDIR (x a file) or EACCES (x a
		// directory): something is there, and it cannot run.
		if _, err := os.Stat(p); err != nil && errors.Is(err, fs.ErrNotExist) {
			return Program{}, NotFound
		}
		return Program{}, NotExecutable
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Program{}, NotFound
	case err != nil: // ENOTDIR, ELOOP, EACCES: the kernel answers 126
		return Program{}, NotExecutable
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return Program{}, NotExecutable
	}
	real, err := filepath.EvalSymlinks(p) // walks ".." after links, as the kernel does
	if err != nil {
		return Program{}, NotExecutable
	}
	return FileProgram(p, real), Present
}

// Admitted is a program the table judged and admitted, with its argv. Its
// fields are private: CheckExec is the only way to make one, and the
// launcher accepts nothing else, so nothing launches unjudged, and what runs
// is the real path that was judged, under the spelling as argv[0].
type Admitted struct {
	program  Program
	argv     []string
	table    *ExecTable
	decision Decision
}

// Program is the admitted program.
func (a Admitted) Program() Program { return a.program }

// Path is the real path to execute ("" for a bundled tool, which runs in
// the carrier).
func (a Admitted) Path() string { return a.program.real }

// Args is the argv to execute with: argv[0] is the head as written.
func (a Admitted) Args() []string { return slices.Clone(a.argv) }

// Table is the table that judged it; a kernel projection renders exactly it.
func (a Admitted) Table() *ExecTable { return a.table }

// Decision is the verdict that admitted it.
func (a Admitted) Decision() Decision { return a.decision }

// DeniedError is CheckExec's refusal. It wraps errdefs.ErrAccessObserved:
// the target asked for a program outside its grants.
type DeniedError struct {
	Decision Decision
	Argv     []string
}

// Error renders the decision, and for an Only the argument it refused.
func (e *DeniedError) Error() string {
	msg := e.Decision.String()
	if only, ok := e.Decision.Verdict.IsOnly(); ok {
		first := "no first argument"
		if len(e.Argv) > 1 {
			first = fmt.Sprintf("first argument %q", e.Argv[1])
		}
		msg += fmt.Sprintf("; %s is not one of %q", first, only)
	}
	return "exec refused: " + msg
}

// Unwrap gives the error class, errdefs.ErrAccessObserved.
func (e *DeniedError) Unwrap() error { return errdefs.ErrAccessObserved }

// CheckExec judges a resolved head with its argv (argv[0] is replaced by
// head.Shown). A head with no program fails with its 127/126 error before
// any grant is asked; a denial, or an Only whose first argument is not
// listed, fails with a *DeniedError; otherwise the Admitted is the only
// thing a launcher runs.
func (t *ExecTable) CheckExec(head Head, argv []string) (Admitted, error) {
	if err := head.Err(); err != nil {
		return Admitted{}, err
	}
	args := append([]string{head.Shown}, argv[min(1, len(argv)):]...)
	d := t.Decide(head.Program)
	if !d.Verdict.Admits(args) {
		return Admitted{}, &DeniedError{Decision: d, Argv: args}
	}
	return Admitted{program: head.Program, argv: args, table: t, decision: d}, nil
}
