package gitcheckout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/sdk"
)

// testGit runs git for the test with a fixed identity and only the
// configuration in the test's HOME, and fails the test on error.
func testGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(gitEnv(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the workspace plugin needs it")
	}
}

func write(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// hostile is a user configuration that would show if the workspace's git
// used it: a global hooks path whose hook leaves a marker, and a filter
// driver whose smudge and clean leave one too.
type hostile struct {
	marker string
}

func setHostileHome(t *testing.T) hostile {
	t.Helper()
	home := t.TempDir()
	marker := filepath.Join(home, "marker")
	hooks := filepath.Join(home, "hooks")
	for _, h := range []string{"pre-commit", "post-commit", "commit-msg", "post-checkout"} {
		write(t, filepath.Join(hooks, h), "#!/bin/sh\necho "+h+" >> "+marker+"\n", 0o755)
	}
	cfg := fmt.Sprintf("[core]\n\thooksPath = %s\n[filter \"boom\"]\n\tsmudge = \"sh -c 'echo smudge >> %s; cat'\"\n\tclean = \"sh -c 'echo clean >> %s; cat'\"\n\trequired = true\n", hooks, marker, marker)
	write(t, filepath.Join(home, ".gitconfig"), cfg, 0o644)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	return hostile{marker: marker}
}

// makeRepo builds a repository with two commits, an evaluation folder, a
// symlink, an executable, a file the .gitignore matches, and attributes
// that `git archive` or a checkout would act on.
func makeRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	testGit(t, repo, "init", "-q", "-b", "trunk")
	// The user's own hooks: the plugin must not run or change them.
	write(t, filepath.Join(repo, ".git", "hooks", "post-checkout"), "#!/bin/sh\nexit 1\n", 0o755)
	write(t, filepath.Join(repo, "README.md"), "first\n", 0o644)
	write(t, filepath.Join(repo, "src", "run.sh"), "#!/bin/sh\necho run\n", 0o755)
	write(t, filepath.Join(repo, "eval", "test.sh"), "#!/bin/sh\necho v1\n", 0o755)
	write(t, filepath.Join(repo, "eval", "data", "want.txt"), "want v1\n", 0o644)
	write(t, filepath.Join(repo, ".gitignore"), "*.log\n", 0o644)
	write(t, filepath.Join(repo, "kept.log"), "tracked although ignored\n", 0o644)
	write(t, filepath.Join(repo, ".gitattributes"), "subst.txt export-subst\nsecret.txt export-ignore\n*.dat filter=boom\n", 0o644)
	write(t, filepath.Join(repo, "subst.txt"), "$Format:%H$\n", 0o644)
	write(t, filepath.Join(repo, "secret.txt"), "not exported by git archive\n", 0o644)
	if err := os.Symlink("README.md", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "add", "-A", "-f")
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "one")

	write(t, filepath.Join(repo, "README.md"), "second\n", 0o644)
	write(t, filepath.Join(repo, "src", "new.go"), "package src\n", 0o644)
	write(t, filepath.Join(repo, "eval", "test.sh"), "#!/bin/sh\necho v2\n", 0o755)
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "add", "-A")
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "two")
	return repo
}

// snapshot records everything of the repository a write could change:
// every path beneath it (work tree and git directory) with its mode, size,
// modification time and content digest (or link target), the refs, and
// `git count-objects -v`. Only read-only git commands run here.
func snapshot(t *testing.T, repo string) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		s[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s["git count-objects -v"] = testGit(t, repo, "count-objects", "-v")
	s["git for-each-ref"] = testGit(t, repo, "for-each-ref")
	return s
}

