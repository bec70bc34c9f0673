package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warden-run/warden/core/supervise"
)

// These tests drive the built binaries: warden and its in-tree plugins.
// `make test` builds them into bin/ and names the directory in WARDEN_BIN;
// without it TestMain builds them into a temp directory.
var binDir string

func TestMain(m *testing.M) {
	if supervise.Init() {
		return
	}
	binDir = os.Getenv("WARDEN_BIN")
	cleanup := func() {}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "warden-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cleanup = func() { os.RemoveAll(dir) }
		binDir = dir
		root, _ := filepath.Abs("../..")
		builds := map[string]string{"warden": "./cmd/warden", "warden-supervise": "./cmd/warden-supervise"}
		for _, p := range []string{"workspace", "scorer", "seal"} {
			builds["warden-plugin-"+p] = "./plugins/" + p
		}
		for out, pkg := range builds {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
				cleanup()
				os.Exit(2)
			}
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// warden runs the built binary in dir with the plugin path set to the
// built plugins and a private HOME, so the operator's files play no part.
func warden(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "warden"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WARDEN_PLUGIN_PATH="+binDir, "XDG_DATA_HOME="+filepath.Join(dir, ".xdg"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func (r result) want(t *testing.T, code int, needles ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, n := range needles {
		if !strings.Contains(r.stdout+r.stderr, n) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", n, r.stdout, r.stderr)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, b)
	}
}

// project makes a git repository with a target script and a withheld
// evaluation folder, and a pipeline over it; target and score are the run
// and score argv (YAML flow lists).
func project(t *testing.T, target, score, extra string) (dir, pipeline string) {
	t.Helper()
	return projectWith(t, t.TempDir(), target, score, extra)
}

// projectIn is project in dir with the usual score.
func projectIn(t *testing.T, dir, target string) (string, string) {
	t.Helper()
	return projectWith(t, dir, target, "[sh, eval/check.sh]", "")
}

func projectWith(t *testing.T, dir, target, score, extra string) (string, string) {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	write(t, filepath.Join(repo, "answer.txt"), "41\n")
	write(t, filepath.Join(repo, "solve.sh"), "#!/bin/sh\necho 42 > answer.txt\necho solved\n")
	write(t, filepath.Join(repo, "eval", "check.sh"), "#!/bin/sh\necho 1..1\nif [ \"$(cat answer.txt)\" = 42 ]; then echo ok 1; else echo not ok 1; fi\n")
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "initial")
	pipeline := filepath.Join(dir, "p.yaml")
	write(t, pipeline, fmt.Sprintf(`version: 1
name: e2e
repo: repo
evaluation: eval
confinement: false
target:
  run: %s
  timeout: 5s
grants:
  exec:
    allow: ["@system"]
stages:
  - workspace: {plugin: workspace}
  - score: {plugin: scorer, with: {run: %s, format: tap}}
  - seal: {plugin: seal}
%s`, target, score, extra))
	return dir, pipeline
}

