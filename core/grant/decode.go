package grant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warden-run/warden/core/errdefs"
)

// KeyKind says how an exec key names programs.
type KeyKind uint8

const (
	KeyName KeyKind = iota // a bare name: `git`
	KeyPath                // a frozen path: `/usr/bin/git`, `~/bin/x`
	KeyDir                 // a frozen directory, written with a trailing '/'
)

// String renders "name", "path" or "dir".
func (k KeyKind) String() string { return [...]string{"name", "path", "dir"}[k] }

// ExecKey is one decoded exec key. Name is the bare name for KeyName, and an
// absolute path (with ~ expanded, not yet resolved; a dir without its
// trailing '/', except "/") for KeyPath and KeyDir. Nothing matches an
// ExecKey: Compile turns it into rules.
type ExecKey struct {
	Kind KeyKind
	Name string
}

// String renders the key as an author would write it.
func (k ExecKey) String() string {
	if k.Kind == KeyDir && k.Name != "/" {
		return k.Name + "/"
	}
	return k.Name
}

// ExecEntry is one key of a grant with its authored verdict (Allow, Deny or
// Only) and where it was written. An expansion (@path, @system) gives one
// entry per directory, each with the expansion's Source.
type ExecEntry struct {
	Key     ExecKey
	Verdict Verdict
	Source  Source
}

// ExecGrant is one layer's `grants.exec`, decoded: the author's keys in the
// order written. It carries spellings (for prompts and explain); Compile
// makes the table that judges.
type ExecGrant struct {
	Layer   string
	Entries []ExecEntry
}

// The expansions an exec key may name.
const (
	ExpandPath   = "@path"   // every directory of the process's own PATH
	ExpandSystem = "@system" // the system runtime roots (SystemRoots) and the layer's systemPaths
)

// Decode turns a layer's `grants.exec` into an ExecGrant. `~` expands to the
// invoking user's home; @path expands to each absolute directory of the
// process's own PATH, read here (os.Getenv), never a scoped override;
// @system to SystemRoots plus the layer's `systemPaths`.
//
// Every malformed key is reported (errors.Join), each as an error wrapping
// errdefs.ErrInvalid whose message starts with the key's "file:line:col: ".
func Decode(l Layer) (ExecGrant, error) {
	g := ExecGrant{Layer: l.Name}
	var errs []error
	bad := func(s Spec, field, format string, args ...any) {
		errs = append(errs, keyError(l, s, field, format, args...))
	}
	systemDirs, sysErrs := decodePaths(l, l.File.SystemPaths, "grants.systemPaths")
	errs = append(errs, sysErrs...)

	add := func(s Spec, field string, v Verdict, onlyFile bool) {
		src := Source{Layer: l.Name, Field: field, Key: s.Text, Pos: s.Pos}
		k, dirs, msg := parseExecKey(s.Text, systemDirs)
		switch {
		case msg != "":
			bad(s, field, "%s", msg)
		case onlyFile && (k.Kind == KeyDir || dirs != nil):
			bad(s, field, "key %q names a directory; only takes a bare name or a file path, since a directory cannot restrict arguments", s.Text)
		case dirs != nil:
			for _, d := range dirs {
				g.Entries = append(g.Entries, ExecEntry{Key: ExecKey{Kind: KeyDir, Name: d}, Verdict: v, Source: src})
			}
		default:
			g.Entries = append(g.Entries, ExecEntry{Key: k, Verdict: v, Source: src})
		}
	}
	for _, s := range l.Exec.Allow {
		add(s, "grants.exec.allow", Allow, false)
	}
	for _, s := range l.Exec.Deny {
		add(s, "grants.exec.deny", Deny, false)
	}
	for _, o := range l.Exec.Only {
		switch {
		case len(o.Args) == 0:
			bad(o.Key, "grants.exec.only", "key %q has no arguments; only lists the first arguments a program may take (use allow for any)", o.Key.Text)
			continue
		case containsEmpty(o.Args):
			bad(o.Key, "grants.exec.only", "key %q lists an empty argument", o.Key.Text)
			continue
		}
		add(o.Key, "grants.exec.only", Only(o.Args...), true)
	}
	return g, errors.Join(errs...)
}

