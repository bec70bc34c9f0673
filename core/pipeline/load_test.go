package pipeline

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/grant"
)

// designExample is the example of DESIGN.md "Pipeline YAML (v1)", verbatim.
const designExample = `version: 1
name: go-unit
repo: ..                     # the git repository under evaluation, relative to this file
commit: HEAD
evaluation: eval/            # withheld from the target
trials: 1
target:
  run: [make, test]          # argv, no shell
  env: {GOFLAGS: -mod=mod}
  timeout: 10m
grants:
  exec:
    allow: ["@system", git, /usr/local/go/bin/]   # bare name, path key, dir key (trailing /)
    deny: [curl]                                  # a bare deny also vetoes the name everywhere
    only: {npm: [test, ci]}                       # allowed with these first arguments only
  read: [~/go/pkg/mod]       # beyond the system runtime roots
  write: []                  # beyond the workspace and call directories
  systemPaths: [/usr/local/go]   # extra runtime roots: readable and executable, like /usr
  egress: []
stages:
  - workspace: {plugin: workspace}
  - confine:   {plugin: {linux: bubblewrap, darwin: seatbelt}}
  - audit:     {plugin: {linux: strace, darwin: auditlog}}
  - score:     {plugin: scorer, with: {run: [go, test, -json, ./eval/...], format: go-test-json}}
  - seal:      {plugin: seal}
`

// head is the first four lines of most test files; stagesBlock (lines 5-10
// when it follows head) lists every stage.
const (
	head = `version: 1
name: t
target:
  run: [make, test]
`
	stagesBlock = `stages:
  - workspace: {plugin: workspace}
  - confine: {plugin: bubblewrap}
  - audit: {plugin: strace}
  - score: {plugin: scorer}
  - seal: {plugin: seal}
`
)

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDesignExample(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	dir := t.TempDir()
	path := writeFile(t, dir, "pipelines/go-unit.yaml", designExample)
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	at := func(line, col int) Pos { return Pos{File: path, Line: line, Col: col} }
	checks := []struct {
		what      string
		got, want any
	}{
		{"Path", p.Path, path},
		{"Version", p.Version, 1},
		{"Name", p.Name, "go-unit"},
		{"Repo", p.Repo, dir},
		{"Commit", p.Commit, "HEAD"},
		{"Evaluation", p.Evaluation, "eval"},
		{"Trials", p.Trials, 1},
		{"Confinement", p.Confinement, true},
		{"Target.Run", p.Target.Run, []string{"make", "test"}},
		{"Target.Env", p.Target.Env, map[string]string{"GOFLAGS": "-mod=mod"}},
		{"Target.Timeout", p.Target.Timeout, 10 * time.Minute},
		{"Target.Pos", p.Target.Pos, at(7, 1)},
		{"Target.RunPos", p.Target.RunPos, at(8, 3)},
		{"Grants.Pos", p.Grants.Pos, at(11, 1)},
		{"Exec.Allow", p.Grants.Exec.Allow, []grant.Spec{{Text: "@system", Pos: at(13, 13)}, {Text: "git", Pos: at(13, 24)}, {Text: "/usr/local/go/bin/", Pos: at(13, 29)}}},
		{"Exec.Deny", p.Grants.Exec.Deny, []grant.Spec{{Text: "curl", Pos: at(14, 12)}}},
		{"Exec.Only", p.Grants.Exec.Only, []grant.OnlySpec{{Key: grant.Spec{Text: "npm", Pos: at(15, 12)}, Args: []string{"test", "ci"}}}},
		// Grant keys stay as written: core/grant expands ~.
		{"File.Read", p.Grants.File.Read, []grant.Spec{{Text: "~/go/pkg/mod", Pos: at(16, 10)}}},
		{"File.Write", p.Grants.File.Write, []grant.Spec{}},
		{"File.SystemPaths", p.Grants.File.SystemPaths, []grant.Spec{{Text: "/usr/local/go", Pos: at(18, 17)}}},
		{"Egress", p.Grants.Egress, []grant.Spec{}},
		{"Pos[stages]", p.Pos["stages"], at(20, 1)},
		{"Pos[version]", p.Pos["version"], at(1, 1)},
		{"len(Pos)", len(p.Pos), 9},
		{"len(Stages)", len(p.Stages), 5},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != len("sha256:")+64 {
		t.Errorf("Digest = %q, want sha256:<64 hex>", p.Digest)
	}
	wantStages := []struct {
		kind   StageKind
		linux  string
		darwin string
		with   string
		pos    Pos
	}{
		{StageWorkspace, "workspace", "workspace", `{}`, at(21, 5)},
		{StageConfine, "bubblewrap", "seatbelt", `{}`, at(22, 5)},
		{StageAudit, "strace", "auditlog", `{}`, at(23, 5)},
		{StageScore, "scorer", "scorer", `{"format":"go-test-json","run":["go","test","-json","./eval/..."]}`, at(24, 5)},
		{StageSeal, "seal", "seal", `{}`, at(25, 5)},
	}
	for i, w := range wantStages {
		s := p.Stages[i]
		linux, _ := s.Plugin.For("linux")
		darwin, _ := s.Plugin.For("darwin")
		if s.Kind != w.kind || linux != w.linux || darwin != w.darwin || string(s.With) != w.with || s.Pos != w.pos {
			t.Errorf("Stages[%d] = %s linux=%s darwin=%s with=%s pos=%v, want %s %s %s %s %v",
				i, s.Kind, linux, darwin, s.With, s.Pos, w.kind, w.linux, w.darwin, w.with, w.pos)
		}
	}
	if _, ok := p.Stages[1].Plugin.For("windows"); ok {
		t.Errorf("confine plugin For(windows) = ok, want none: the file names none")
	}
	if layer := p.Grants.Layer("pipeline"); layer.Name != "pipeline" || layer.Pos != at(11, 1) || len(layer.Exec.Allow) != 3 {
		t.Errorf("Grants.Layer = %+v", layer)
	}
}

func TestDefaults(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "p.yaml", head+stagesBlock)
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if p.Repo != dir || p.Commit != "HEAD" || p.Evaluation != "" || p.Trials != 1 || !p.Confinement ||
		p.Target.Timeout != 10*time.Minute || p.Target.Env != nil || p.Grants.Pos != (Pos{}) ||
		p.Grants.File.Read != nil || p.Grants.Exec.Allow != nil {
		t.Errorf("defaults: %+v", p)
	}
	score, ok := p.Stage(StageScore)
	if !ok || string(score.With) != "{}" || score.WithPos[""] != (Pos{File: path, Line: 9, Col: 5}) {
		t.Errorf("score stage without with: = %+v, want With {} and WithPos[\"\"] at the stage", score)
	}
	if _, ok := p.Pos["repo"]; ok {
		t.Errorf("Pos[repo] is set, but the file has no repo key")
	}
}

func TestPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	cases := []struct {
		name, repo, want string
	}{
		{"relative to the file", "repo: ../src", filepath.Join(dir, "src")},
		{"dot", "repo: .", filepath.Join(dir, "sub")},
		{"absolute", "repo: /srv/x/../y", "/srv/y"},
		{"home", `repo: "~"`, home},
		{"under home", "repo: ~/src/x", filepath.Join(home, "src/x")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, "sub/p.yaml", head+c.repo+"\n"+stagesBlock)
			p, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if p.Repo != c.want {
				t.Errorf("Repo = %q, want %q", p.Repo, c.want)
			}
		})
	}
	t.Run("relative file name", func(t *testing.T) {
		t.Chdir(dir)
		writeFile(t, dir, "sub/q.yaml", head+"repo: ..\n"+stagesBlock)
		p, err := Load("sub/q.yaml")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if p.Repo != dir || p.Path != filepath.Join(dir, "sub/q.yaml") {
			t.Errorf("Repo, Path = %q, %q; want %q, %q", p.Repo, p.Path, dir, filepath.Join(dir, "sub/q.yaml"))
		}
		if p.Target.Pos.File != "sub/q.yaml" {
			t.Errorf("Pos.File = %q, want the name as given, sub/q.yaml", p.Target.Pos.File)
		}
	})
	t.Run("evaluation", func(t *testing.T) {
		for in, want := range map[string]string{`""`: "", "eval/": "eval", "./eval": "eval", "a//b/../c/": "a/c"} {
			p, err := Parse("p.yaml", []byte(head+"evaluation: "+in+"\n"+stagesBlock))
			if err != nil {
				t.Fatalf("evaluation %s: %v", in, err)
			}
			if p.Evaluation != want {
				t.Errorf("evaluation %s = %q, want %q", in, p.Evaluation, want)
			}
		}
	})
}

