// Package pipeline loads and validates warden pipeline files (DESIGN.md
// "Pipeline YAML (v1)") and host policy files. Decoding is strict: an
// unknown key, a duplicate key, a wrong type or a missing required field is
// an error that names the file, line and column, the key, what was expected
// and, for a near miss, what the author probably meant:
//
//	demo.yaml:4:1: unknown key "stges" (did you mean "stages"?)
//	demo.yaml:9:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found "ten"
//
// Every problem in a file is reported, not only the first (*Errors). The
// JSON Schema that `warden schema` prints (Schema) is rendered from the same
// field tables the decoder walks (fields.go), so editors and the loader
// never disagree.
//
// # Pipeline format, version 1
//
// Every key, its type and its default ("required" when there is none):
//
//	`version`            integer       required; must be 1
//	`name`               string        required; letters, digits, '.', '_', '-', at most 64
//	`repo`               path          default "." (the directory of the pipeline file)
//	`commit`             string        default "HEAD"; any git revision, not starting with '-'
//	`evaluation`         folder        default "" (none); relative to repo, e.g. eval/
//	`trials`             integer       default 1; 1 to 1000
//	`confinement`        boolean       default true
//	`target`             mapping       required
//	`target.run`         list          required; the argv, no shell, at least the program
//	`target.env`         mapping       default {}; NAME: value, values as written
//	`target.timeout`     duration      default "10m"; greater than zero (90s, 10m, 1h30m)
//	`grants`             mapping       default {} (nothing beyond the defaults)
//	`grants.exec`        mapping       default {}
//	`grants.exec.allow`  list          default []; exec keys (git, /usr/bin/, "@path", "@system")
//	`grants.exec.deny`   list          default []; exec keys; a bare name vetoes the name
//	`grants.exec.only`   mapping       default {}; exec key: [allowed first arguments]
//	`grants.read`        list          default []; paths readable beyond the runtime roots
//	`grants.write`       list          default []; paths writable beyond the workspace
//	`grants.systemPaths` list          default []; extra runtime roots (read + exec)
//	`grants.egress`      list          default []; network destinations
//	`stages`             list          required; entries `- KIND: {plugin: …, with: …}`
//	`stages[].KIND.plugin` string or mapping  required; a name, or {GOOS: name, …}
//	`stages[].KIND.with`   mapping     default {}; the plugin's own configuration
//
// Paths: `repo` resolves against the directory of the pipeline file, and a
// leading `~` or `~/` is the user's home (~user is refused). Grant keys
// (`grants.*`) are kept exactly as written, with their positions: core/grant
// decodes them, `~` included. A grant list written empty (`write: []`) is an
// empty, non-nil slice; an absent one is nil. `evaluation` is normalised ("eval/"
// and "./eval" are "eval"); an absolute folder, "." or one that leaves the
// repository is refused.
//
// Values: strings must be YAML strings (`name: 123` is a type error; quote
// it); arguments (`target.run`, `grants.exec.only` values) and environment
// values take any scalar as written, since they are text (`[sleep, 5]`).
// Booleans are true or false (yes/no are strings in YAML 1.2). A null value
// (a key with nothing after it) is a type error everywhere.
//
// Stages: KIND is one of workspace, confine, audit, score, seal. Each kind
// appears at most once, in any order; Pipeline.Stages holds them in run
// order. workspace, score and seal are required; confine and audit are
// required unless `confinement: false`. With `confinement: false` they may
// still be listed: Load keeps them in Pipeline.Stages (so the file can
// switch confinement on and off in one line), and Pipeline.ActiveStages,
// which the engine runs, leaves them out. A plugin name
// matches ^[a-z0-9][a-z0-9-]*$; a per-OS mapping's keys are GOOS values
// (linux, darwin, …). A `with:` block becomes JSON (Stage.With) and each of
// its JSON pointers maps to the place it was written (Stage.WithPos), so a
// plugin's schema error can name the pipeline line.
//
// Not accepted: anchors, aliases and merge keys (a pipeline is read by
// people; values copied by reference make that harder and invite
// exponential expansion), more than one YAML document, tabs in indentation.
//
// # Policy files
//
// A host policy file (LoadPolicy) holds one top-level key, `grants`, written
// as in a pipeline, and optionally `version: 1`. `grants.egress` is refused
// there, since a grant.Layer has no place for it.
package pipeline
