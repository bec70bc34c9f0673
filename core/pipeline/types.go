package pipeline

import (
	"time"

	"github.com/warden-run/warden/core/grant"
)

// Pos is a place in a pipeline file; it is grant.Pos so grant keys and
// pipeline fields report positions the same way.
type Pos = grant.Pos

// StageKind names a stage. The engine runs them in this order.
type StageKind string

const (
	StageWorkspace StageKind = "workspace"
	StageConfine   StageKind = "confine"
	StageAudit     StageKind = "audit"
	StageScore     StageKind = "score"
	StageSeal      StageKind = "seal"
)

// StageKinds lists every stage kind in run order.
var StageKinds = []StageKind{StageWorkspace, StageConfine, StageAudit, StageScore, StageSeal}

// Pipeline is a decoded, validated pipeline file. Every path in it is
// absolute: relative paths were resolved against the directory of the file
// and `~` was expanded.
type Pipeline struct {
	Path   string // absolute path of the file
	Digest string // "sha256:<hex>" of the file's bytes

	Version    int
	Name       string
	Repo       string // absolute path of the repository under evaluation
	Commit     string // default "HEAD"
	Evaluation string // the withheld folder, relative to Repo, slash-separated, no trailing slash; "" when none
	Trials     int    // default 1

	// Confinement is false only when the file says `confinement: false`,
	// the explicit opt-out (default true).
	Confinement bool

	Target Target
	Grants Grants
	Stages []Stage // in run order (StageKinds order), each kind at most once

	Pos map[string]Pos // position of each top-level key that was present, e.g. Pos["grants"]
}

// Target is what runs in the workspace.
type Target struct {
	Run     []string          // argv, no shell; required, non-empty
	Env     map[string]string // extra environment
	Timeout time.Duration     // default 10m
	Pos     Pos               // position of `target:`
	RunPos  Pos               // position of `run:`
}

// Grants is `grants:` as written; core/grant decodes it.
type Grants struct {
	Pos    Pos // position of `grants:`; zero when absent
	Exec   grant.ExecSpec
	File   grant.FileSpec
	Egress []grant.Spec
}

// Layer returns the grants as a grant.Layer named name.
func (g Grants) Layer(name string) grant.Layer {
	return grant.Layer{Name: name, Pos: g.Pos, Exec: g.Exec, File: g.File}
}

// Stage is one entry of `stages:`.
type Stage struct {
	Kind   StageKind
	Plugin PluginRef
	// With is the stage's `with:` block converted to JSON (an object; "{}"
	// when absent). The plugin's schema validates it; WithPos maps a JSON
	// pointer inside it ("" for the block, "/run/0" for an element) to the
	// place it was written, so a schema error names the pipeline line.
	With    []byte
	WithPos map[string]Pos
	Pos     Pos // position of the stage's entry
}

// PluginRef is `plugin:` — one name for every host, or a name per GOOS.
type PluginRef struct {
	Name  string            // set when one name serves every host
	PerOS map[string]string // set for {linux: …, darwin: …}
	Pos   Pos               // position of the value: the name, or the per-OS mapping
}

// For returns the plugin name for goos, and false when the pipeline names
// none for that host.
func (r PluginRef) For(goos string) (string, bool) {
	if r.Name != "" {
		return r.Name, true
	}
	n, ok := r.PerOS[goos]
	return n, ok && n != ""
}

// Stage returns the stage of kind k and whether the pipeline has one.
func (p *Pipeline) Stage(k StageKind) (Stage, bool) {
	for _, s := range p.Stages {
		if s.Kind == k {
			return s, true
		}
	}
	return Stage{}, false
}

// ActiveStages returns the stages the engine runs, in run order: every
// listed stage, except confine and audit when the file says
// `confinement: false` (Load accepts them there, so that confinement
// switches on and off in one line, and records them; they do not run).
func (p *Pipeline) ActiveStages() []Stage {
	var active []Stage
	for _, s := range p.Stages {
		if !p.Confinement && (s.Kind == StageConfine || s.Kind == StageAudit) {
			continue
		}
		active = append(active, s)
	}
	return active
}
