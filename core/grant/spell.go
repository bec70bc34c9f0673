package grant

import (
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Spellings. A path is held two ways (spec 000 "Allows meet, denies join"):
//
//   - stored: the bytes the file system stores, as realpath returns them. An
//     allow speaks by stored containment (⊑S): p is the key or lies beneath it.
//   - collision: each component folded by collisionKey. A deny or a veto
//     speaks by collision containment (⊑C), so it holds the name under every
//     spelling a case-insensitive or normalising volume, or a later copy of
//     the tree, could give it.
//
// ⊑S implies ⊑C, both are transitive and both keep the component count, so
// a rule ranks at its own depth whichever way it matched.

// collisionKey folds one path (or name) so that every spelling of it that a
// case-insensitive or normalising file system would take as the same name
// gives the same key: canonical caseless matching, NFC(fold(NFD(s))), per
// component. ASCII takes a fast path (lower case is the whole fold there).
func collisionKey(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	parts := strings.Split(s, "/")
	fold := cases.Fold() // a Caser is stateful: one per call
	for i, c := range parts {
		parts[i] = norm.NFC.String(fold.String(norm.NFD.String(c)))
	}
	return strings.Join(parts, "/")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nameKey is the host's name key of a command, the key a veto matches: the
// collision key of the last path element.
func nameKey(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return collisionKey(name)
}

// within reports whether path p is the key k or lies beneath it. Both are
// absolute and clean, in the same form (both stored or both folded).
func within(p, k string) bool {
	if k == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, k) && (len(p) == len(k) || p[len(k)] == '/')
}

// depth counts the components of a clean absolute path: "/" is 0.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// spelled is a path in both forms, computed once per question.
type spelled struct {
	stored, folded string
}

func spell(p string) spelled { return spelled{stored: p, folded: collisionKey(p)} }

// freeze returns the real form of an absolute path key, read from disk once,
// at compile time: realpath(3) when the path exists; otherwise the real form
// of its longest existing ancestor with the rest appended, cleaned. A key
// that names nothing yet still judges the place it would be.
func freeze(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	dir, rest := filepath.Clean(p), ""
	for dir != "/" && dir != "." {
		parent, base := filepath.Split(dir)
		rest = filepath.Join(base, rest)
		dir = filepath.Clean(parent)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
	}
	return filepath.Clean(p)
}

// homeDir is the invoking user's home, for ~ in keys.
func homeDir() (string, error) { return os.UserHomeDir() }
