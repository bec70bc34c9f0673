package score

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/warden-run/warden/core/sdk"
)

func TestDecode(t *testing.T) {
	good := []struct {
		with string
		want Config
	}{
		{`{"run":["make","test"]}`, Config{Run: []string{"make", "test"}, Format: FormatExitCode}},
		{`{"run":["./eval/run.sh",""],"format":"tap","env":{"A":"1"},"timeout":"90s"}`,
			Config{Run: []string{"./eval/run.sh", ""}, Format: FormatTAP, Env: map[string]string{"A": "1"}, Timeout: "90s"}},
		{`{"run":["go","test","-json"],"format":"go-test-json","timeout":"1h30m"}`,
			Config{Run: []string{"go", "test", "-json"}, Format: FormatGoTestJSON, Timeout: "1h30m"}},
	}
	for _, g := range good {
		got, err := Decode([]byte(g.with))
		if err != nil {
			t.Errorf("Decode(%s): %v", g.with, err)
			continue
		}
		if !reflect.DeepEqual(*got, g.want) {
			t.Errorf("Decode(%s) = %+v, want %+v", g.with, *got, g.want)
		}
	}
	for _, bad := range []string{
		``, `{}`, `{"run":[]}`, `{"run":[""]}`, `{"run":"make test"}`, `{"run":["x"],"format":"junit"}`,
		`{"run":["x"],"timeout":"soon"}`, `{"run":["x"],"timeout":"-1s"}`, `{"run":["x"],"env":{"A=B":"c"}}`,
		`{"run":["x"],"shell":true}`,
	} {
		if _, err := Decode([]byte(bad)); !errors.Is(err, sdk.ErrInvalidConfig) {
			t.Errorf("Decode(%s) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// TestSchemaAgreesWithDecode checks the described schema is valid draft-07
// and accepts and refuses the blocks Decode does (the core validates with
// the schema before Configure ever sees a block).
func TestSchemaAgreesWithDecode(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(WithSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("with.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("with.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, with := range []string{
		`{"run":["make","test"]}`,
		`{"run":["x",""],"format":"tap","env":{"A":"1"},"timeout":"1m30s"}`,
		`{}`, `{"run":[]}`, `{"run":[""]}`, `{"run":"make"}`, `{"run":["x"],"format":"junit"}`,
		`{"run":["x"],"timeout":"soon"}`, `{"run":["x"],"env":{"A=B":"c"}}`, `{"run":["x"],"env":{"A":1}}`,
		`{"run":["x"],"shell":true}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(with)))
		if err != nil {
			t.Fatal(err)
		}
		schemaOK := sch.Validate(inst) == nil
		_, decodeErr := Decode([]byte(with))
		if schemaOK != (decodeErr == nil) {
			t.Errorf("%s: schema accepts=%v, Decode err=%v", with, schemaOK, decodeErr)
		}
	}
}

func TestPlanScore(t *testing.T) {
	p := New()
	ctx := context.Background()
	if _, err := p.PlanScore(ctx, &sdk.ScorePlanRequest{Workspace: "/w"}); !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("unconfigured plan: %v", err)
	}
	with := `{"run":["sh","eval/run.sh"],"format":"tap","env":{"B":"2","A":"1"},"timeout":"5m"}`
	if err := p.Configure(ctx, &sdk.ConfigureRequest{WithJson: []byte(with)}); err != nil {
		t.Fatal(err)
	}
	r, err := p.PlanScore(ctx, &sdk.ScorePlanRequest{Workspace: "/w", Evaluation: "eval"})
	if err != nil {
		t.Fatal(err)
	}
	plan := r.GetPlan()
	if !reflect.DeepEqual(plan.GetArgv(), []string{"sh", "eval/run.sh"}) || plan.GetDir() != "/w" || r.GetFormat() != FormatTAP {
		t.Errorf("plan %v format %q", plan, r.GetFormat())
	}
	if !reflect.DeepEqual(plan.GetEnv(), []string{"A=1", "B=2"}) {
		t.Errorf("env %q", plan.GetEnv())
	}
	var f planFacts
	if err := json.Unmarshal(plan.GetFactsJson(), &f); err != nil || f.Timeout != "5m" || f.Format != FormatTAP {
		t.Errorf("facts %s: %v", plan.GetFactsJson(), err)
	}
	if _, err := p.PlanScore(ctx, &sdk.ScorePlanRequest{}); !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("plan without a workspace: %v", err)
	}
	// Parse falls back to the configured format.
	res, err := p.Parse(ctx, &sdk.ScoreParseRequest{Stdout: []byte("1..1\nok 1\n")})
	if err != nil || !res.GetPass() || res.GetPassed() != 1 {
		t.Errorf("parse with the configured format: %v %v", res, err)
	}
	// A plan without env has none.
	if err := p.Configure(ctx, &sdk.ConfigureRequest{WithJson: []byte(`{"run":["true"]}`)}); err != nil {
		t.Fatal(err)
	}
	if r, _ := p.PlanScore(ctx, &sdk.ScorePlanRequest{Workspace: "/w"}); r.GetPlan().GetEnv() != nil || r.GetFormat() != FormatExitCode {
		t.Errorf("plan %v", r)
	}
}