func TestWithPos(t *testing.T) {
	src := head + `stages:
  - workspace: {plugin: workspace}
  - confine: {plugin: bubblewrap}
  - audit: {plugin: strace}
  - score:
      plugin: scorer
      with:
        run: [go, test]
        format: go-test-json
        limits:
          a/b~: 1.5
          on: true
          none: null
  - seal: {plugin: seal}
`
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	s, _ := p.Stage(StageScore)
	const wantJSON = `{"format":"go-test-json","limits":{"a/b~":1.5,"none":null,"on":true},"run":["go","test"]}`
	if string(s.With) != wantJSON {
		t.Errorf("With = %s, want %s", s.With, wantJSON)
	}
	at := func(line, col int) Pos { return Pos{File: "p.yaml", Line: line, Col: col} }
	want := map[string]Pos{
		"":               at(11, 7),
		"/run":           at(12, 9),
		"/run/0":         at(12, 15),
		"/run/1":         at(12, 19),
		"/format":        at(13, 9),
		"/limits":        at(14, 9),
		"/limits/a~1b~0": at(15, 11),
		"/limits/on":     at(16, 11),
		"/limits/none":   at(17, 11),
	}
	if !reflect.DeepEqual(s.WithPos, want) {
		t.Errorf("WithPos = %v\nwant %v", s.WithPos, want)
	}
	if s.Pos != at(9, 5) || s.Plugin.Name != "scorer" || s.Plugin.Pos != at(10, 15) {
		t.Errorf("stage Pos %v, plugin %+v", s.Pos, s.Plugin)
	}
}

func TestStagesInRunOrder(t *testing.T) {
	src := head + `confinement: false
stages:
  - seal: {plugin: seal}
  - score: {plugin: scorer}
  - audit: {plugin: strace}
  - workspace: {plugin: workspace}
`
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var kinds []StageKind
	for _, s := range p.Stages {
		kinds = append(kinds, s.Kind)
	}
	want := []StageKind{StageWorkspace, StageAudit, StageScore, StageSeal}
	if !reflect.DeepEqual(kinds, want) || p.Confinement {
		t.Errorf("kinds = %v, confinement %v; want %v, false", kinds, p.Confinement, want)
	}
	var active []StageKind
	for _, s := range p.ActiveStages() {
		active = append(active, s.Kind)
	}
	if want := []StageKind{StageWorkspace, StageScore, StageSeal}; !reflect.DeepEqual(active, want) {
		t.Errorf("ActiveStages = %v, want %v: an unconfined run skips audit", active, want)
	}
	p.Confinement = true
	if n := len(p.ActiveStages()); n != 4 {
		t.Errorf("confined: %d active stages, want all 4", n)
	}
}

// validFiles are pipelines Load accepts (and the schema too, see
// TestSchemaAgreesWithLoad).
var validFiles = map[string]string{
	"design example": designExample,
	"minimal":        head + stagesBlock,
	"unconfined, no confine or audit": head + `confinement: false
stages:
  - workspace: {plugin: workspace}
  - score: {plugin: scorer}
  - seal: {plugin: seal}
`,
	"block style, out of order, per-OS": `stages:
  - seal:
      plugin: seal
  - audit:
      plugin:
        linux: strace
        darwin: auditlog
  - confine:
      plugin: {linux: bubblewrap, darwin: seatbelt, freebsd: jail-2}
  - score:
      plugin: scorer
      with:
        run: [go, test, ./...]
        format: exit-code
        retries: 2
  - workspace: {plugin: workspace, with: {}}
version: 1
name: Block_style.v2
commit: "0123456"
trials: 1000
target:
  run: [sleep, 5, 1.5, true, ""]
  env: {N: 010, F: 1.0, B: yes, _X: ""}
  timeout: 1h30m
grants:
  exec:
    only: {npm: [], make: [test, 1]}
`,
}

func TestLoadValid(t *testing.T) {
	for name, src := range validFiles {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("p.yaml", []byte(src)); err != nil {
				t.Errorf("Parse:\n%v", err)
			}
		})
	}
}

