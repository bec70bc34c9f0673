package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// compileSchema compiles Schema() after checking it against the draft-07
// meta-schema.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("Schema() is not JSON: %v", err)
	}
	meta, err := jsonschema.NewCompiler().Compile("http://json-schema.org/draft-07/schema")
	if err != nil {
		t.Fatalf("compile the draft-07 meta-schema: %v", err)
	}
	if err := meta.Validate(doc); err != nil {
		t.Fatalf("Schema() is not a valid draft-07 schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("compile Schema(): %v", err)
	}
	return sch
}

// yamlToJSON converts a YAML document to the instance a JSON editor
// would validate; ok is false when yaml.v3 itself cannot (duplicate keys,
// syntax errors).
func yamlToJSON(t *testing.T, src string) (any, bool) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst, true
}

func TestSchemaIsDraft07(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatalf("Schema() is not JSON: %v", err)
	}
	if s["$schema"] != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	compileSchema(t)
	if !bytes.Equal(Schema(), Schema()) {
		t.Errorf("Schema() is not deterministic")
	}
}

func TestSchemaDesignExample(t *testing.T) {
	sch := compileSchema(t)
	inst, _ := yamlToJSON(t, designExample)
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the schema refuses the DESIGN.md example: %v", err)
	}
	bad, _ := yamlToJSON(t, strings.Replace(designExample, "trials: 1", "trails: 1", 1))
	if err := sch.Validate(bad); err == nil {
		t.Errorf("the schema accepts an unknown key")
	}
}

// TestSchemaAgreesWithLoad checks that the schema accepts every file Load
// accepts, and refuses the invalid files whose rule a schema can express.
func TestSchemaAgreesWithLoad(t *testing.T) {
	sch := compileSchema(t)
	for name, src := range validFiles {
		inst, ok := yamlToJSON(t, src)
		if !ok {
			t.Fatalf("%s: not convertible to JSON", name)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: Load accepts it, the schema does not: %v", name, err)
		}
	}
	for _, c := range invalidFiles {
		if !c.schema {
			continue
		}
		inst, ok := yamlToJSON(t, c.src)
		if !ok {
			t.Fatalf("%s: marked for the schema, but not convertible to JSON", c.name)
		}
		if err := sch.Validate(inst); err == nil {
			t.Errorf("%s: Load refuses it, the schema accepts it", c.name)
		}
	}
}

func TestSchemaDescribesEveryField(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	if got, want := len(props), len(pipelineType.fields); got != want {
		t.Errorf("%d top-level properties, want %d", got, want)
	}
	for name, p := range props {
		if d, _ := p.(map[string]any)["description"].(string); d == "" {
			t.Errorf("property %s has no description", name)
		}
	}
	timeout := props["target"].(map[string]any)["properties"].(map[string]any)["timeout"].(map[string]any)
	if timeout["default"] != "10m" {
		t.Errorf("target.timeout default = %v, want 10m", timeout["default"])
	}
	if req := s["required"]; !reflect.DeepEqual(req, []any{"version", "name", "target", "stages"}) {
		t.Errorf("required = %v", req)
	}
}

// walkFields calls fn for every field of the model under typ, with its
// dotted path; stage bodies are under "stages[].KIND".
func walkFields(typ any, prefix string, fn func(path string, f fieldInfo)) {
	if _, ok := typ.(stagesType); ok {
		typ, prefix = stageBodyType, prefix+"[].KIND"
	}
	obj, ok := typ.(interface{ entries() []fieldEntry })
	if !ok {
		return
	}
	for _, e := range obj.entries() {
		path := child(prefix, e.name)
		fn(path, e.fieldInfo)
		walkFields(e.typ, path, fn)
	}
}

// TestDocListsEveryField checks that the field reference in doc.go names
// every field of the model, and each one's default or that it is required.
func TestDocListsEveryField(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	n := 0
	walkFields(pipelineType, "", func(path string, f fieldInfo) {
		n++
		var line string
		for _, l := range lines {
			if strings.Contains(l, "`"+path+"`") {
				line = l
				break
			}
		}
		switch {
		case line == "":
			t.Errorf("doc.go does not list `%s`", path)
		case f.required && !strings.Contains(line, "required"):
			t.Errorf("doc.go does not say `%s` is required: %s", path, line)
		case f.def != "" && !strings.Contains(line, "default "+f.def) && !strings.Contains(line, `default "`+f.def+`"`):
			t.Errorf("doc.go does not give the default %s of `%s`: %s", f.def, path, line)
		case !f.required && f.def == "" && !strings.Contains(line, "default"):
			t.Errorf("doc.go does not say what an absent `%s` means: %s", path, line)
		}
	})
	if n < 20 {
		t.Errorf("walked %d fields; the walk is broken", n)
	}
}

func TestStageDefsMatchStageKinds(t *testing.T) {
	if len(stageDefs) != len(StageKinds) {
		t.Fatalf("%d stageDefs, %d StageKinds", len(stageDefs), len(StageKinds))
	}
	for i, s := range stageDefs {
		if s.kind != StageKinds[i] {
			t.Errorf("stageDefs[%d] = %s, StageKinds[%d] = %s", i, s.kind, i, StageKinds[i])
		}
	}
}

// shippedDir holds the pipelines that ship (DESIGN.md "Layout").
const shippedDir = "../../pipelines"

// TestShippedPipelines loads every *.yaml and *.yml under pipelines/ (but
// not under a testdata folder, where invalid files may live on purpose) and
// checks both Load and the schema accept it.
func TestShippedPipelines(t *testing.T) {
	if _, err := os.Stat(shippedDir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s does not exist yet", shippedDir)
	}
	sch := compileSchema(t)
	var files []string
	err := filepath.WalkDir(shippedDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == "testdata" {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no pipeline files under %s yet", shippedDir)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			if _, err := Load(f); err != nil {
				t.Errorf("Load:\n%v", err)
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inst, ok := yamlToJSON(t, string(src))
			if !ok {
				t.Fatalf("not convertible to JSON")
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("the schema refuses it: %v", err)
			}
		})
	}
	if err := ValidateFiles(files...); err != nil {
		t.Errorf("ValidateFiles: %v", err)
	}
}
