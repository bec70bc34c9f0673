package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// stageDefs describes every stage kind, in run order (StageKinds). A stage
// that is confinedOnly is required unless the file says
// `confinement: false`; the others are always required.
var stageDefs = []struct {
	kind         StageKind
	confinedOnly bool
	desc         string
}{
	{StageWorkspace, false, "Builds the disposable checkout of repo at commit with the evaluation folder withheld."},
	{StageConfine, true, "Plans the confined launch of the target (Bubblewrap on Linux, Seatbelt on macOS)."},
	{StageAudit, true, "Observes the target and judges every access against the grants (strace on Linux, the unified log on macOS)."},
	{StageScore, false, "Runs the evaluator over the workspace after the target and parses its result."},
	{StageSeal, false, "Produces the signed, content-addressed record of the run."},
}

func stageKindNames() []string {
	names := make([]string, len(stageDefs))
	for i, s := range stageDefs {
		names[i] = string(s.kind)
	}
	return names
}

// goosValues are the GOOS values a per-OS plugin map may name
// (`go tool dist list`).
var goosValues = []string{
	"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "js",
	"linux", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows",
}

// stageBodyType is the value of one stage entry: `{plugin: …, with: {…}}`.
var stageBodyType = object[Stage]("a mapping such as {plugin: NAME, with: {...}}",
	fld("plugin", func(s *Stage, r PluginRef, _ Pos) { s.Plugin = r }, pluginRefType{},
		"The plugin that runs this stage: one name (the NAME of a warden-plugin-NAME binary) for every host, or a mapping of GOOS to name, e.g. {linux: bubblewrap, darwin: seatbelt}.").required(),
	fld("with", func(s *Stage, w withValue, key Pos) { s.With, s.WithPos = w.json, w.pos; s.WithPos[""] = key }, withType{},
		"The plugin's configuration. Its shape is the plugin's own: the plugin's schema validates it when the run starts.").dflt("{}"),
)

// pluginRefType is `plugin:`: a name, or a mapping of GOOS to name.
type pluginRefType struct{}

func (pluginRefType) decode(d *decoder, _, n *yaml.Node, path string) (PluginRef, bool) {
	ref := PluginRef{Pos: d.pos(n)}
	switch n.Kind {
	case yaml.ScalarNode:
		name, ok := pluginNameType.decode(d, nil, n, path)
		ref.Name = name
		return ref, ok
	case yaml.MappingNode:
	default:
		d.typeErr(n, path, "a plugin name or a mapping of GOOS to plugin name")
		return ref, false
	}
	if len(n.Content) == 0 {
		d.errorf(n, path, "expected a mapping of GOOS to plugin name such as {linux: bubblewrap}, found an empty mapping")
		return ref, false
	}
	ref.PerOS = map[string]string{}
	ok := true
	eachPair(d, n, path, func(k, v *yaml.Node) {
		if !slices.Contains(goosValues, k.Value) {
			d.errorf(k, path, "%s", unknownMsg("GOOS", k.Value, goosValues))
			ok = false
			return
		}
		if v.Kind == yaml.AliasNode {
			ok = false
			return
		}
		name, nok := pluginNameType.decode(d, nil, v, child(path, k.Value))
		if !nok {
			ok = false
			return
		}
		ref.PerOS[k.Value] = name
	}, &ok)
	return ref, ok
}

func (pluginRefType) schema() map[string]any {
	goos := make([]any, len(goosValues))
	for i, g := range goosValues {
		goos[i] = g
	}
	return map[string]any{"oneOf": []any{
		pluginNameType.schema(),
		map[string]any{
			"type":                 "object",
			"minProperties":        1,
			"propertyNames":        map[string]any{"enum": goos},
			"additionalProperties": pluginNameType.schema(),
		},
	}}
}

// withValue is a `with:` block as JSON, with the position of every value.
type withValue struct {
	json []byte
	pos  map[string]Pos // JSON pointer -> position
}

// withType is a `with:` block: any mapping, converted to a JSON object.
// Scalars keep their YAML type (a number stays a number); a timestamp
// becomes its text. Keys are text as written. Positions: a mapping entry's
// pointer maps to its key, a list element's to the element.
type withType struct{}

func (withType) decode(d *decoder, _, n *yaml.Node, path string) (withValue, bool) {
	w := withValue{pos: map[string]Pos{}}
	if n.Kind != yaml.MappingNode {
		d.typeErr(n, path, "a mapping (the plugin's configuration)")
		return w, false
	}
	v, ok := toJSON(d, n, path, "", w.pos)
	if !ok {
		return w, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		d.errorf(n, path, "unable to convert to JSON: %v", err)
		return w, false
	}
	w.json = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return w, true
}

func (withType) schema() map[string]any { return map[string]any{"type": "object"} }