func TestTextValuesAsWritten(t *testing.T) {
	p, err := Parse("p.yaml", []byte(validFiles["block style, out of order, per-OS"]))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sleep", "5", "1.5", "true", ""}; !reflect.DeepEqual(p.Target.Run, want) {
		t.Errorf("Run = %q, want %q", p.Target.Run, want)
	}
	if want := map[string]string{"N": "010", "F": "1.0", "B": "yes", "_X": ""}; !reflect.DeepEqual(p.Target.Env, want) {
		t.Errorf("Env = %q, want %q", p.Target.Env, want)
	}
	if p.Commit != "0123456" || p.Trials != 1000 || p.Target.Timeout != 90*time.Minute {
		t.Errorf("Commit %q Trials %d Timeout %v", p.Commit, p.Trials, p.Target.Timeout)
	}
	score, _ := p.Stage(StageScore)
	if string(score.With) != `{"format":"exit-code","retries":2,"run":["go","test","./..."]}` {
		t.Errorf("With = %s", score.With)
	}
	only := p.Grants.Exec.Only
	if len(only) != 2 || only[0].Key.Text != "npm" || len(only[0].Args) != 0 || !reflect.DeepEqual(only[1].Args, []string{"test", "1"}) {
		t.Errorf("Only = %+v", only)
	}
}

