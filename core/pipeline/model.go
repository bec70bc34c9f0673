package pipeline

// This file is the definition model that the decoder and the JSON Schema
// generator both read. A file format is a tree of objectTypes; each object
// lists its fields (name, value type, required, default, description) and
// how a decoded value is stored. Decoding walks the yaml.v3 node tree with
// this table, so every problem has a position; Schema renders the same
// table, so editors and the loader cannot drift apart.

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// decoder carries the state of decoding one file: where it is, for
// positions and relative paths, and every problem found so far.
type decoder struct {
	file string // the file's name as given, used in every Pos
	dir  string // absolute directory of the file; relative paths resolve against it
	errs []Error
}

// pos is the place of n in the file; the zero Pos for a node made in code
// (a default).
func (d *decoder) pos(n *yaml.Node) Pos {
	if n == nil || n.Line == 0 {
		return Pos{}
	}
	return Pos{File: d.file, Line: n.Line, Col: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, Error{Pos: d.pos(n), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// typeErr reports that n is not what was expected.
func (d *decoder) typeErr(n *yaml.Node, path, expected string) {
	msg := fmt.Sprintf("expected %s, found %s", expected, describe(n))
	if isNull(n) && n.Value == "~" {
		msg += ` (YAML reads a bare ~ as null; write "~" for the home directory)`
	}
	d.errs = append(d.errs, Error{Pos: d.pos(n), Path: path, Msg: msg})
}

// notString reports that n, where a string was expected, is not one. A
// number, boolean or timestamp gets a hint to quote it (`name: 123`,
// `commit: 0123456`).
func (d *decoder) notString(n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool" || n.Tag == "!!timestamp") {
		d.errorf(n, path, "expected a string, found %s (quote it to make it a string)", describe(n))
		return
	}
	d.typeErr(n, path, "a string")
}

// err returns the problems found, sorted by position, as *Errors; nil when
// there are none.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	list := slices.Clone(d.errs)
	sortErrors(list)
	return &Errors{List: list}
}

// describe names what a node is, for "expected X, found Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!str":
			return fmt.Sprintf("%q", n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!timestamp":
			return "the timestamp " + n.Value
		}
		return fmt.Sprintf("a value tagged %s", n.Tag)
	}
	return "an unexpected YAML node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// child is the key path of name under path.
func child(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// valueType decodes one YAML node into a V and describes the same shape as
// a JSON Schema fragment. key is the node of the key the value belongs to
// (nil for a list element or the document), so a problem with the value as
// a whole, such as a missing required key, can point at the key the author
// wrote. decode reports its problems to d and returns false when there were
// any; it is never called with an alias node (see rejectAliases).
type valueType[V any] interface {
	decode(d *decoder, key, n *yaml.Node, path string) (V, bool)
	schema() map[string]any
}

// fieldInfo is what the documentation and the schema say about a field.
type fieldInfo struct {
	name     string
	desc     string // one or two sentences; the editor's hover text
	def      string // the default, as YAML text; "" when there is none
	required bool
}

// fieldDef is one field of an object that stores into a D.
type fieldDef[D any] interface {
	info() fieldInfo
	// decodeInto decodes val (the value of key) and stores it into dst.
	decodeInto(d *decoder, dst *D, key, val *yaml.Node, path string) bool
	// valueSchema is the schema of the field's value, with its description
	// and default.
	valueSchema() map[string]any
	// valueType is the field's type, for walking the model.
	valueType() any
}

// field is a fieldDef whose value is a V; set stores it, with the position
// of the key (the zero Pos when the value is the default).
type field[D, V any] struct {
	fieldInfo
	typ valueType[V]
	set func(dst *D, v V, key Pos)
}

// fld makes an optional field without a default; chain required() or
// dflt() to change that. (T is a type parameter, not valueType[V], so that
// Go infers D and V from set and then checks typ against them.)
func fld[D, V any, T valueType[V]](name string, set func(dst *D, v V, key Pos), typ T, desc string) *field[D, V] {
	return &field[D, V]{fieldInfo: fieldInfo{name: name, desc: desc}, typ: typ, set: set}
}

func (f *field[D, V]) required() *field[D, V] { f.fieldInfo.required = true; return f }

// dflt sets the default, written as YAML text and decoded by the field's own
// type, so a default can never be a value the file could not hold.
func (f *field[D, V]) dflt(yamlText string) *field[D, V] { f.def = yamlText; return f }

func (f *field[D, V]) info() fieldInfo { return f.fieldInfo }
func (f *field[D, V]) valueType() any  { return f.typ }

func (f *field[D, V]) decodeInto(d *decoder, dst *D, key, val *yaml.Node, path string) bool {
	v, ok := f.typ.decode(d, key, val, path)
	if ok {
		f.set(dst, v, d.pos(key))
	}
	return ok
}

func (f *field[D, V]) valueSchema() map[string]any {
	s := f.typ.schema()
	s["description"] = f.desc
	if f.def != "" {
		var v any
		if err := yaml.Unmarshal([]byte(f.def), &v); err != nil {
			panic(fmt.Sprintf("pipeline: default of %s is not YAML: %v", f.name, err))
		}
		s["default"] = v
	}
	return s
}

// defaultNode parses a default's YAML text into a node without a position.
func defaultNode(text string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) != 1 {
		panic(fmt.Sprintf("pipeline: default %q is not one YAML value", text))
	}
	var clear func(n *yaml.Node)
	clear = func(n *yaml.Node) {
		n.Line, n.Column = 0, 0
		for _, c := range n.Content {
			clear(c)
		}
	}
	clear(doc.Content[0])
	return doc.Content[0]
}