func diffSnapshots(t *testing.T, before, after map[string]string) {
	t.Helper()
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if before[k] != after[k] {
			t.Errorf("the user's repository changed at %s:\n before %q\n after  %q", k, before[k], after[k])
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestBuild(t *testing.T) {
	needGit(t)
	h := setHostileHome(t)
	repo := makeRepo(t)
	// The dangerous filter is now configured for the user; the plugin must
	// neither run it (smudge) nor let the workspace's `git add` run it (clean).
	write(t, filepath.Join(repo, "x.dat"), "data\n", 0o644)
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "add", "x.dat")
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "three")
	gitDir := testGit(t, repo, "rev-parse", "--absolute-git-dir")

	cases := []struct {
		rev             string
		readme, evalSh  string
		newGo           bool
		files, evalFile int
	}{
		{rev: "HEAD", readme: "second\n", evalSh: "#!/bin/sh\necho v2\n", newGo: true, files: 10},
		{rev: "HEAD~1", readme: "second\n", evalSh: "#!/bin/sh\necho v2\n", newGo: true, files: 9},
		{rev: "HEAD~2", readme: "first\n", evalSh: "#!/bin/sh\necho v1\n", newGo: false, files: 8},
	}
	for _, c := range cases {
		t.Run(c.rev, func(t *testing.T) {
			// The test's own git calls below may run the filter; only
			// what Build does counts.
			if err := os.Remove(h.marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			before := snapshot(t, repo)
			wantID := testGit(t, repo, "rev-parse", c.rev)
			dir, evalDir := t.TempDir(), t.TempDir()
			resp, err := New().Build(context.Background(), &sdk.BuildRequest{
				Repo: repo, Commit: c.rev, Evaluation: "eval/", Dir: dir, EvalDir: evalDir,
			})
			if err != nil {
				t.Fatal(err)
			}
			diffSnapshots(t, before, snapshot(t, repo))
			if _, err := os.Stat(h.marker); err == nil {
				t.Errorf("a hook or filter of the user's configuration ran: %q", readFile(t, h.marker))
			}

			if resp.GetCommit() != wantID || resp.GetWorkspace() != dir {
				t.Errorf("commit %q workspace %q, want %q %q", resp.GetCommit(), resp.GetWorkspace(), wantID, dir)
			}
			wantCover := []string{gitDir, filepath.Join(repo, "eval")}
			if !reflect.DeepEqual(resp.GetCover(), wantCover) {
				t.Errorf("cover %q, want %q", resp.GetCover(), wantCover)
			}
			var f facts
			if err := json.Unmarshal(resp.GetFactsJson(), &f); err != nil {
				t.Fatal(err)
			}
			if f.Commit != wantID || f.Tree != testGit(t, repo, "rev-parse", c.rev+"^{tree}") || f.Files != c.files || f.EvalFiles != 2 || f.Withheld != "eval" {
				t.Errorf("facts %+v", f)
			}

			// The evaluation folder is withheld from the workspace and
			// its contents are in the evaluation directory.
			if _, err := os.Lstat(filepath.Join(dir, "eval")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("eval present in the workspace: %v", err)
			}
			if got := readFile(t, filepath.Join(evalDir, "test.sh")); got != c.evalSh {
				t.Errorf("eval test.sh %q, want %q", got, c.evalSh)
			}
			if got := readFile(t, filepath.Join(evalDir, "data", "want.txt")); got != "want v1\n" {
				t.Errorf("eval data %q", got)
			}
			if m := mode(t, filepath.Join(evalDir, "test.sh")); m != 0o755 {
				t.Errorf("eval test.sh mode %v", m)
			}

			// Contents, modes and symlinks are the commit's, bytes exact.
			if got := readFile(t, filepath.Join(dir, "README.md")); got != c.readme {
				t.Errorf("README %q, want %q", got, c.readme)
			}
			if m := mode(t, filepath.Join(dir, "src", "run.sh")); m != 0o755 {
				t.Errorf("run.sh mode %v, want 0755", m)
			}
			if m := mode(t, filepath.Join(dir, "README.md")); m != 0o644 {
				t.Errorf("README mode %v, want 0644", m)
			}
			if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "README.md" {
				t.Errorf("link: %q %v", target, err)
			}
			if got := readFile(t, filepath.Join(dir, "subst.txt")); got != "$Format:%H$\n" {
				t.Errorf("subst.txt was rewritten: %q", got)
			}
			for _, p := range []string{"secret.txt", "kept.log"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					t.Errorf("%s missing: %v", p, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "src", "new.go")); (err == nil) != c.newGo {
				t.Errorf("src/new.go present=%v, want %v", err == nil, c.newGo)
			}

			// A clean, one-commit repository with nothing of the folder.
			if st := testGit(t, dir, "status", "--porcelain", "--ignored"); st != "" {
				t.Errorf("workspace status not clean:\n%s", st)
			}
			if n := testGit(t, dir, "rev-list", "--all", "--count"); n != "1" {
				t.Errorf("workspace has %s commits", n)
			}
			if all := testGit(t, dir, "rev-list", "--all", "--objects"); strings.Contains(all, "eval") || strings.Contains(all, "want.txt") {
				t.Errorf("workspace objects name the withheld folder:\n%s", all)
			}
			if r := testGit(t, dir, "remote"); r != "" {
				t.Errorf("workspace has remotes %q", r)
			}
			if got := testGit(t, dir, "log", "-1", "--format=%an <%ae> %at %ct"); got != "warden <warden@localhost> "+testGit(t, repo, "log", "-1", "--format=%at %ct", c.rev) {
				t.Errorf("workspace commit: %s", got)
			}
			if ws := testGit(t, dir, "rev-parse", "HEAD^{tree}"); ws != f.WorkspaceTree {
				t.Errorf("workspace tree %s, facts say %s", ws, f.WorkspaceTree)
			}
			if _, err := os.Lstat(filepath.Join(dir, ".git", "hooks")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("workspace has a hooks directory")
			}
			if cfg := readFile(t, filepath.Join(dir, ".git", "config")); strings.Contains(cfg, "hooksPath") || strings.Contains(cfg, "remote") {
				t.Errorf("workspace config:\n%s", cfg)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	repo := makeRepo(t)
	notRepo := t.TempDir()
	full := t.TempDir()
	write(t, filepath.Join(full, "x"), "x", 0o644)

	cases := []struct {
		name string
		req  *sdk.BuildRequest
		want []string // substrings of the message
	}{
		{"bad commit", &sdk.BuildRequest{Repo: repo, Commit: "no-such-branch", Evaluation: "eval"}, []string{"no-such-branch", repo}},
		{"option as commit", &sdk.BuildRequest{Repo: repo, Commit: "--all"}, []string{"--all"}},
		{"blob as commit", &sdk.BuildRequest{Repo: repo, Commit: "HEAD:README.md"}, []string{"HEAD:README.md"}},
		{"not a repository", &sdk.BuildRequest{Repo: notRepo, Commit: "HEAD"}, []string{notRepo, "not a git repository"}},
		{"no repository dir", &sdk.BuildRequest{Repo: filepath.Join(notRepo, "nope"), Commit: "HEAD"}, []string{"nope"}},
		{"missing folder", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: "hidden/"}, []string{"hidden"}},
		{"folder is a file", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: "README.md"}, []string{"README.md", "not a folder"}},
		{"climbing folder", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: "../eval"}, []string{"../eval"}},
		{"absolute folder", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: "/eval"}, []string{"/eval"}},
		{"git folder", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: ".git"}, []string{".git"}},
		{"workspace not empty", &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Dir: full}, []string{full, "not empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.req.Dir == "" {
				c.req.Dir = t.TempDir()
			}
			c.req.EvalDir = t.TempDir()
			before := snapshot(t, repo)
			_, err := New().Build(context.Background(), c.req)
			if !errors.Is(err, sdk.ErrInvalidConfig) {
				t.Fatalf("err %v, want ErrInvalidConfig", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			diffSnapshots(t, before, snapshot(t, repo))
		})
	}
}

