package pipeline

// The value types of the definition model (model.go): each decodes one kind
// of YAML value strictly and renders the matching JSON Schema.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/core/grant"
)

// isString reports whether n is a plain string scalar. A number, boolean or
// timestamp is not: `name: 123` is a type error with a hint to quote it.
func isString(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!str" }

// isText reports whether n is a scalar that can stand for text as written:
// a string, number or boolean. Arguments and environment values take their
// text exactly as written (`[sleep, 5]`, `N: 010`), since they are text.
func isText(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.Tag {
	case "!!str", "!!int", "!!float", "!!bool":
		return true
	}
	return false
}

// textSchema is the schema of a value isText accepts.
func textSchema() map[string]any {
	return map[string]any{"type": []any{"string", "number", "boolean"}}
}

// stringType is a non-empty string, optionally matching a pattern.
type stringType struct {
	what    string         // names the value in messages: "a plugin name"
	pattern *regexp.Regexp // nil: any non-empty string
	rule    string         // what pattern allows, in words
	maxLen  int            // 0: no limit
}

func (t stringType) decode(d *decoder, _, n *yaml.Node, path string) (string, bool) {
	if !isString(n) {
		d.notString(n, path)
		return "", false
	}
	s := n.Value
	if s == "" {
		d.errorf(n, path, "expected %s, found an empty string", t.what)
		return "", false
	}
	if (t.pattern != nil && !t.pattern.MatchString(s)) || (t.maxLen > 0 && len(s) > t.maxLen) {
		d.errorf(n, path, "expected %s (%s), found %q", t.what, t.rule, s)
		return "", false
	}
	return s, true
}

func (t stringType) schema() map[string]any {
	s := map[string]any{"type": "string", "minLength": 1}
	if t.pattern != nil {
		s["pattern"] = t.pattern.String()
	}
	if t.maxLen > 0 {
		s["maxLength"] = t.maxLen
	}
	return s
}

var (
	nameType = stringType{
		what:    "a short identifier",
		pattern: regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`),
		rule:    "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters",
		maxLen:  64,
	}
	// A revision that starts with '-' would read as an option to git.
	commitType = stringType{
		what:    "a git revision",
		pattern: regexp.MustCompile(`^[^\s-]\S*$`),
		rule:    "no spaces, not starting with '-'",
	}
	pluginNameType = stringType{
		what:    "a plugin name",
		pattern: regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`),
		rule:    "lower-case letters, digits and '-', starting with a letter or digit",
	}
	grantKeyType = stringType{what: "a grant key"}
)

// pathType is a file system path that resolves against the directory of the
// pipeline file; a leading `~` or `~/` is the user's home directory.
type pathType struct{}

func (pathType) decode(d *decoder, _, n *yaml.Node, path string) (string, bool) {
	if !isString(n) {
		d.notString(n, path)
		return "", false
	}
	p := n.Value
	switch {
	case p == "":
		d.errorf(n, path, "expected a path, found an empty string")
		return "", false
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			d.errorf(n, path, "unable to expand ~ in %q: %v", p, err)
			return "", false
		}
		p = filepath.Join(home, p[1:])
	case strings.HasPrefix(p, "~"):
		d.errorf(n, path, "expected a path, found %q (only ~ and ~/ are expanded, not ~user)", p)
		return "", false
	case !filepath.IsAbs(p):
		p = filepath.Join(d.dir, p)
	}
	return filepath.Clean(p), true
}

func (pathType) schema() map[string]any { return map[string]any{"type": "string", "minLength": 1} }

// evalDirType is a folder inside the repository: relative, slash-separated,
// normalised ("eval/" and "./eval" are "eval"), never leaving it. The empty
// string means none.
type evalDirType struct{}

func (evalDirType) decode(d *decoder, _, n *yaml.Node, p string) (string, bool) {
	if !isString(n) {
		d.notString(n, p)
		return "", false
	}
	if n.Value == "" {
		return "", true
	}
	clean := path.Clean(n.Value)
	switch {
	case path.IsAbs(n.Value):
		d.errorf(n, p, "expected a folder relative to repo, found the absolute path %q", n.Value)
	case clean == ".":
		d.errorf(n, p, "expected a folder inside repo, found %q, which is the whole repository", n.Value)
	case clean == ".." || strings.HasPrefix(clean, "../"):
		d.errorf(n, p, "expected a folder inside repo, found %q, which leaves it", n.Value)
	default:
		return clean, true
	}
	return "", false
}