// toJSON converts n to a value encoding/json renders, recording the
// position of each element under its JSON pointer ptr.
func toJSON(d *decoder, n *yaml.Node, path, ptr string, pos map[string]Pos) (any, bool) {
	switch n.Kind {
	case yaml.AliasNode:
		return nil, false
	case yaml.MappingNode:
		obj := map[string]any{}
		ok := true
		eachPair(d, n, path, func(k, v *yaml.Node) {
			kptr := ptr + "/" + escapePointer(k.Value)
			pos[kptr] = d.pos(k)
			val, vok := toJSON(d, v, child(path, k.Value), kptr, pos)
			if !vok {
				ok = false
				return
			}
			obj[k.Value] = val
		}, &ok)
		return obj, ok
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			iptr := fmt.Sprintf("%s/%d", ptr, i)
			pos[iptr] = d.pos(item)
			val, vok := toJSON(d, item, fmt.Sprintf("%s[%d]", path, i), iptr, pos)
			if !vok {
				ok = false
				continue
			}
			arr = append(arr, val)
		}
		return arr, ok
	}
	switch n.Tag {
	case "!!str", "!!timestamp":
		return n.Value, true
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b, true
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i, true
		}
		var u uint64
		if n.Decode(&u) == nil {
			return u, true
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
		d.errorf(n, path, "expected a number JSON can hold, found %s", n.Value)
		return nil, false
	}
	d.errorf(n, path, "expected a JSON value (string, number, boolean, null, list or mapping), found %s", describe(n))
	return nil, false
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// stagesType is `stages:`, a list of single-key mappings `KIND: {plugin…}`.
// Each kind may appear once, in any order; the result is in run order.
// Which kinds are required depends on `confinement`, so Load checks that.
type stagesType struct{}

func (stagesType) decode(d *decoder, _, n *yaml.Node, path string) ([]Stage, bool) {
	if n.Kind != yaml.SequenceNode {
		d.typeErr(n, path, "a list of stages such as - workspace: {plugin: workspace}")
		return nil, false
	}
	var stages []Stage
	seen := map[StageKind]*yaml.Node{}
	ok := true
	for i, item := range n.Content {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case item.Kind == yaml.AliasNode:
			ok = false
			continue
		case item.Kind != yaml.MappingNode:
			d.typeErr(item, ipath, "a stage such as {score: {plugin: scorer}}")
			ok = false
			continue
		case len(item.Content) == 0:
			d.errorf(item, ipath, "expected a stage such as {score: {plugin: scorer}}, found an empty mapping")
			ok = false
			continue
		case len(item.Content) > 2:
			keys := []string{}
			for j := 0; j < len(item.Content); j += 2 {
				keys = append(keys, item.Content[j].Value)
			}
			d.errorf(item, ipath, "expected one key, the stage kind, found %d (%s); are plugin: and with: indented under the kind?",
				len(keys), strings.Join(keys, ", "))
			ok = false
			continue
		}
		k, v := item.Content[0], item.Content[1]
		if !checkKey(d, k, ipath) {
			ok = false
			continue
		}
		kind := StageKind(k.Value)
		if !slices.Contains(StageKinds, kind) {
			d.errorf(k, ipath, "%s", unknownMsg("stage", k.Value, stageKindNames()))
			ok = false
			continue
		}
		if first, dup := seen[kind]; dup {
			d.errorf(k, ipath, "duplicate stage %q (first at line %d)", kind, first.Line)
			ok = false
			continue
		}
		seen[kind] = k
		if v.Kind == yaml.AliasNode {
			ok = false
			continue
		}
		body, bok := stageBodyType.decode(d, k, v, child(ipath, k.Value))
		if !bok {
			ok = false
			continue
		}
		s := *body
		s.Kind, s.Pos = kind, d.pos(item)
		if s.WithPos[""] == (Pos{}) {
			s.WithPos[""] = s.Pos // no with: block; point at the stage
		}
		stages = append(stages, s)
	}
	slices.SortStableFunc(stages, func(a, b Stage) int {
		return slices.Index(StageKinds, a.Kind) - slices.Index(StageKinds, b.Kind)
	})
	return stages, ok
}

func (stagesType) schema() map[string]any {
	props := map[string]any{}
	for _, s := range stageDefs {
		body := stageBodyType.schema()
		body["description"] = s.desc
		props[string(s.kind)] = body
	}
	return map[string]any{
		"type": "array",
		"items": map[string]any{
			"type":                 "object",
			"minProperties":        1,
			"maxProperties":        1,
			"properties":           props,
			"additionalProperties": false,
		},
	}
}

// requiredStages is the kinds a pipeline must list.
func requiredStages(confinement bool) []StageKind {
	var kinds []StageKind
	for _, s := range stageDefs {
		if confinement || !s.confinedOnly {
			kinds = append(kinds, s.kind)
		}
	}
	return kinds
}