func TestVersionAndSchema(t *testing.T) {
	warden(t, t.TempDir(), "version").want(t, 0, "warden ", "plugin protocol 1")
	r := warden(t, t.TempDir(), "schema")
	r.want(t, 0, `"$schema"`)
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	warden(t, t.TempDir(), "frobnicate").want(t, 2)
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	write(t, good, "version: 1\nname: g\nrepo: .\nconfinement: false\ntarget: {run: [true]}\nstages:\n  - workspace: {plugin: workspace}\n  - score: {plugin: scorer}\n  - seal: {plugin: seal}\n")
	write(t, bad, "version: 1\nname: b\nrepo: .\nconfinement: false\ntarget: {run: [true]}\nstges: []\n")
	warden(t, dir, "validate", good).want(t, 0, "valid")
	r := warden(t, dir, "validate", good, bad)
	r.want(t, 2, "bad.yaml:6:1", `did you mean "stages"`)
	r = warden(t, dir, "validate", "--json", bad)
	r.want(t, 2)
	var out struct {
		Valid  bool
		Errors []map[string]any
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Valid || len(out.Errors) == 0 {
		t.Fatalf("validate --json: %v %s", err, r.stdout)
	}
	// Every shipped pipeline validates.
	abs, _ := filepath.Abs("../../pipelines")
	shipped, _ := filepath.Glob(filepath.Join(abs, "*.yaml"))
	if len(shipped) == 0 {
		t.Fatal("no shipped pipelines found")
	}
	warden(t, dir, append([]string{"validate"}, shipped...)...).want(t, 0)
}

func TestPlugins(t *testing.T) {
	r := warden(t, t.TempDir(), "plugins")
	r.want(t, 0, "workspace", "scorer", "seal", "healthy")
	r = warden(t, t.TempDir(), "plugins", "--json")
	r.want(t, 0)
	var out struct {
		Plugins []struct {
			Name, Version, SHA256, Health string
			Stages                        []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range out.Plugins {
		names[p.Name] = true
		if !strings.HasPrefix(p.SHA256, "sha256:") || p.Version == "" || len(p.Stages) == 0 {
			t.Fatalf("plugin %+v lacks sha256, version or stages", p)
		}
	}
	for _, n := range []string{"workspace", "scorer", "seal"} {
		if !names[n] {
			t.Fatalf("plugins --json lacks %s: %s", n, r.stdout)
		}
	}
}

type runJSON struct {
	Status      string
	ExitCode    int
	Confinement bool
	Plugins     []struct{ Stage, Name, Version, SHA256 string }
	Trials      []struct {
		Index, ExitCode int
		Launched        bool
		Stdout          struct{ Path string }
	}
	Score *struct {
		Pass           bool
		Passed, Failed int64
	}
	Files map[string]string
}

func readRun(t *testing.T, runDir string) runJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r runJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunPasses(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 0)
	var sum struct {
		InvocationID, RunDir string
		ExitCode             int
		ObservedMounts       []any
		Score                struct{ Pass bool }
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, r.stdout)
	}
	if sum.ExitCode != 0 || !sum.Score.Pass || sum.ObservedMounts == nil || sum.InvocationID == "" {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.HasPrefix(sum.RunDir, filepath.Join(dir, "runs")) {
		t.Fatalf("run dir %s not under %s/runs", sum.RunDir, dir)
	}
	rec := readRun(t, sum.RunDir)
	if rec.Status != "completed" || rec.ExitCode != 0 || rec.Confinement {
		t.Fatalf("run.json %+v", rec)
	}
	stages := map[string]bool{}
	for _, pl := range rec.Plugins {
		if pl.Version == "" || !strings.HasPrefix(pl.SHA256, "sha256:") {
			t.Fatalf("plugin record %+v", pl)
		}
		stages[pl.Stage] = true
	}
	if !stages["workspace"] || !stages["score"] || !stages["seal"] {
		t.Fatalf("run.json plugins %+v", rec.Plugins)
	}
	out, err := os.ReadFile(filepath.Join(sum.RunDir, rec.Trials[0].Stdout.Path))
	if err != nil || string(out) != "solved\n" {
		t.Fatalf("target stdout %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(sum.RunDir, "SHA256SUMS")); err != nil {
		t.Fatal("the seal wrote no SHA256SUMS")
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", ".gitignore")); err != nil {
		t.Fatal("runs/.gitignore missing")
	}
	// The user's repository is untouched by the run.
	b, _ := exec.Command("git", "-C", filepath.Join(dir, "repo"), "status", "--porcelain").Output()
	if len(b) != 0 {
		t.Fatalf("the run changed the user's repository: %s", b)
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name, target string
		code         int
		says         string
	}{
		{"score fails", "[sh, -c, 'echo nothing']", 1, "evaluation failed"},
		{"head not found", "[no-such-program-anywhere]", 127, "no-such-program-anywhere"},
		{"timeout", "[sleep, '30']", 4, "timed out"},
		{"exec outside the grants", "[/usr/bin/env, 'true']", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, p := project(t, c.target, "[sh, eval/check.sh]", "")
			r := warden(t, dir, "run", p)
			if c.name == "exec outside the grants" {
				// @system admits /usr/bin/env; the score then fails.
				r.want(t, 1)
				return
			}
			r.want(t, c.code, c.says)
		})
	}
}

func TestRunRefusesUngrantedProgram(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `allow: ["@system"]`, `allow: [/usr/bin/git]`, 1)), 0o644)
	r := warden(t, dir, "run", p)
	r.want(t, 3, "outside the grants")
}