func (evalDirType) schema() map[string]any {
	return map[string]any{"type": "string", "pattern": "^([^/].*)?$"}
}

// intType is a whole number in [min, max].
type intType struct{ min, max int }

func (t intType) decode(d *decoder, _, n *yaml.Node, path string) (int, bool) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		d.typeErr(n, path, fmt.Sprintf("a whole number from %d to %d", t.min, t.max))
		return 0, false
	}
	if v < t.min || v > t.max {
		d.errorf(n, path, "expected a whole number from %d to %d, found %s", t.min, t.max, n.Value)
		return 0, false
	}
	return v, true
}

func (t intType) schema() map[string]any {
	return map[string]any{"type": "integer", "minimum": t.min, "maximum": t.max}
}

// versionType is the format version; this loader reads version 1 only.
type versionType struct{}

const formatVersion = 1

func (versionType) decode(d *decoder, _, n *yaml.Node, path string) (int, bool) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		d.typeErr(n, path, fmt.Sprintf("the number %d", formatVersion))
		return 0, false
	}
	if v != formatVersion {
		d.errorf(n, path, "unsupported version %s (this warden reads version %d)", n.Value, formatVersion)
		return 0, false
	}
	return v, true
}

func (versionType) schema() map[string]any {
	return map[string]any{"type": "integer", "enum": []any{formatVersion}}
}

// boolType is true or false. YAML 1.1 spellings (yes, no, on, off) are
// strings in the YAML 1.2 core schema and so are type errors.
type boolType struct{}

func (boolType) decode(d *decoder, _, n *yaml.Node, path string) (bool, bool) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.typeErr(n, path, "true or false")
		return false, false
	}
	return v, true
}

func (boolType) schema() map[string]any { return map[string]any{"type": "boolean"} }

// durationType is a positive Go duration such as 90s, 10m or 1h30m.
type durationType struct{}

// durationRe is the syntax time.ParseDuration accepts, without a sign.
var durationRe = regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

func (durationType) decode(d *decoder, _, n *yaml.Node, path string) (time.Duration, bool) {
	const want = "a duration such as 90s, 10m or 1h30m"
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		d.errorf(n, path, "expected %s, found the number %s (add a unit, e.g. %ss)", want, n.Value, n.Value)
		return 0, false
	}
	if !isString(n) {
		d.typeErr(n, path, want)
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || !durationRe.MatchString(n.Value) {
		d.errorf(n, path, "expected %s, found %q", want, n.Value)
		return 0, false
	}
	if v <= 0 {
		d.errorf(n, path, "expected a duration greater than zero, found %q", n.Value)
		return 0, false
	}
	return v, true
}

func (durationType) schema() map[string]any {
	return map[string]any{"type": "string", "pattern": durationRe.String()}
}

// argvType is a list of arguments: text as written (strings, numbers,
// booleans). With minItems 1 the first argument, the program, must not be
// empty.
type argvType struct{ minItems int }

func (t argvType) decode(d *decoder, _, n *yaml.Node, path string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		expected := "a list of arguments"
		if t.minItems > 0 {
			expected = "a non-empty list of arguments"
		}
		msg := fmt.Sprintf("expected %s, found %s", expected, describe(n))
		if isString(n) && strings.Contains(n.Value, " ") {
			msg += fmt.Sprintf(" (argv, no shell: write [%s])", strings.Join(strings.Fields(n.Value), ", "))
		}
		d.errorf(n, path, "%s", msg)
		return nil, false
	}
	if len(n.Content) < t.minItems {
		d.errorf(n, path, "expected a non-empty list of arguments, found an empty list")
		return nil, false
	}
	args := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case item.Kind == yaml.AliasNode:
			ok = false
		case !isText(item):
			d.typeErr(item, ipath, "an argument (a string)")
			ok = false
		case i == 0 && t.minItems > 0 && item.Value == "":
			d.errorf(item, ipath, "expected the program to run, found an empty string")
			ok = false
		default:
			args = append(args, item.Value)
		}
	}
	return args, ok
}

