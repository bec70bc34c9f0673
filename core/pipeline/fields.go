package pipeline

// The field tables of the pipeline and policy formats. Decoding (load.go)
// and the JSON Schema (schema.go) both read these, and doc.go documents
// them; a test checks that doc.go names every field and default here.

import (
	"time"

	"github.com/warden-run/warden/core/grant"
)

var pipelineType = object[Pipeline]("a mapping of pipeline keys (version, name, target, stages, ...)",
	fld("version", func(p *Pipeline, v int, _ Pos) { p.Version = v }, versionType{},
		"The format version of this file. Must be 1.").required(),
	fld("name", func(p *Pipeline, v string, _ Pos) { p.Name = v }, nameType,
		"A short identifier for the pipeline (letters, digits, '.', '_', '-'), shown in progress and run records.").required(),
	fld("repo", func(p *Pipeline, v string, _ Pos) { p.Repo = v }, pathType{},
		"The git repository under evaluation: a path relative to the directory of this file, an absolute path, or one starting with ~/.").dflt("."),
	fld("commit", func(p *Pipeline, v string, _ Pos) { p.Commit = v }, commitType,
		"The commit to evaluate: any git revision (a commit id, branch, tag or HEAD~1).").dflt("HEAD"),
	fld("evaluation", func(p *Pipeline, v string, _ Pos) { p.Evaluation = v }, evalDirType{},
		"The evaluation folder (hidden tests, probes, the evaluator), relative to repo. It is withheld from the target and restored for scoring. Empty or absent: none."),
	fld("trials", func(p *Pipeline, v int, _ Pos) { p.Trials = v }, intType{min: 1, max: 1000},
		"How many times the target runs (1 to 1000).").dflt("1"),
	fld("confinement", func(p *Pipeline, v bool, _ Pos) { p.Confinement = v }, boolType{},
		"false opts out of confinement and audit: the run is recorded as unconfined, the confine and audit stages are not required and, if listed, do not run.").dflt("true"),
	fld("target", func(p *Pipeline, t *Target, key Pos) { p.Target = *t; p.Target.Pos = key }, targetType,
		"What runs in the workspace.").required(),
	fld("grants", func(p *Pipeline, g *Grants, key Pos) { p.Grants = *g; p.Grants.Pos = key }, grantsType,
		"What the target may do beyond its workspace: programs it may run, paths it may read and write, network egress."),
	fld("stages", func(p *Pipeline, s []Stage, _ Pos) { p.Stages = s }, stagesType{},
		"The plugins that run each stage, one entry per stage kind, e.g. - workspace: {plugin: workspace}. workspace, score and seal are required; confine and audit too unless confinement is false.").required(),
)

var targetType = object[Target]("a mapping of target keys (run, env, timeout)",
	fld("run", func(t *Target, v []string, key Pos) { t.Run, t.RunPos = v, key }, argvType{minItems: 1},
		"The target's argv, run without a shell in the workspace, e.g. [make, test].").required(),
	fld("env", func(t *Target, v map[string]string, _ Pos) { t.Env = v }, envType{},
		"Extra environment variables for the target, NAME: value. Values are taken as written."),
	fld("timeout", func(t *Target, v time.Duration, _ Pos) { t.Timeout = v }, durationType{},
		"How long one trial may run, e.g. 90s, 10m, 1h. On expiry the target gets SIGTERM, then SIGKILL 2s later, and the run exits 4.").dflt("10m"),
)

var grantsType = object[Grants]("a mapping of grants (exec, read, write, systemPaths, egress)",
	fld("exec", func(g *Grants, v *grant.ExecSpec, _ Pos) { g.Exec = *v }, execType,
		"Which programs the target may run. No match denies."),
	fld("read", func(g *Grants, v []grant.Spec, _ Pos) { g.File.Read = v }, specListType{},
		"Paths the target may read beyond the system runtime roots, its workspace and call directories, e.g. ~/go/pkg/mod."),
	fld("write", func(g *Grants, v []grant.Spec, _ Pos) { g.File.Write = v }, specListType{},
		"Paths the target may write beyond its workspace and call directories."),
	fld("systemPaths", func(g *Grants, v []grant.Spec, _ Pos) { g.File.SystemPaths = v }, specListType{},
		"Extra runtime roots, readable and executable like /usr, e.g. /usr/local/go."),
	fld("egress", func(g *Grants, v []grant.Spec, _ Pos) { g.Egress = v }, specListType{},
		"Network destinations the target may reach. Empty: no network."),
)

var execType = object[grant.ExecSpec]("a mapping with allow, deny and only",
	fld("allow", func(e *grant.ExecSpec, v []grant.Spec, _ Pos) { e.Allow = v }, specListType{},
		`Exec keys the target may run: a bare name (git), a path (/usr/bin/git, ~/bin/x), a directory (ending in /), "@path" (every directory on the host PATH) or "@system" (the system runtime roots).`),
	fld("deny", func(e *grant.ExecSpec, v []grant.Spec, _ Pos) { e.Deny = v }, specListType{},
		"Exec keys the target may not run; a deny wins over an allow, and a bare name vetoes that name everywhere."),
	fld("only", func(e *grant.ExecSpec, v []grant.OnlySpec, _ Pos) { e.Only = v }, onlyType{},
		"Exec keys allowed with these first arguments only, e.g. {npm: [test, ci]}."),
)

// policyFile is a host policy file: grants that restrict every pipeline.
type policyFile struct {
	Grants Grants
}

var policyType = object[policyFile]("a mapping with grants: (and optionally version: 1)",
	fld("version", func(*policyFile, int, Pos) {}, versionType{},
		"The format version of this file. Must be 1 when given."),
	fld("grants", func(f *policyFile, g *Grants, key Pos) { f.Grants = *g; f.Grants.Pos = key }, grantsType,
		"The grants every pipeline is restricted to, written as in a pipeline.").required(),
)