func TestRunInvalidPipeline(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "trails: 2\n")
	warden(t, dir, "run", p).want(t, 2, "p.yaml:16:1", `did you mean "trials"`)
}

func TestRunMissingPlugin(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "{plugin: seal}", "{plugin: nosuchseal}", 1)), 0o644)
	warden(t, dir, "run", p).want(t, 5, "plugin nosuchseal not found")
}

// startWarden starts `warden run` on a pipeline whose target touches marker
// and then sleeps, and waits for the marker.
func startWarden(t *testing.T, dir, p, marker string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "warden"), "run", p)
	cmd.Dir = dir
	tmp := filepath.Join(dir, "tmp")
	must(t, os.MkdirAll(tmp, 0o755))
	cmd.Env = append(os.Environ(), "WARDEN_PLUGIN_PATH="+binDir, "TMPDIR="+tmp)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			return cmd, &errb
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the target never started:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sleepers counts live processes whose command line holds tag.
func sleepers(tag string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), tag) {
			continue
		}
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if !strings.Contains(string(st), ") Z ") {
			n++
		}
	}
	return n
}

func waitNoSleepers(t *testing.T, tag string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sleepers(tag) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a target process (%s) survived", tag)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunInterruptedBySIGINT(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	tag := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	_, p := projectIn(t, dir, fmt.Sprintf("[sh, -c, 'touch %s; sleep %s & sleep %s']", marker, tag, tag))
	cmd, errb := startWarden(t, dir, p, marker)
	must(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 4 {
		t.Fatalf("warden after SIGINT: %v, want exit 4\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("warden does not say it was interrupted:\n%s", errb.String())
	}
	waitNoSleepers(t, tag)
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "run.json"))
	if len(runs) != 1 {
		t.Fatalf("run.json: %v", runs)
	}
	if rec := readRun(t, filepath.Dir(runs[0])); rec.Status != "failed" || rec.ExitCode != 4 {
		t.Fatalf("run.json after SIGINT: %+v", rec)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("the interrupted run left %v in TMPDIR", left)
	}
	if n := parentsOf(t, cmd.Process.Pid); n != 0 {
		t.Fatalf("the interrupted run left its private parent")
	}
}

func TestRunKilledIsReclaimedNextRun(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	tag := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000+1)
	_, p := projectIn(t, dir, fmt.Sprintf("[sh, -c, 'touch %s; sleep %s & sleep %s']", marker, tag, tag))
	cmd, _ := startWarden(t, dir, p, marker)
	pid := cmd.Process.Pid
	must(t, cmd.Process.Kill())
	cmd.Wait()
	// The watchdog ends the target; Pdeathsig ends the plugins.
	waitNoSleepers(t, tag)
	waitNoSleepers(t, filepath.Join(binDir, "warden-plugin-"))
	if parentsOf(t, pid) != 1 {
		t.Fatal("the killed run's private parent is not there to reclaim")
	}
	left, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(left) != 1 {
		t.Fatalf("the killed run's workspace: %v", left)
	}
	// The next run reclaims the parent and the workspace, and names them.
	dir2, p2 := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	r := warden(t, dir2, "run", p2)
	r.want(t, 0, "reclaimed", "warden-ws-")
	if parentsOf(t, pid) != 0 {
		t.Fatal("the next run did not reclaim the killed run's parent")
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("the killed run's workspace survived the reclaim: %v", left)
	}
}