func (t argvType) schema() map[string]any {
	s := map[string]any{"type": "array", "items": textSchema()}
	if t.minItems > 0 {
		s["minItems"] = t.minItems
	}
	return s
}

// envType is a mapping of environment variable names to values; a value
// is text as written.
type envType struct{}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (envType) decode(d *decoder, _, n *yaml.Node, path string) (map[string]string, bool) {
	if n.Kind != yaml.MappingNode {
		d.typeErr(n, path, "a mapping of NAME: value")
		return nil, false
	}
	env := map[string]string{}
	ok := true
	eachPair(d, n, path, func(k, v *yaml.Node) {
		kpath := child(path, k.Value)
		switch {
		case !isString(k) || !envNameRe.MatchString(k.Value):
			d.errorf(k, path, "expected an environment variable name (letters, digits and '_', not starting with a digit), found %s", describe(k))
			ok = false
		case v.Kind == yaml.AliasNode:
			ok = false
		case !isText(v):
			d.typeErr(v, kpath, "a value (a string)")
			ok = false
		default:
			env[k.Value] = v.Value
		}
	}, &ok)
	return env, ok
}

func (envType) schema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"propertyNames":        map[string]any{"pattern": envNameRe.String()},
		"additionalProperties": textSchema(),
	}
}

// eachPair calls fn for each key and value of mapping n, once per key:
// duplicate keys, merge keys and non-scalar keys are reported and skipped,
// and *ok is cleared.
func eachPair(d *decoder, n *yaml.Node, path string, fn func(k, v *yaml.Node), ok *bool) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !checkKey(d, k, path) {
			*ok = false
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, path, "duplicate key %q (first at line %d)", k.Value, first.Line)
			*ok = false
			continue
		}
		seen[k.Value] = k
		fn(k, v)
	}
}

// specListType is a list of grant keys as written, each with its position.
// A list written empty (`write: []`) decodes to an empty, non-nil slice; an
// absent one stays nil.
type specListType struct{}

func (specListType) decode(d *decoder, _, n *yaml.Node, path string) ([]grant.Spec, bool) {
	if n.Kind != yaml.SequenceNode {
		d.typeErr(n, path, "a list of strings")
		return nil, false
	}
	specs := []grant.Spec{}
	ok := true
	for i, item := range n.Content {
		if item.Kind == yaml.AliasNode {
			ok = false
			continue
		}
		s, sok := grantKeyType.decode(d, nil, item, fmt.Sprintf("%s[%d]", path, i))
		if !sok {
			ok = false
			continue
		}
		specs = append(specs, grant.Spec{Text: s, Pos: d.pos(item)})
	}
	return specs, ok
}

func (specListType) schema() map[string]any {
	return map[string]any{"type": "array", "items": grantKeyType.schema()}
}

// onlyType is `only:`: exec keys, each with the first arguments it is
// allowed with, in the order written.
type onlyType struct{}

func (onlyType) decode(d *decoder, _, n *yaml.Node, path string) ([]grant.OnlySpec, bool) {
	if n.Kind != yaml.MappingNode {
		d.typeErr(n, path, "a mapping of exec key to allowed first arguments, e.g. {npm: [test, ci]}")
		return nil, false
	}
	only := []grant.OnlySpec{}
	ok := true
	eachPair(d, n, path, func(k, v *yaml.Node) {
		key, kok := grantKeyType.decode(d, nil, k, path)
		if v.Kind == yaml.AliasNode {
			ok = false
			return
		}
		args, aok := argvType{}.decode(d, k, v, child(path, k.Value))
		if !kok || !aok {
			ok = false
			return
		}
		only = append(only, grant.OnlySpec{Key: grant.Spec{Text: key, Pos: d.pos(k)}, Args: args})
	}, &ok)
	return only, ok
}

func (onlyType) schema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"propertyNames":        map[string]any{"minLength": 1},
		"additionalProperties": argvType{}.schema(),
	}
}
