package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/core/grant"
)

// Load reads and validates the pipeline file at path. Every problem in the
// file is reported, not just the first: the error is an *Errors with one
// entry per problem, each naming file:line:col, the key path and what was
// expected; errdefs.Code gives it exit code 2. Positions use path as given,
// so messages read the way the user typed the name. On success every
// default is filled in (see the package documentation) and every path is
// absolute.
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, readError(path, err)
	}
	return Parse(path, data)
}

// Parse is Load for a file already read: path names it in positions and
// its directory is where relative paths resolve.
func Parse(path string, data []byte) (*Pipeline, error) {
	d, err := newDecoder(path)
	if err != nil {
		return nil, err
	}
	root := d.parse(data)
	if root == nil {
		return nil, d.err()
	}
	p, _ := pipelineType.decode(d, nil, root, "")
	p.Path = filepath.Join(d.dir, filepath.Base(path))
	sum := sha256.Sum256(data)
	p.Digest = "sha256:" + hex.EncodeToString(sum[:])
	p.Pos = map[string]Pos{}
	var stagesKey, stagesNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if _, dup := p.Pos[k.Value]; !dup && k.Kind == yaml.ScalarNode {
			p.Pos[k.Value] = d.pos(k)
		}
		if k.Value == "stages" && stagesKey == nil {
			stagesKey, stagesNode = k, root.Content[i+1]
		}
	}
	if stagesNode != nil && stagesNode.Kind == yaml.SequenceNode {
		checkRequiredStages(d, p.Confinement, stagesKey, stagesNode)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkRequiredStages reports each required stage kind that stages does not
// list. An entry with an unknown kind counts as the kind it was probably
// meant to be, since that typo is already reported.
func checkRequiredStages(d *decoder, confinement bool, key, stages *yaml.Node) {
	listed := map[StageKind]bool{}
	for _, item := range stages.Content {
		var name string
		switch {
		case item.Kind == yaml.MappingNode && len(item.Content) > 0:
			name = item.Content[0].Value
		case item.Kind == yaml.ScalarNode:
			name = item.Value // `- seal`, already reported as not a mapping
		default:
			continue
		}
		if s := suggest(name, stageKindNames()); !slices.Contains(StageKinds, StageKind(name)) && s != "" {
			name = s
		}
		listed[StageKind(name)] = true
	}
	for _, s := range stageDefs {
		if listed[s.kind] || (s.confinedOnly && !confinement) {
			continue
		}
		why := "required"
		if s.confinedOnly {
			why = "required unless confinement: false"
		}
		d.errorf(key, "stages", "missing stage %q (%s)", s.kind, why)
	}
}

// LoadPolicy reads a host policy file (DESIGN.md "Grants": a policy layer
// restricts every pipeline). Its format is the `grants:` block of a
// pipeline, at the top level, optionally with `version: 1`, decoded with
// the same strictness; the layer is named "policy". `egress` is refused in
// a policy for now: grant.Layer has no place for it, and a restriction that
// is silently dropped is worse than an error.
func LoadPolicy(path string) (grant.Layer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return grant.Layer{}, readError(path, err)
	}
	return ParsePolicy(path, data)
}

// ParsePolicy is LoadPolicy for a file already read.
func ParsePolicy(path string, data []byte) (grant.Layer, error) {
	d, err := newDecoder(path)
	if err != nil {
		return grant.Layer{}, err
	}
	root := d.parse(data)
	if root == nil {
		return grant.Layer{}, d.err()
	}
	f, _ := policyType.decode(d, nil, root, "")
	if g := mappingValue(root, "grants"); g != nil {
		if k := mappingKey(g, "egress"); k != nil {
			d.errorf(k, "grants", "egress is not supported in a policy file (a policy restricts exec, read, write and systemPaths)")
		}
	}
	if err := d.err(); err != nil {
		return grant.Layer{}, err
	}
	return f.Grants.Layer("policy"), nil
}

