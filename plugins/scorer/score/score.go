// Package score is warden's first scorer: it names the evaluator command
// from the stage's `with:` block and reads the evaluator's result in one of
// three formats.
//
// A pipeline stage:
//
//	stages:
//	  - score:
//	      plugin: scorer
//	      with:
//	        run: [go, test, -json, ./eval/...]
//	        format: go-test-json      # exit-code (default) | tap | go-test-json
//	        env: {GOFLAGS: -mod=mod}  # set on top of the environment the core builds
//	        timeout: 5m               # the evaluator's time limit (default 30m)
//
// One score walks like this: Configure decodes the block; PlanScore returns
// the command (argv `run`, in the workspace, with `env` added) and the
// format; the core runs it after the target, with the evaluation folder
// restored, and hands its stdout, stderr and exit code to Parse, which
// counts passed, failed and skipped tests and decides the verdict. The
// verdict is never kinder than the evaluator: a run passes only when it
// exited 0, reported at least one passing test and no failing one, and its
// output was complete (a TAP plan met, no bail out, no package that failed
// to build).
package score

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/warden-run/warden/core/sdk"
)

// Name is the plugin's name: the binary is warden-plugin-scorer.
const Name = "scorer"

// The formats Parse reads.
const (
	FormatExitCode   = "exit-code"
	FormatTAP        = "tap"
	FormatGoTestJSON = "go-test-json"
)

// Config is the stage's `with:` block.
type Config struct {
	Run     []string          `json:"run"`               // the evaluator's argv, no shell
	Format  string            `json:"format,omitempty"`  // how to read its output; default exit-code
	Env     map[string]string `json:"env,omitempty"`     // variables set for the evaluator
	Timeout string            `json:"timeout,omitempty"` // a Go duration, e.g. "5m"
}