// invalidFiles are pipelines Load refuses, with every line of the error it
// must give. schema says whether the JSON Schema must refuse the file as
// well; a few rules (duplicates, aliases, ...) are Load's alone.
var invalidFiles = []struct {
	name   string
	src    string
	want   []string
	schema bool
}{
	{"unknown key, did you mean", head + "trails: 2\n" + stagesBlock,
		[]string{`p.yaml:5:1: unknown key "trails" (did you mean "trials"?)`}, true},
	{"unknown key, case", head + "grants:\n  systempaths: [/opt]\n" + stagesBlock,
		[]string{`p.yaml:6:3: grants: unknown key "systempaths" (did you mean "systemPaths"?)`}, true},
	{"unknown nested key", head + "  timout: 5m\n" + stagesBlock,
		[]string{`p.yaml:5:3: target: unknown key "timout" (did you mean "timeout"?)`}, true},
	{"unknown key, no near miss", head + "colour: red\n" + stagesBlock,
		[]string{`p.yaml:5:1: unknown key "colour" (expected one of: version, name, repo, commit, evaluation, trials, confinement, target, grants, stages)`}, true},
	{"unknown exec key", head + "grants:\n  exec:\n    alow: [git]\n" + stagesBlock,
		[]string{`p.yaml:7:5: grants.exec: unknown key "alow" (did you mean "allow"?)`}, true},
	{"duplicate key", head + "name: u\n" + stagesBlock,
		[]string{`p.yaml:5:1: duplicate key "name" (first at line 2)`}, false},
	{"duplicate nested key", head + "  run: [x]\n" + stagesBlock,
		[]string{`p.yaml:5:3: target: duplicate key "run" (first at line 4)`}, false},
	{"wrong type, string for number", head + "trials: many\n" + stagesBlock,
		[]string{`p.yaml:5:9: trials: expected a whole number from 1 to 1000, found "many"`}, true},
	{"wrong type, number for string", "version: 1\nname: 123\ntarget:\n  run: [make, test]\n" + stagesBlock,
		[]string{`p.yaml:2:7: name: expected a string, found the number 123 (quote it to make it a string)`}, true},
	{"wrong type, yes for boolean", head + "confinement: yes\n" + stagesBlock,
		[]string{`p.yaml:5:14: confinement: expected true or false, found "yes"`}, true},
	{"wrong type, mapping for list", head + "grants:\n  read: {a: b}\n" + stagesBlock,
		[]string{`p.yaml:6:9: grants.read: expected a list of strings, found a mapping`}, true},
	{"wrong type, null", head + "grants:\n" + stagesBlock,
		[]string{`p.yaml:5:8: grants: expected a mapping of grants (exec, read, write, systemPaths, egress), found nothing (null)`}, true},
	{"run is a string", "version: 1\nname: t\ntarget:\n  run: make test\n" + stagesBlock,
		[]string{`p.yaml:4:8: target.run: expected a non-empty list of arguments, found "make test" (argv, no shell: write [make, test])`}, true},
	{"run is empty", "version: 1\nname: t\ntarget:\n  run: []\n" + stagesBlock,
		[]string{`p.yaml:4:8: target.run: expected a non-empty list of arguments, found an empty list`}, true},
	{"run program empty", "version: 1\nname: t\ntarget:\n  run: [\"\", x]\n" + stagesBlock,
		[]string{`p.yaml:4:9: target.run[0]: expected the program to run, found an empty string`}, false},
	{"run element a list", "version: 1\nname: t\ntarget:\n  run: [make, [a]]\n" + stagesBlock,
		[]string{`p.yaml:4:15: target.run[1]: expected an argument (a string), found a list`}, true},
	{"trials out of range", head + "trials: 0\n" + stagesBlock,
		[]string{`p.yaml:5:9: trials: expected a whole number from 1 to 1000, found 0`}, true},
	{"missing required keys", "version: 1\n" + stagesBlock,
		[]string{`p.yaml:1:1: missing required key "name"`, `p.yaml:1:1: missing required key "target"`}, true},
	{"missing nested required key", "version: 1\nname: t\ntarget:\n  env: {A: b}\n" + stagesBlock,
		[]string{`p.yaml:3:1: target: missing required key "run"`}, true},
	{"missing version", "name: t\ntarget:\n  run: [make]\n" + stagesBlock,
		[]string{`p.yaml:1:1: missing required key "version"`}, true},
	{"version 2", "version: 2\nname: t\ntarget:\n  run: [make]\n" + stagesBlock,
		[]string{`p.yaml:1:10: version: unsupported version 2 (this warden reads version 1)`}, true},
	{"bad duration", head + "  timeout: ten minutes\n" + stagesBlock,
		[]string{`p.yaml:5:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found "ten minutes"`}, true},
	{"duration without unit", head + "  timeout: 10\n" + stagesBlock,
		[]string{`p.yaml:5:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found the number 10 (add a unit, e.g. 10s)`}, true},
	{"zero duration", head + "  timeout: 0s\n" + stagesBlock,
		[]string{`p.yaml:5:12: target.timeout: expected a duration greater than zero, found "0s"`}, false},
	{"negative duration", head + "  timeout: -5m\n" + stagesBlock,
		[]string{`p.yaml:5:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found "-5m"`}, true},
	{"bad env name", head + "  env: {1A: x, OK: [1]}\n" + stagesBlock,
		[]string{
			`p.yaml:5:9: target.env: expected an environment variable name (letters, digits and '_', not starting with a digit), found "1A"`,
			`p.yaml:5:20: target.env.OK: expected a value (a string), found a list`,
		}, true},
	{"commit starting with -", head + "commit: --upload-pack=x\n" + stagesBlock,
		[]string{`p.yaml:5:9: commit: expected a git revision (no spaces, not starting with '-'), found "--upload-pack=x"`}, true},
	{"name not an identifier", "version: 1\nname: go unit\ntarget:\n  run: [make]\n" + stagesBlock,
		[]string{`p.yaml:2:7: name: expected a short identifier (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters), found "go unit"`}, true},
	{"repo ~user", head + "repo: ~bob/src\n" + stagesBlock,
		[]string{`p.yaml:5:7: repo: expected a path, found "~bob/src" (only ~ and ~/ are expanded, not ~user)`}, false},
	{"evaluation escapes", head + "evaluation: eval/../../x\n" + stagesBlock,
		[]string{`p.yaml:5:13: evaluation: expected a folder inside repo, found "eval/../../x", which leaves it`}, false},
	{"evaluation absolute", head + "evaluation: /eval\n" + stagesBlock,
		[]string{`p.yaml:5:13: evaluation: expected a folder relative to repo, found the absolute path "/eval"`}, true},
	{"evaluation is the repo", head + "evaluation: ./\n" + stagesBlock,
		[]string{`p.yaml:5:13: evaluation: expected a folder inside repo, found "./", which is the whole repository`}, false},
	{"only value not a list", head + "grants:\n  exec:\n    only: {npm: test}\n" + stagesBlock,
		[]string{`p.yaml:7:17: grants.exec.only.npm: expected a list of arguments, found "test"`}, true},
	{"empty grant key", head + "grants:\n  read: [\"\"]\n" + stagesBlock,
		[]string{`p.yaml:6:10: grants.read[0]: expected a grant key, found an empty string`}, true},

	{"stage is a string", head + "stages:\n  - workspace\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:6:5: stages[0]: expected a stage such as {score: {plugin: scorer}}, found "workspace"`}, true},
	{"stage body indented wrongly", head + "stages:\n  - workspace:\n    plugin: workspace\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:6:5: stages[0]: expected one key, the stage kind, found 2 (workspace, plugin); are plugin: and with: indented under the kind?`}, true},
	{"stage body null", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal:\n",
		[]string{`p.yaml:10:10: stages[4].seal: expected a mapping such as {plugin: NAME, with: {...}}, found nothing (null)`}, true},
	{"stage body unknown key", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer, wiht: {}}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:9:29: stages[3].score: unknown key "wiht" (did you mean "with"?)`}, true},
	{"stage without plugin", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {with: {}}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:9:5: stages[3].score: missing required key "plugin"`}, true},
	{"unknown stage", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - scroe: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:9:5: stages[3]: unknown stage "scroe" (did you mean "score"?)`}, true},
	{"unknown stage, no near miss", head + stagesBlock + "  - publish: {plugin: s3}\n",
		[]string{`p.yaml:11:5: stages[5]: unknown stage "publish" (expected one of: workspace, confine, audit, score, seal)`}, true},
	{"duplicate stage", head + stagesBlock + "  - score: {plugin: scorer2}\n",
		[]string{`p.yaml:11:5: stages[5]: duplicate stage "score" (first at line 9)`}, false},
	{"missing stages", head + "stages:\n  - workspace: {plugin: workspace}\n  - score: {plugin: scorer}\n",
		[]string{
			`p.yaml:5:1: stages: missing stage "confine" (required unless confinement: false)`,
			`p.yaml:5:1: stages: missing stage "audit" (required unless confinement: false)`,
			`p.yaml:5:1: stages: missing stage "seal" (required)`,
		}, true},
	{"unconfined still needs seal", head + "confinement: false\nstages:\n  - workspace: {plugin: workspace}\n  - score: {plugin: scorer}\n",
		[]string{`p.yaml:6:1: stages: missing stage "seal" (required)`}, true},
	{"bad plugin name", head + "stages:\n  - workspace: {plugin: Work_Space}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:6:25: stages[0].workspace.plugin: expected a plugin name (lower-case letters, digits and '-', starting with a letter or digit), found "Work_Space"`}, true},
	{"per-OS unknown GOOS", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: {linx: bubblewrap, macos: seatbelt}}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{
			`p.yaml:7:24: stages[1].confine.plugin: unknown GOOS "linx" (did you mean "linux"?)`,
			`p.yaml:7:42: stages[1].confine.plugin: unknown GOOS "macos" (expected one of: aix, android, darwin, dragonfly, freebsd, illumos, ios, js, linux, netbsd, openbsd, plan9, solaris, wasip1, windows)`,
		}, true},
	{"per-OS bad name", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: {linux: Bubblewrap}}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:7:31: stages[1].confine.plugin.linux: expected a plugin name (lower-case letters, digits and '-', starting with a letter or digit), found "Bubblewrap"`}, true},
	{"per-OS empty", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: {}}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:7:23: stages[1].confine.plugin: expected a mapping of GOOS to plugin name such as {linux: bubblewrap}, found an empty mapping`}, true},
	{"plugin a list", head + "stages:\n  - workspace: {plugin: [workspace]}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:6:25: stages[0].workspace.plugin: expected a plugin name or a mapping of GOOS to plugin name, found a list`}, true},
	{"with not a mapping", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer, with: [go, test]}\n  - seal: {plugin: seal}\n",
		[]string{`p.yaml:9:35: stages[3].score.with: expected a mapping (the plugin's configuration), found a list`}, true},
	{"with duplicate key and infinity", head + "stages:\n  - workspace: {plugin: workspace}\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n  - score: {plugin: scorer, with: {a: 1, a: 2, b: .inf}}\n  - seal: {plugin: seal}\n",
		[]string{
			`p.yaml:9:42: stages[3].score.with: duplicate key "a" (first at line 9)`,
			`p.yaml:9:51: stages[3].score.with.b: expected a number JSON can hold, found .inf`,
		}, false},
	{"stages not a list", head + "stages: {workspace: {plugin: workspace}}\n",
		[]string{`p.yaml:5:9: stages: expected a list of stages such as - workspace: {plugin: workspace}, found a mapping`}, true},

	{"anchor and alias", "version: 1\nname: t\ntarget:\n  run: &argv [make, test]\n" + stagesBlock + "x: *argv\n",
		[]string{
			`p.yaml:4:8: anchors (&argv) are not supported: write each value out`,
			`p.yaml:11:1: unknown key "x" (expected one of: version, name, repo, commit, evaluation, trials, confinement, target, grants, stages)`,
			`p.yaml:11:4: aliases (*argv) are not supported: write the value out`,
		}, false},
	{"merge key", "version: 1\nname: t\ntarget:\n  <<: {run: [make]}\n  run: [make]\n" + stagesBlock,
		[]string{`p.yaml:4:3: merge keys (<<) are not supported: write the keys out`}, false},
	{"alias in a list", "version: 1\nname: &n t\ntarget:\n  run: [make, *n]\n" + stagesBlock,
		[]string{
			`p.yaml:2:7: anchors (&n) are not supported: write each value out`,
			`p.yaml:4:15: aliases (*n) are not supported: write the value out`,
		}, false},
	{"two documents", head + stagesBlock + "---\nversion: 1\n",
		[]string{`p.yaml:11:1: a second YAML document starts here; the file must hold one document`}, false},
	{"tab indentation", "version: 1\nname: t\ntarget:\n\trun: [make]\n" + stagesBlock,
		[]string{`p.yaml:4:1: invalid YAML: found character that cannot start any token (a tab in the indentation: YAML indents with spaces only)`}, false},
	{"unclosed flow list", "version: 1\nname: t\ntarget:\n  run: [make, test\n" + stagesBlock,
		[]string{`p.yaml:4: invalid YAML: did not find expected ',' or ']'`}, false},
	{"mapping not closed", "version: 1\nname: t\ntarget: {run: [make]\n" + stagesBlock,
		[]string{`p.yaml:3: invalid YAML: did not find expected ',' or '}'`}, false},
	{"block mapping broken", "version: 1\nname: t\ntarget:\n  run: [make]\n - x\n" + stagesBlock,
		[]string{`p.yaml:5: invalid YAML: did not find expected key`}, false},
	{"tilde is null", head + "repo: ~\n" + stagesBlock,
		[]string{`p.yaml:5:7: repo: expected a string, found nothing (null) (YAML reads a bare ~ as null; write "~" for the home directory)`}, true},
	{"bad indentation", "version: 1\nname: t\n target: x\n" + stagesBlock,
		[]string{`p.yaml:3: invalid YAML: mapping values are not allowed in this context`}, false},
	{"not a mapping", "- version: 1\n",
		[]string{`p.yaml:1:1: expected a mapping of top-level keys, found a list`}, true},
	{"empty file", "# nothing yet\n",
		[]string{`p.yaml: the file is empty; expected a mapping with version: 1, name, target and stages`}, false},
	{"every error is reported", `version: 1
name: t
trails: 3
target:
  run: make
  timeout: 5
grants:
  exec: {allow: [git], deny: curl}
stages:
  - workspace: {plugin: workspace}
  - confine: {plugin: {linux: bubblewrap, darwn: seatbelt}}
  - audit: {plugin: strace}
  - score: {plugin: scorer}
  - score: {plugin: scorer}
`, []string{
		`p.yaml:3:1: unknown key "trails" (did you mean "trials"?)`,
		`p.yaml:5:8: target.run: expected a non-empty list of arguments, found "make"`,
		`p.yaml:6:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found the number 5 (add a unit, e.g. 5s)`,
		`p.yaml:8:30: grants.exec.deny: expected a list of strings, found "curl"`,
		`p.yaml:9:1: stages: missing stage "seal" (required)`,
		`p.yaml:11:43: stages[1].confine.plugin: unknown GOOS "darwn" (did you mean "darwin"?)`,
		`p.yaml:14:5: stages[4]: duplicate stage "score" (first at line 13)`,
	}, false},
}