// ValidateFiles loads every file and reports every problem of every file,
// in the order the files were given; nil when all are valid. The error is
// an *Errors.
func ValidateFiles(paths ...string) error {
	all := &Errors{}
	for _, path := range paths {
		_, err := Load(path)
		if err == nil {
			continue
		}
		var es *Errors
		if !errors.As(err, &es) {
			es = &Errors{List: []Error{{Pos: Pos{File: path}, Msg: err.Error(), Err: err}}}
		}
		all.List = append(all.List, es.List...)
	}
	if len(all.List) == 0 {
		return nil
	}
	return all
}

func readError(path string, err error) error {
	var pe *os.PathError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &Errors{List: []Error{{Pos: Pos{File: path}, Msg: "unable to read: " + msg, Err: err}}}
}

func newDecoder(path string) (*decoder, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, readError(path, err)
	}
	return &decoder{file: path, dir: filepath.Dir(abs)}, nil
}

// parse reads data as exactly one YAML document and returns its top-level
// mapping, or nil when there is none to decode; problems go to d. A second
// document, anchors, aliases and merge keys are reported, and decoding
// goes on where it can, so one run reports as much as possible.
func (d *decoder) parse(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			d.errs = append(d.errs, Error{Pos: Pos{File: d.file}, Msg: "the file is empty; expected a mapping with version: 1, name, target and stages"})
		} else {
			d.syntaxError(data, err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == io.EOF:
	case err != nil:
		d.syntaxError(data, err)
	default:
		d.errorf(&extra, "", "a second YAML document starts here; the file must hold one document")
	}
	if len(doc.Content) == 0 {
		d.errs = append(d.errs, Error{Pos: Pos{File: d.file}, Msg: "the file is empty; expected a mapping with version: 1, name, target and stages"})
		return nil
	}
	root := doc.Content[0]
	rejectAliases(d, root)
	if root.Kind != yaml.MappingNode {
		d.typeErr(root, "", "a mapping of top-level keys")
		return nil
	}
	return root
}

// syntaxLineRe matches yaml.v3's syntax errors, which name a line only.
var syntaxLineRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parserProblems are the messages of yaml.v3's parser (as opposed to its
// scanner). yaml.v3 reports their line 0-based: one less than the line
// meant, and no line at all for the first. For "did not find expected
// ',' or ']'" and the like, that line is where the unclosed construct
// starts.
var parserProblems = []string{
	"did not find expected",
	"found undefined tag handle",
	"found duplicate %",
	"found incompatible YAML document",
}

// syntaxError reports a YAML syntax error at its line. When that line is
// indented with a tab, the column of the tab is given and the message says
// so, since that is the usual cause.
func (d *decoder) syntaxError(data []byte, err error) {
	e := Error{Pos: Pos{File: d.file}, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := syntaxLineRe.FindStringSubmatch(err.Error()); m != nil {
		e.Msg = "invalid YAML: " + m[2]
		if m[1] != "" {
			e.Pos.Line, _ = strconv.Atoi(m[1])
		}
		for _, prefix := range parserProblems {
			if strings.HasPrefix(m[2], prefix) {
				e.Pos.Line++
				break
			}
		}
		lines := strings.Split(string(data), "\n")
		if e.Pos.Line >= 1 && e.Pos.Line <= len(lines) {
			line := lines[e.Pos.Line-1]
			indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			if i := strings.IndexByte(indent, '\t'); i >= 0 {
				e.Pos.Col = i + 1
				e.Msg += " (a tab in the indentation: YAML indents with spaces only)"
			}
		}
	}
	d.errs = append(d.errs, e)
}

// mappingKey returns the key node named name in mapping n, or nil.
func mappingKey(n *yaml.Node, name string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
}

// mappingValue returns the value of key name in mapping n, or nil.
func mappingValue(n *yaml.Node, name string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i+1]
		}
	}
	return nil
}