// parentsOf counts private parents whose ownership record names pid.
func parentsOf(t *testing.T, pid int) int {
	t.Helper()
	root := fmt.Sprintf("/tmp/warden-p%d", os.Getuid())
	recs, _ := filepath.Glob(filepath.Join(root, "run-*", "owner"))
	n := 0
	for _, rec := range recs {
		b, _ := os.ReadFile(rec)
		if strings.Contains(string(b), fmt.Sprintf(`"pid":%d,`, pid)) {
			n++
		}
	}
	return n
}

// BenchmarkRunNoop is the whole fixed cost of warden: a run of a no-op
// target with every stage (load, plugins start and probe, workspace, trial,
// score, seal), against the bare command as a ratio.
func BenchmarkRunNoop(b *testing.B) {
	t := &testing.T{}
	dir := b.TempDir()
	_, p := projectWith(t, dir, "[true]", "[sh, eval/check.sh]", "")
	_ = os.WriteFile(filepath.Join(dir, "repo", "answer.txt"), []byte("42\n"), 0o644)
	bare := time.Now()
	for range 20 {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	perBare := time.Since(bare) / 20
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		cmd := exec.Command(filepath.Join(binDir, "warden"), "run", p)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "WARDEN_PLUGIN_PATH="+binDir)
		if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 1 {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(per.Milliseconds()), "run-ms/op")
	b.ReportMetric(float64(per)/float64(perBare), "x-bare")
}

func TestRunStopsOnUnhealthyProbe(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	// Plugins receive the core's PATH; without git the workspace plugin's
	// probe is unhealthy, and the run stops before anything is made.
	cmd := exec.Command(filepath.Join(binDir, "warden"), "run", p)
	cmd.Dir = dir
	empty := t.TempDir()
	cmd.Env = []string{"PATH=" + empty, "HOME=" + dir, "WARDEN_PLUGIN_PATH=" + binDir}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 12 {
		t.Fatalf("exit %v, want 12\n%s", err, out)
	}
	for _, want := range []string{"plugin workspace", "git"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output does not name %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Fatal("a run directory was made for a run that cannot start")
	}
}

func TestRunRejectsBadWithBlock(t *testing.T) {
	dir, p := projectWith(t, t.TempDir(), "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "format: tap", "format: junit-ish", 1)), 0o644)
	r := warden(t, dir, "run", p)
	r.want(t, 2, "p.yaml:14:62: score stage, plugin scorer: with.format: value must be one of")
}

func TestRunStreamsTargetOutput(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	warden(t, dir, "run", "--stream", p).want(t, 0, "solved")
	if r := warden(t, dir, "run", p); strings.Contains(r.stdout, "solved") {
		t.Fatal("the target's output was echoed without --stream")
	}
}

func TestPluginsShowsShadowedCopies(t *testing.T) {
	other := t.TempDir()
	b, err := os.ReadFile(filepath.Join(binDir, "warden-plugin-seal"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(other, "warden-plugin-seal"), b, 0o755))
	cmd := exec.Command(filepath.Join(binDir, "warden"), "plugins", "--json", "--no-probe")
	cmd.Env = append(os.Environ(), "WARDEN_PLUGIN_PATH="+other+":"+binDir)
	out, err := cmd.Output()
	must(t, err)
	var res struct {
		Plugins []struct {
			Name, Path string
			Shadowed   []string
		}
	}
	must(t, json.Unmarshal(out, &res))
	for _, pl := range res.Plugins {
		if pl.Name == "seal" {
			if pl.Path != filepath.Join(other, "warden-plugin-seal") || len(pl.Shadowed) != 1 || pl.Shadowed[0] != filepath.Join(binDir, "warden-plugin-seal") {
				t.Fatalf("seal: %+v", pl)
			}
			return
		}
	}
	t.Fatalf("no seal plugin listed: %s", out)
}

func TestScoreTimeoutFromWith(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sleep, '30'], timeout: 1s", "")
	start := time.Now()
	r := warden(t, dir, "run", p)
	r.want(t, 1, "the evaluator timed out after 1s")
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the evaluator's time limit was not applied: the run took %v", d)
	}
}