// parseExecKey classifies one key. It returns the key, or for an expansion
// its directories (non-nil, possibly empty), or a message saying what is
// wrong.
func parseExecKey(text string, systemDirs []string) (ExecKey, []string, string) {
	if msg := checkText(text); msg != "" {
		return ExecKey{}, nil, msg
	}
	switch {
	case strings.HasPrefix(text, "@"):
		switch text {
		case ExpandPath:
			return ExecKey{}, pathDirs(os.Getenv("PATH")), ""
		case ExpandSystem:
			return ExecKey{}, append(append([]string{}, SystemRoots...), systemDirs...), ""
		}
		return ExecKey{}, nil, fmt.Sprintf("unknown expansion %q; the expansions are %s and %s", text, ExpandPath, ExpandSystem)
	case text == "." || text == "..":
		return ExecKey{}, nil, fmt.Sprintf("key %q is not a program; write an absolute path, ~/…, or a bare name", text)
	case !strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "~") && strings.Contains(text, "/"):
		return ExecKey{}, nil, fmt.Sprintf("key %q is a relative path; write an absolute path, ~/…, or a bare name without '/'", text)
	case !strings.Contains(text, "/") && !strings.HasPrefix(text, "~"):
		return ExecKey{Kind: KeyName, Name: text}, nil, ""
	}
	p, msg := expandPath(text)
	if msg != "" {
		return ExecKey{}, nil, msg
	}
	if strings.HasSuffix(text, "/") || text == "~" {
		return ExecKey{Kind: KeyDir, Name: trimSlash(p)}, nil, ""
	}
	return ExecKey{Kind: KeyPath, Name: p}, nil, ""
}

// checkText rejects what no key may be.
func checkText(text string) string {
	switch {
	case strings.TrimSpace(text) == "":
		return "empty key"
	case strings.TrimSpace(text) != text:
		return fmt.Sprintf("key %q has surrounding spaces", text)
	case strings.ContainsRune(text, 0):
		return fmt.Sprintf("key %q contains a NUL byte", text)
	}
	return ""
}

// expandPath expands a leading ~ to the invoking user's home and checks the
// result is absolute. It does not clean: the kernel walks ".." after links,
// and freeze resolves the key the way the kernel would.
func expandPath(text string) (string, string) {
	if strings.HasPrefix(text, "~") {
		if text != "~" && !strings.HasPrefix(text, "~/") {
			return "", fmt.Sprintf("key %q names another user's home; only ~/ (the invoking user's) expands", text)
		}
		home, err := homeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", fmt.Sprintf("key %q needs the invoking user's home, which is unknown", text)
		}
		return home + strings.TrimPrefix(text, "~"), ""
	}
	if !filepath.IsAbs(text) {
		return "", fmt.Sprintf("key %q is a relative path; write an absolute path or ~/…", text)
	}
	return text, ""
}

func trimSlash(p string) string {
	if t := strings.TrimRight(p, "/"); t != "" {
		return t
	}
	return "/"
}

// pathDirs lists the absolute directories of a PATH value, in order, once
// each. Relative and empty entries name the current directory of whoever
// looks, which no frozen key can.
func pathDirs(pathEnv string) []string {
	dirs := []string{}
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) || seen[d] {
			continue
		}
		seen[d] = true
		dirs = append(dirs, trimSlash(d))
	}
	return dirs
}

// decodePaths decodes file-grant keys (absolute or ~/ paths).
func decodePaths(l Layer, specs []Spec, field string) ([]string, []error) {
	var out []string
	var errs []error
	for _, s := range specs {
		msg := checkText(s.Text)
		var p string
		if msg == "" {
			p, msg = expandPath(s.Text)
		}
		if msg != "" {
			errs = append(errs, keyError(l, s, field, "%s", msg))
			continue
		}
		out = append(out, trimSlash(p))
	}
	return out, errs
}

func containsEmpty(ss []string) bool {
	for _, s := range ss {
		if s == "" {
			return true
		}
	}
	return false
}

// keyError makes an ErrInvalid whose message starts with the key's position
// (or the layer's, when the key has none).
func keyError(l Layer, s Spec, field, format string, args ...any) error {
	pos := s.Pos.String()
	if pos == "" {
		pos = l.Pos.String()
	}
	if pos == "" {
		pos = l.Name
	}
	return errdefs.Errorf(errdefs.ErrInvalid, "%s: %s: %s", pos, field, fmt.Sprintf(format, args...))
}