func TestLoadErrors(t *testing.T) {
	for _, c := range invalidFiles {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("Parse accepted the file: %+v", p)
			}
			if p != nil {
				t.Errorf("Parse returned a pipeline with its error")
			}
			var es *Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not *Errors: %v", err, err)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(c.want, "\n"))
			}
			if len(es.List) != len(c.want) {
				t.Errorf("%d errors in List, want %d", len(es.List), len(c.want))
			}
			if code := errdefs.Code(err); code != errdefs.ExitUsage {
				t.Errorf("errdefs.Code = %d, want %d", code, errdefs.ExitUsage)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("p.yaml", []byte(head+"  timeout: ten\n"+stagesBlock))
	var es *Errors
	if !errors.As(err, &es) || len(es.List) != 1 {
		t.Fatalf("err = %v", err)
	}
	want := Error{Pos: Pos{File: "p.yaml", Line: 5, Col: 12}, Path: "target.timeout", Msg: `expected a duration such as 90s, 10m or 1h30m, found "ten"`}
	if es.List[0] != want {
		t.Errorf("Error = %+v, want %+v", es.List[0], want)
	}
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	b, err := json.Marshal(es.List[0])
	const wantJSON = `{"file":"p.yaml","line":5,"col":12,"path":"target.timeout","message":"expected a duration such as 90s, 10m or 1h30m, found \"ten\""}`
	if err != nil || string(b) != wantJSON {
		t.Errorf("JSON = %s, %v; want %s", b, err, wantJSON)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) || errdefs.Code(err) != errdefs.ExitUsage {
		t.Fatalf("err = %v (code %d), want not-exist with code 2", err, errdefs.Code(err))
	}
	if want := path + ": unable to read: no such file or directory"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestValidateFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", head+stagesBlock)
	bad1 := writeFile(t, dir, "bad1.yaml", head+"trails: 2\n"+stagesBlock)
	bad2 := writeFile(t, dir, "bad2.yaml", "version: 3\nname: t\ntarget:\n  run: [make]\n  timeout: x\n"+stagesBlock)
	absent := filepath.Join(dir, "absent.yaml")

	if err := ValidateFiles(good, good); err != nil {
		t.Errorf("ValidateFiles(good, good) = %v", err)
	}
	err := ValidateFiles(bad2, good, absent, bad1)
	want := []string{
		bad2 + `:1:10: version: unsupported version 3 (this warden reads version 1)`,
		bad2 + `:5:12: target.timeout: expected a duration such as 90s, 10m or 1h30m, found "x"`,
		absent + `: unable to read: no such file or directory`,
		bad1 + `:5:1: unknown key "trails" (did you mean "trials"?)`,
	}
	if err == nil || !reflect.DeepEqual(strings.Split(err.Error(), "\n"), want) {
		t.Errorf("ValidateFiles:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if errdefs.Code(err) != errdefs.ExitUsage {
		t.Errorf("errdefs.Code = %d, want 2", errdefs.Code(err))
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "policy.yaml", `version: 1
grants:
  exec:
    allow: ["@system", "@path"]
    deny: [curl, wget]
  read: [~/.cache/go-build]
`)
	layer, err := LoadPolicy(path)
	if err != nil {
		t.Fatalf("LoadPolicy: %v", err)
	}
	at := func(line, col int) Pos { return Pos{File: path, Line: line, Col: col} }
	want := grant.Layer{
		Name: "policy",
		Pos:  at(2, 1),
		Exec: grant.ExecSpec{
			Allow: []grant.Spec{{Text: "@system", Pos: at(4, 13)}, {Text: "@path", Pos: at(4, 24)}},
			Deny:  []grant.Spec{{Text: "curl", Pos: at(5, 12)}, {Text: "wget", Pos: at(5, 18)}},
		},
		File: grant.FileSpec{Read: []grant.Spec{{Text: "~/.cache/go-build", Pos: at(6, 10)}}},
	}
	if !reflect.DeepEqual(layer, want) {
		t.Errorf("layer = %+v\nwant %+v", layer, want)
	}

	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"unknown top-level key", "grant:\n  read: []\nname: x\n", []string{
			`policy.yaml:1:1: unknown key "grant" (did you mean "grants"?)`,
			`policy.yaml:1:1: missing required key "grants"`,
			`policy.yaml:3:1: unknown key "name" (expected one of: version, grants)`,
		}},
		{"egress", "grants:\n  egress: [example.com]\n", []string{
			`policy.yaml:2:3: grants: egress is not supported in a policy file (a policy restricts exec, read, write and systemPaths)`,
		}},
		{"same strictness as a pipeline", "version: 2\ngrants:\n  exec: {alow: [git]}\n  read: [1]\n", []string{
			`policy.yaml:1:10: version: unsupported version 2 (this warden reads version 1)`,
			`policy.yaml:3:10: grants.exec: unknown key "alow" (did you mean "allow"?)`,
			`policy.yaml:4:10: grants.read[0]: expected a string, found the number 1 (quote it to make it a string)`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePolicy("policy.yaml", []byte(c.src))
			if err == nil || !reflect.DeepEqual(strings.Split(err.Error(), "\n"), c.want) {
				t.Errorf("ParsePolicy:\n%v\nwant:\n%s", err, strings.Join(c.want, "\n"))
			}
			if errdefs.Code(err) != errdefs.ExitUsage {
				t.Errorf("errdefs.Code = %d, want 2", errdefs.Code(err))
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"version", "name", "repo", "commit", "stages", "systemPaths", "egress"}
	for in, want := range map[string]string{
		"stges":       "stages",
		"stagse":      "stages",
		"Stages":      "stages",
		"systempaths": "systemPaths",
		"comit":       "commit",
		"nam":         "name",
		"colour":      "",
		"x":           "",
		"egres":       "egress",
		"repository":  "",
	} {
		if got := suggest(in, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