func TestRunWritesSARIF(t *testing.T) {
	dir, p := project(t, "[sh, solve.sh]", "[sh, eval/check.sh]", "")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `allow: ["@system"]`, `allow: [/usr/bin/git]`, 1)), 0o644)
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	var sum struct{ RunDir string }
	must(t, json.Unmarshal([]byte(r.stdout), &sum))
	raw, err := os.ReadFile(filepath.Join(sum.RunDir, "audit.sarif"))
	must(t, err)
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				RuleID    string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn int }
					}
				}
			}
		}
	}
	must(t, json.Unmarshal(raw, &log))
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1 {
		t.Fatalf("sarif: %s", raw)
	}
	res := log.Runs[0].Results[0]
	loc := res.Locations[0].PhysicalLocation
	if res.RuleID != "warden/access-exec" || !strings.Contains(res.Message.Text, "/usr/bin/dash") ||
		!strings.HasSuffix(loc.ArtifactLocation.URI, "p.yaml") || loc.Region.StartLine != 9 {
		t.Fatalf("sarif result %+v", res)
	}
}

// confined makes a project whose pipeline runs the target confined under
// bubblewrap and audited by strace.
func confined(t *testing.T, target, grants string) (string, string) {
	t.Helper()
	dir, p := project(t, target, "[sh, eval/check.sh]", "")
	b, _ := os.ReadFile(p)
	s := strings.Replace(string(b), "confinement: false\n", "", 1)
	s = strings.Replace(s, "grants:\n  exec:\n    allow: [\"@system\"]\n", "grants:\n  exec:\n    allow: [\"@system\"]\n"+grants, 1)
	s = strings.Replace(s, "stages:\n", "stages:\n  - confine: {plugin: bubblewrap}\n  - audit: {plugin: strace}\n", 1)
	must(t, os.WriteFile(p, []byte(s), 0o644))
	return dir, p
}

func observed(t *testing.T, r result) []map[string]any {
	t.Helper()
	var sum struct {
		RunDir         string
		ObservedMounts []map[string]any
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return sum.ObservedMounts
}

func TestConfinedReadOutsideGrantsIsObserved(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	must(t, os.WriteFile(secret, []byte("hunter2\n"), 0o644))
	target := fmt.Sprintf("[sh, -c, 'cat %s; sh solve.sh']", secret)

	dir, p := confined(t, target, "")
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	found := false
	for _, a := range observed(t, r) {
		if a["path"] == secret && a["op"] == "read" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the read of %s is not in observedMounts:\n%s", secret, r.stdout)
	}

	dir, p = confined(t, target, fmt.Sprintf("  read: [%s]\n", secretDir))
	r = warden(t, dir, "run", "--json", p)
	r.want(t, 0)
	if obs := observed(t, r); len(obs) != 0 {
		t.Fatalf("a granted read was listed: %v", obs)
	}
}

func TestConfinedWriteOutsideWorkspaceFailsAndIsObserved(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "planted")
	dir, p := confined(t, fmt.Sprintf("[sh, -c, 'echo x > %s; sh solve.sh']", victim), "")
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	if _, err := os.Stat(victim); err == nil {
		t.Fatal("the confined target wrote outside its workspace")
	}
	found := false
	for _, a := range observed(t, r) {
		found = found || (a["path"] == victim && a["op"] == "write")
	}
	if !found {
		t.Fatalf("the refused write of %s is not listed:\n%s", victim, r.stdout)
	}
}

