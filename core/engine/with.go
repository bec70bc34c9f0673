package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pipeline"
)

// ValidateWith checks a stage's `with:` block against the JSON Schema its
// plugin describes. Every violation is reported at the pipeline line where
// the offending value was written (or the `with:` block when the value is
// missing), so the operator fixes the pipeline, not the plugin. A plugin
// that describes no schema accepts only an empty block.
func ValidateWith(st pipeline.Stage, plugin string, schema []byte) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = []byte(`{"type":"object","additionalProperties":false}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return errdefs.Errorf(errdefs.ErrPlugin, "plugin %s describes a `with:` schema that is not JSON: %v", plugin, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	url := "warden:/plugins/" + plugin + "/with.json"
	if err := c.AddResource(url, doc); err != nil {
		return errdefs.Errorf(errdefs.ErrPlugin, "plugin %s: unusable `with:` schema: %v", plugin, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return errdefs.Errorf(errdefs.ErrPlugin, "plugin %s: unusable `with:` schema: %v", plugin, err)
	}
	with := st.With
	if len(with) == 0 {
		with = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(with))
	if err != nil {
		return errdefs.Errorf(errdefs.ErrInvalid, "%s: with: %v", posString(st.Pos), err)
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	pr := message.NewPrinter(language.English)
	var lines []string
	for _, leaf := range leaves(ve) {
		ptr := pointer(leaf.InstanceLocation)
		pos := closestPos(st, ptr)
		where := "with"
		if ptr != "" {
			where = "with" + strings.ReplaceAll(ptr, "/", ".")
		}
		lines = append(lines, fmt.Sprintf("%s: %s stage, plugin %s: %s: %s",
			posString(pos), st.Kind, plugin, where, leaf.ErrorKind.LocalizedString(pr)))
	}
	sort.Strings(lines)
	return errdefs.Errorf(errdefs.ErrInvalid, "%s", strings.Join(dedupe(lines), "\n"))
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// closestPos is the position of ptr in the block, or of its nearest
// ancestor that was written.
func closestPos(st pipeline.Stage, ptr string) pipeline.Pos {
	for {
		if p, ok := st.WithPos[ptr]; ok {
			return p
		}
		if ptr == "" {
			return st.Pos
		}
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
	}
}

func posString(p pipeline.Pos) string {
	switch {
	case p.File == "":
		return "(default)"
	case p.Line == 0:
		return p.File
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