// objectType is a YAML mapping with a fixed set of keys, decoded into a new
// D. Unknown keys, duplicate keys and missing required keys are errors; an
// absent key with a default gets it. A null value (`grants:` with nothing
// under it) is a type error, as it is everywhere: the file says what it
// means, and the schema can say the same.
type objectType[D any] struct {
	fields []fieldDef[D]
	what   string // how an error names the mapping, e.g. "a mapping of target keys"
}

func object[D any](what string, fields ...fieldDef[D]) *objectType[D] {
	return &objectType[D]{fields: fields, what: what}
}

// fieldEntry is a field of some object, for walking the model without
// knowing the Go type it decodes into.
type fieldEntry struct {
	fieldInfo
	typ any // the field's valueType
}

// entries lists the object's fields in table order.
func (t *objectType[D]) entries() []fieldEntry {
	es := make([]fieldEntry, len(t.fields))
	for i, f := range t.fields {
		es[i] = fieldEntry{f.info(), f.valueType()}
	}
	return es
}

func (t *objectType[D]) names() []string {
	names := make([]string, len(t.fields))
	for i, f := range t.fields {
		names[i] = f.info().name
	}
	return names
}

func (t *objectType[D]) lookup(name string) fieldDef[D] {
	for _, f := range t.fields {
		if f.info().name == name {
			return f
		}
	}
	return nil
}

func (t *objectType[D]) decode(d *decoder, key, n *yaml.Node, path string) (*D, bool) {
	dst := new(D)
	if n.Kind != yaml.MappingNode {
		d.typeErr(n, path, t.what)
		return dst, false
	}
	owner := key // where a missing key is reported
	if owner == nil {
		owner = n
	}
	ok := true
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !checkKey(d, k, path) {
			ok = false
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, path, "duplicate key %q (first at line %d)", k.Value, first.Line)
			ok = false
			continue
		}
		seen[k.Value] = k
		f := t.lookup(k.Value)
		if f == nil {
			d.errorf(k, path, "%s", unknownMsg("key", k.Value, t.names()))
			ok = false
			continue
		}
		if v.Kind == yaml.AliasNode || !f.decodeInto(d, dst, k, v, child(path, k.Value)) {
			ok = false
		}
	}
	for _, f := range t.fields {
		fi := f.info()
		if seen[fi.name] != nil {
			continue
		}
		if fi.required {
			d.errorf(owner, path, "missing required key %q", fi.name)
			ok = false
			continue
		}
		if fi.def != "" && !f.decodeInto(d, dst, nil, defaultNode(fi.def), child(path, fi.name)) {
			ok = false
		}
	}
	return dst, ok
}

// checkKey reports a key that is not a plain string: a merge key (`<<`),
// which rejectAliases has already reported, or a list or mapping used as a
// key.
func checkKey(d *decoder, k *yaml.Node, path string) bool {
	switch {
	case k.Tag == "!!merge":
		return false
	case k.Kind != yaml.ScalarNode:
		d.errorf(k, path, "expected a key, found %s", describe(k))
		return false
	}
	return true
}

func (t *objectType[D]) schema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range t.fields {
		fi := f.info()
		props[fi.name] = f.valueSchema()
		if fi.required {
			required = append(required, fi.name)
		}
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// rejectAliases reports every anchor, alias and merge key under n. They are
// not part of the format: a pipeline is read by people and by editors, and
// values copied by reference make both harder (and aliases open the door to
// exponential expansion). The decoder skips alias nodes, so each is reported
// once, here.
func rejectAliases(d *decoder, n *yaml.Node) {
	if n.Anchor != "" && n.Kind != yaml.AliasNode {
		d.errorf(n, "", "anchors (&%s) are not supported: write each value out", n.Anchor)
	}
	if n.Kind == yaml.AliasNode {
		d.errorf(n, "", "aliases (*%s) are not supported: write the value out", n.Value)
		return
	}
	if n.Kind != yaml.MappingNode {
		for _, c := range n.Content {
			rejectAliases(d, c)
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			// One problem per merge, whether it merges an alias or a mapping.
			d.errorf(k, "", "merge keys (<<) are not supported: write the keys out")
			continue
		}
		rejectAliases(d, k)
		rejectAliases(d, v)
	}
}