// WithSchema is the JSON Schema (draft-07) of Config.
var WithSchema = []byte(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "scorer with:",
  "type": "object",
  "additionalProperties": false,
  "required": ["run"],
  "properties": {
    "run": {
      "description": "the evaluator's argv, run in the workspace after the target (no shell)",
      "type": "array", "minItems": 1,
      "items": [{"type": "string", "minLength": 1}], "additionalItems": {"type": "string"}
    },
    "format": {
      "description": "how the evaluator reports: its exit code, TAP on stdout, or go test -json on stdout",
      "type": "string", "enum": ["exit-code", "tap", "go-test-json"], "default": "exit-code"
    },
    "env": {
      "description": "variables set for the evaluator on top of the environment the core builds",
      "type": "object",
      "propertyNames": {"pattern": "^[^=]+$"},
      "additionalProperties": {"type": "string"}
    },
    "timeout": {
      "description": "how long the evaluator may run, as a Go duration (90s, 5m, 1h30m)",
      "type": "string", "pattern": "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
    }
  }
}`)

// Plugin is the scorer. The zero value is not ready; use New.
type Plugin struct {
	mu  sync.Mutex
	cfg *Config // guarded by mu: nil until Configure
}

// New returns the scorer.
func New() *Plugin { return &Plugin{} }

var (
	_ sdk.Scorer     = (*Plugin)(nil)
	_ sdk.Configurer = (*Plugin)(nil)
)

// Describe names the plugin and its `with:` schema.
func (*Plugin) Describe() sdk.Description {
	return sdk.Description{
		Name:       Name,
		Version:    "0.1.0",
		Summary:    "runs the evaluator in the workspace and reads exit-code, tap or go-test-json",
		WithSchema: WithSchema,
	}
}

// Probe is always healthy: the scorer parses bytes and needs nothing of
// the host (the evaluator's own program is checked when the core runs it).
func (*Plugin) Probe(context.Context, *sdk.HostInfo) *sdk.ProbeResponse {
	return sdk.Healthy("parses "+strings.Join([]string{FormatExitCode, FormatTAP, FormatGoTestJSON}, ", "), nil)
}

// Configure decodes and checks the `with:` block. The core has validated
// it against WithSchema; the checks here keep a direct caller honest too.
func (p *Plugin) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	cfg, err := Decode(req.GetWithJson())
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
	return nil
}

// Decode parses a `with:` block into a checked Config with its defaults.
func Decode(with []byte) (*Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(with))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("scorer with: %v: %w", err, sdk.ErrInvalidConfig)
	}
	if len(cfg.Run) == 0 {
		return nil, fmt.Errorf("scorer with.run: the evaluator command is required: %w", sdk.ErrInvalidConfig)
	}
	for i, a := range cfg.Run {
		if a == "" && i == 0 {
			return nil, fmt.Errorf("scorer with.run: the program name is empty: %w", sdk.ErrInvalidConfig)
		}
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("scorer with.run[%d] holds a NUL byte: %w", i, sdk.ErrInvalidConfig)
		}
	}
	if cfg.Format == "" {
		cfg.Format = FormatExitCode
	}
	if !knownFormat(cfg.Format) {
		return nil, fmt.Errorf("scorer with.format %q: want exit-code, tap or go-test-json: %w", cfg.Format, sdk.ErrInvalidConfig)
	}
	for k, v := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("scorer with.env: %q is not a variable name: %w", k, sdk.ErrInvalidConfig)
		}
	}
	if cfg.Timeout != "" {
		d, err := time.ParseDuration(cfg.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("scorer with.timeout %q: want a positive duration such as 90s or 5m: %w", cfg.Timeout, sdk.ErrInvalidConfig)
		}
	}
	return &cfg, nil
}

func knownFormat(f string) bool {
	return f == FormatExitCode || f == FormatTAP || f == FormatGoTestJSON
}

// planFacts is recorded with the plan: what the evaluator runs with.
type planFacts struct {
	Format  string            `json:"format"`
	Env     map[string]string `json:"env,omitempty"`
	Timeout string            `json:"timeout,omitempty"`
}

// PlanScore returns the evaluator command: with.run in the workspace, with
// with.env as KEY=VALUE entries the core sets on top of the environment it
// builds (nil when there are none), and the format Parse will read.
func (p *Plugin) PlanScore(_ context.Context, req *sdk.ScorePlanRequest) (*sdk.ScorePlanResponse, error) {
	p.mu.Lock()
	cfg := p.cfg
	p.mu.Unlock()
	if cfg == nil {
		return nil, fmt.Errorf("scorer is not configured: its with: block needs run: [evaluator argv…]: %w", sdk.ErrInvalidConfig)
	}
	if req.GetWorkspace() == "" {
		return nil, fmt.Errorf("scorer: no workspace to run the evaluator in: %w", sdk.ErrInvalidConfig)
	}
	var env []string
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	facts, err := json.Marshal(planFacts{Format: cfg.Format, Env: cfg.Env, Timeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	var timeout time.Duration
	if cfg.Timeout != "" {
		timeout, _ = time.ParseDuration(cfg.Timeout) // checked by Configure
	}
	return &sdk.ScorePlanResponse{
		TimeoutMs: timeout.Milliseconds(),
		Plan: &sdk.LaunchPlan{
			Argv:      append([]string(nil), cfg.Run...),
			Dir:       req.GetWorkspace(),
			Env:       env,
			FactsJson: facts,
		},
		Format: cfg.Format,
	}, nil
}

// Parse reads the evaluator's output in req.Format (the configured format
// when empty) and returns the counts and the verdict.
func (p *Plugin) Parse(_ context.Context, req *sdk.ScoreParseRequest) (*sdk.ScoreResult, error) {
	format := req.GetFormat()
	if format == "" {
		p.mu.Lock()
		if p.cfg != nil {
			format = p.cfg.Format
		}
		p.mu.Unlock()
	}
	return Parse(format, req.GetStdout(), req.GetStderr(), int(req.GetExitCode()))
}