// TestBuildRefusesCraftedTrees feeds trees git's porcelain would never
// make: entries named ".git" (which would plant a git directory, and its
// config, in the workspace) and "..".
func TestBuildRefusesCraftedTrees(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	repo := makeRepo(t)
	blob := strings.TrimSpace(testGit(t, repo, "rev-parse", "HEAD:README.md"))
	for _, name := range []string{".git", "..", ".GIT", ".git."} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("git", "-C", repo, "mktree")
			cmd.Env = gitEnv()
			cmd.Stdin = strings.NewReader("100644 blob " + blob + "\t" + name + "\n")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("mktree: %v", err)
			}
			tree := strings.TrimSpace(string(out))
			id := testGit(t, repo, "commit-tree", tree, "-m", "crafted")
			dir := t.TempDir()
			_, err = New().Build(context.Background(), &sdk.BuildRequest{Repo: repo, Commit: id, Dir: dir})
			if !errors.Is(err, sdk.ErrInvalidConfig) || !strings.Contains(err.Error(), "unsafe path") {
				t.Fatalf("err %v, want an unsafe path refusal", err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("something was written: %v", ents)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"a", "a/b", ".gitignore", "x/.github/y", "..a", "a..", "git"} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "/a", "a//b", "a/./b", "../a", "a/..", ".git", "a/.Git/config", ".git ", "\u200c.git", "a\x00b"} {
		if err := checkPath(p); err == nil {
			t.Errorf("checkPath(%q) accepted", p)
		}
	}
}

func TestWriterNeverFollowsSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	w := newWriter(root)
	if err := w.file("sub/x", 0o100644, strings.NewReader("x"), 1); err == nil {
		t.Error("wrote beneath a symlink")
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(root, "f")); err != nil {
		t.Fatal(err)
	}
	if err := w.file("f", 0o100644, strings.NewReader("x"), 1); err == nil {
		t.Error("wrote through a symlink")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside the root: %v", ents)
	}
}

func TestProbe(t *testing.T) {
	needGit(t)
	if r := New().Probe(context.Background(), nil); r.GetHealth() != sdk.Healthy("", nil).GetHealth() || r.GetFacts()["git.version"] == "" {
		t.Errorf("probe with git: %v", r)
	}
	t.Setenv("PATH", t.TempDir())
	r := New().Probe(context.Background(), nil)
	if r.GetHealth() != sdk.Unhealthy("", nil).GetHealth() || r.GetReason() != "git not found on PATH" {
		t.Errorf("probe without git: %v", r)
	}
}

func TestConfigure(t *testing.T) {
	p := New()
	for _, w := range []string{"", "{}", " {} "} {
		if err := p.Configure(context.Background(), &sdk.ConfigureRequest{WithJson: []byte(w)}); err != nil {
			t.Errorf("Configure(%q) = %v", w, err)
		}
	}
	err := p.Configure(context.Background(), &sdk.ConfigureRequest{WithJson: []byte(`{"depth":1}`)})
	if !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("Configure with a key: %v", err)
	}
}

// BenchmarkBuild measures one Build of a small repository (the test
// repository: a dozen files and an evaluation folder).
func BenchmarkBuild(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	b.Setenv("HOME", b.TempDir())
	repo := b.TempDir()
	for _, args := range [][]string{{"init", "-q"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	for i := range 10 {
		p := filepath.Join(repo, "src", fmt.Sprintf("f%d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package src\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "eval"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "eval", "check.sh"), []byte("exit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	p := New()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		dir, evalDir := b.TempDir(), b.TempDir()
		b.StartTimer()
		if _, err := p.Build(context.Background(), &sdk.BuildRequest{Repo: repo, Commit: "HEAD", Evaluation: "eval", Dir: dir, EvalDir: evalDir}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCoverBareAndWorktree checks what Build asks the core to cover for a
// bare repository (its git directory only) and for a linked worktree (its
// own git directory, the shared one with the objects, and its folder).
func TestCoverBareAndWorktree(t *testing.T) {
	needGit(t)
	t.Setenv("HOME", t.TempDir())
	repo := makeRepo(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	testGit(t, repo, "clone", "-q", "--bare", repo, bare)
	wt := filepath.Join(t.TempDir(), "wt")
	testGit(t, repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "--detach", wt, "HEAD~1")

	cases := []struct {
		name, repo string
		cover      []string
		readme     string
	}{
		{"bare", bare, []string{bare}, "second\n"},
		{"worktree", wt, []string{filepath.Join(repo, ".git", "worktrees", "wt"), filepath.Join(repo, ".git"), filepath.Join(wt, "eval")}, "first\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			resp, err := New().Build(context.Background(), &sdk.BuildRequest{Repo: c.repo, Commit: "HEAD", Evaluation: "eval", Dir: dir, EvalDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.GetCover(), c.cover) {
				t.Errorf("cover %q, want %q", resp.GetCover(), c.cover)
			}
			if got := readFile(t, filepath.Join(dir, "README.md")); got != c.readme {
				t.Errorf("README %q", got)
			}
		})
	}
}
