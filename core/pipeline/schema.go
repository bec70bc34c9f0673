package pipeline

import (
	"encoding/json"
)

// SchemaID is the $id of the pipeline schema.
const SchemaID = "https://warden.run/schema/pipeline-v1.json"

// Schema returns a draft-07 JSON Schema of the pipeline format, for editors
// (yaml-language-server reads draft-07) and `warden schema`. It is rendered
// from the same field tables the loader decodes with, so the two agree on
// keys, types, required fields, enums and defaults, and its descriptions
// are the editor's hover text. What a schema cannot say is checked by Load
// only: a stage kind listed twice, duplicate YAML keys, anchors and aliases,
// a name of the ~user form, an evaluation folder that escapes the
// repository. A plugin's `with:` block is `type: object` here;
// the plugin describes its own schema.
func Schema() []byte {
	s := pipelineType.schema()
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["$id"] = SchemaID
	s["title"] = "warden pipeline (version 1)"
	s["description"] = "A warden pipeline: the target to run, what it may touch, and the plugins that run each stage."

	// Which stages are required depends on confinement: the same rule
	// checkRequiredStages applies, from the same stageDefs table.
	contains := func(kinds []StageKind) map[string]any {
		all := []any{}
		for _, k := range kinds {
			all = append(all, map[string]any{"contains": map[string]any{"required": []any{string(k)}}})
		}
		return map[string]any{"properties": map[string]any{"stages": map[string]any{"allOf": all}}}
	}
	s["if"] = map[string]any{
		"properties": map[string]any{"confinement": map[string]any{"const": false}},
		"required":   []any{"confinement"},
	}
	s["then"] = contains(requiredStages(false))
	s["else"] = contains(requiredStages(true))

	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic("pipeline: unable to render the schema: " + err.Error())
	}
	return b
}