func TestConfinedTargetCannotSeeWithheldFolder(t *testing.T) {
	// The hidden tests are absent from the workspace and the user's copy of
	// the evaluation folder is covered: the target that looks finds nothing
	// (and its look is listed), while the score still runs them.
	dir, p := confined(t, "[true]", "")
	repo := filepath.Join(dir, "repo")
	b, _ := os.ReadFile(p)
	look := fmt.Sprintf(`run: [sh, -c, 'test ! -e eval && test -z "$(ls -A %s/eval)" && echo hidden-ok; sh solve.sh']`, repo)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "run: [true]", look, 1)), 0o644))
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 3)
	listed := false
	for _, a := range observed(t, r) {
		listed = listed || a["path"] == filepath.Join(repo, "eval")
	}
	if !listed {
		t.Fatalf("the look into the evaluation folder is not listed:\n%s", r.stdout)
	}
	var sum struct{ RunDir string }
	must(t, json.Unmarshal([]byte(r.stdout), &sum))
	out, err := os.ReadFile(filepath.Join(sum.RunDir, "trials", "1", "stdout"))
	if err != nil || !strings.Contains(string(out), "hidden-ok") {
		t.Fatalf("the target saw the withheld folder: %q %v", out, err)
	}
	if rec := readRun(t, sum.RunDir); rec.Score == nil || !rec.Score.Pass {
		t.Fatalf("the hidden tests did not score the run: %+v", rec.Score)
	}
}

func TestPreflightListsWhatEveryLegOpened(t *testing.T) {
	secrets := t.TempDir()
	once, always := filepath.Join(secrets, "once"), filepath.Join(secrets, "always")
	must(t, os.WriteFile(once, []byte("1"), 0o644))
	must(t, os.WriteFile(always, []byte("2"), 0o644))
	// The legs share the workspace: only the first leg finds no marker.
	target := fmt.Sprintf("[sh, -c, 'if [ ! -e leg1 ]; then touch leg1; cat %s; fi; cat %s; sh solve.sh']", once, always)
	dir, p := confined(t, target, "")
	b, _ := os.ReadFile(p)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "name: e2e\n", "name: e2e\ntrials: 2\n", 1)), 0o644))
	r := warden(t, dir, "preflight", p)
	r.want(t, 3, "always", "grants.read: ["+always+"]", "leg 2")
	if strings.Contains(r.stdout, once) {
		t.Fatalf("an access only one leg made was reported:\n%s", r.stdout)
	}
	// A pipeline without confinement has nothing to preflight.
	dir2, p2 := project(t, "[true]", "[sh, eval/check.sh]", "")
	warden(t, dir2, "preflight", p2).want(t, 2, "confinement: false")
}

func TestConfinedMemoryLimitEndsTheTrial(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to hold memory resident")
	}
	// Three processes of ~50 MiB resident each: every one is within the
	// per-process RLIMIT_AS, their sum is over the trial's 100 MiB.
	hog := `import time; b = bytes(range(256)) * (160 << 10); time.sleep(30)`
	target := fmt.Sprintf(`[sh, -c, "python3 -c '%s' & python3 -c '%s' & python3 -c '%s'; wait"]`, hog, hog, hog)
	dir, p := confined(t, target, "")
	b, _ := os.ReadFile(p)
	s := strings.Replace(string(b), "{plugin: bubblewrap}", "{plugin: bubblewrap, with: {memory: 100MiB}}", 1)
	must(t, os.WriteFile(p, []byte(strings.Replace(s, "timeout: 5s", "timeout: 30s", 1)), 0o644))
	start := time.Now()
	r := warden(t, dir, "run", "--json", p)
	r.want(t, 4, "exceeded its memory limit")
	if time.Since(start) > 25*time.Second {
		t.Fatalf("the limit did not end the trial before its timeout (%v)", time.Since(start))
	}
	var sum struct{ RunDir string }
	must(t, json.Unmarshal([]byte(r.stdout), &sum))
	raw, _ := os.ReadFile(filepath.Join(sum.RunDir, "run.json"))
	if !strings.Contains(string(raw), `"limitExceeded": "memory limit: `) {
		t.Fatalf("run.json does not name the limit:\n%s", raw)
	}
}
