package bwrapplan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warden-run/warden/core/grant"
)

// landlockExec expresses the exec table's kernel projection as Landlock
// rules: Landlock only grants (a file may be executed when a rule on it or
// on a directory above it allows it), so the table is expressible when no
// deny rule that wins over an allow (comes later in the last-match-wins
// order) lies beneath or over it, and no name veto could match beneath an
// allowed directory. A deny of a path the view covers with an empty,
// read-only file system, with nothing bound beneath it, denies nothing in
// the view and is left out.
//
// It returns the allowed host paths, or why the table is not expressible.
func landlockExec(rules []grant.KernelRule, covered []string, ms []mount) ([]string, string) {
	if len(rules) == 0 {
		return nil, "the grant table admits no program (no exec rule)"
	}
	vacuous := func(p string) bool {
		if !slices.Contains(covered, p) {
			return false
		}
		return !slices.ContainsFunc(ms, func(m mount) bool { return m.class == 1 && within(m.dest, p) })
	}
	var allow []string
	for i, a := range rules {
		if !a.Allow {
			continue
		}
		if a.Kind == grant.RuleVeto {
			return nil, fmt.Sprintf("the rule %s is a name, not a path", a.Path)
		}
		for _, d := range rules[i+1:] {
			if d.Allow || (d.Kind != grant.RuleVeto && vacuous(d.Path)) {
				continue
			}
			if overlaps(a, d) {
				return nil, fmt.Sprintf("the deny of %s %s is carved out of the allowed %s %s, which Landlock cannot express", kindName(d.Kind), d.Path, kindName(a.Kind), a.Path)
			}
		}
		allow = append(allow, a.Path)
	}
	if len(allow) == 0 {
		return nil, "the grant table allows no program"
	}
	return sortUniq(allow), ""
}

// overlaps says whether deny rule d can match a program allow rule a
// matches.
func overlaps(a, d grant.KernelRule) bool {
	switch d.Kind {
	case grant.RuleVeto:
		return a.Kind == grant.RuleDir || strings.EqualFold(filepath.Base(a.Path), d.Path)
	case grant.RuleDir:
		return within(a.Path, d.Path) || (a.Kind == grant.RuleDir && within(d.Path, a.Path))
	default: // a file
		return within(d.Path, a.Path)
	}
}

func kindName(k grant.RuleKind) string {
	switch k {
	case grant.RuleDir:
		return "directory"
	case grant.RuleVeto:
		return "name"
	}
	return "file"
}

// loaderGlobs find the ELF interpreters: every dynamically linked program
// needs execute access to its loader. The loader can run any readable ELF
// file itself (ld.so /path/prog), which Landlock's execute right does not
// stop; the facts say so.
var loaderGlobs = []string{"/lib64/ld-linux*.so*", "/lib/ld-linux*.so*", "/lib/ld-musl-*.so*", "/usr/lib/*/ld-linux*.so*", "/usr/lib64/ld-linux*.so*"}

func loaders() []string {
	var out []string
	for _, g := range loaderGlobs {
		ms, _ := filepath.Glob(g)
		for _, m := range ms {
			if r, err := filepath.EvalSymlinks(m); err == nil {
				out = append(out, r)
			}
		}
	}
	return sortUniq(out)
}

// outermost sorts the paths and drops those beneath another: a Landlock
// rule on a directory covers everything beneath it.
func outermost(ps []string) []string {
	ps = sortUniq(ps)
	out := ps[:0]
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(o string) bool { return within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

// interpreter is the real path of the interpreter a script names on its
// "#!" line, or "" for a file that is no script (or unreadable).
func interpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	line, ok := bytes.CutPrefix(b[:n], []byte("#!"))
	if !ok {
		return ""
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return ""
	}
	real, err := filepath.EvalSymlinks(fields[0])
	if err != nil {
		return ""
	}
	return real
}
