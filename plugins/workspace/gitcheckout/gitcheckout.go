// Package gitcheckout is warden's first workspace backend: a disposable
// checkout of a commit with the evaluation folder withheld.
//
// Build walks one call like this. The repository is asked, read only, for
// its git directory (`rev-parse`). One `cat-file --batch` process then
// resolves the commit to its full id, reads its trees and streams every
// blob raw out of the object store into the workspace directory,
// except the entries under the evaluation folder, which go into the private
// evaluation directory instead (the folder's contents, not the folder:
// EvalDir/x is <evaluation>/x). The workspace then becomes a fresh git
// repository with one commit holding exactly what was written, by a fixed
// author at the source commit's dates, with no remote, no hooks and no
// configuration from the user or the system, so the target's `git status`
// is clean and its history never names the withheld folder.
//
// Nothing is written to the user's repository: rev-parse and cat-file
// read objects and refs only, with GIT_OPTIONAL_LOCKS=0 so not even
// an index refresh happens. Blobs are copied without attribute, filter or
// end-of-line conversion, so no filter driver of the user's configuration
// runs and the bytes are the commit's own. Symlinks stay symlinks, the
// executable bit is kept, and a submodule is an empty directory.
//
// This version gives the target a one-commit history; the private
// repository that carries the full history without the folder (DESIGN.md
// "Stage contracts") replaces it later.
package gitcheckout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/warden-run/warden/core/sdk"
)

// Name is the plugin's name: the binary is warden-plugin-workspace.
const Name = "workspace"

// Author is the author and committer of the workspace's one commit.
const (
	authorName  = "warden"
	authorEmail = "warden@localhost"
)

// withSchema: the plugin takes no `with:` block.
var withSchema = []byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}`)

// Plugin is the workspace plugin. The zero value is not ready; use New.
type Plugin struct {
	mu         sync.Mutex
	privateDir string // guarded by mu: the core's scratch directory from Configure
}

// New returns the workspace plugin.
func New() *Plugin { return &Plugin{} }

var (
	_ sdk.Workspacer = (*Plugin)(nil)
	_ sdk.Configurer = (*Plugin)(nil)
)

// Describe names the plugin; it takes no `with:` block.
func (*Plugin) Describe() sdk.Description {
	return sdk.Description{
		Name:       Name,
		Version:    "0.1.0",
		Summary:    "a disposable git checkout of the commit, the evaluation folder withheld",
		WithSchema: withSchema,
	}
}

// Probe is healthy when git runs.
func (*Plugin) Probe(ctx context.Context, _ *sdk.HostInfo) *sdk.ProbeResponse {
	if _, err := exec.LookPath("git"); err != nil {
		return sdk.Unhealthy("git not found on PATH", nil)
	}
	out, err := git(ctx, gitEnv(), ".", "--version")
	if err != nil {
		return sdk.Unhealthy(fmt.Sprintf("git does not run: %v", err), nil)
	}
	return sdk.Healthy(out, map[string]string{"git.version": strings.TrimPrefix(out, "git version ")})
}

// Configure accepts an empty `with:` block and keeps the private directory
// for the plugin's scratch files.
func (p *Plugin) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	if w := bytes.TrimSpace(req.GetWithJson()); len(w) > 0 {
		var none struct{}
		dec := json.NewDecoder(bytes.NewReader(w))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&none); err != nil {
			return fmt.Errorf("workspace takes no with: block (%s): %w", w, sdk.ErrInvalidConfig)
		}
	}
	p.mu.Lock()
	p.privateDir = req.GetPrivateDir()
	p.mu.Unlock()
	return nil
}

// facts is what Build reports for run.json.
type facts struct {
	Commit        string `json:"commit"`
	Tree          string `json:"tree"`          // the commit's tree
	WorkspaceTree string `json:"workspaceTree"` // the tree the workspace's commit holds
	Files         int    `json:"files"`         // files and symlinks written to the workspace
	EvalFiles     int    `json:"evalFiles,omitempty"`
	Withheld      string `json:"withheld,omitempty"` // the evaluation folder
}

// Build makes the checkout. Preconditions: req.Dir (and req.EvalDir when
// an evaluation folder is named) exist and are empty.
func (p *Plugin) Build(ctx context.Context, req *sdk.BuildRequest) (*sdk.BuildResponse, error) {
	in, err := checkRequest(req)
	if err != nil {
		return nil, err
	}
	env := gitEnv()
	repo, err := inspectRepo(ctx, env, in.repo)
	if err != nil {
		return nil, err
	}
	files, evalFiles, c, err := export(ctx, env, in)
	if err != nil {
		return nil, err
	}

	wsTree, err := p.commitWorkspace(ctx, in.dir, c)
	if err != nil {
		return nil, err
	}

	cover := []string{repo.gitDir}
	if repo.commonDir != repo.gitDir {
		cover = append(cover, repo.commonDir)
	}
	if in.eval != "" && repo.top != "" {
		cover = append(cover, filepath.Join(repo.top, filepath.FromSlash(in.eval)))
	}
	f := facts{Commit: c.id, Tree: c.tree, WorkspaceTree: wsTree, Files: files, EvalFiles: evalFiles, Withheld: in.eval}
	fj, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return &sdk.BuildResponse{Workspace: in.dir, Commit: c.id, Cover: cover, FactsJson: fj}, nil
}

// request is a checked BuildRequest with absolute paths.
type request struct {
	repo, commit, eval, dir, evalDir string
}

func checkRequest(req *sdk.BuildRequest) (request, error) {
	var in request
	if req.GetRepo() == "" {
		return in, fmt.Errorf("no repository given: %w", sdk.ErrInvalidConfig)
	}
	if req.GetDir() == "" {
		return in, fmt.Errorf("no workspace directory given: %w", sdk.ErrInvalidConfig)
	}
	in.commit = req.GetCommit()
	if in.commit == "" {
		in.commit = "HEAD"
	}
	if strings.HasPrefix(in.commit, "-") || strings.ContainsAny(in.commit, "\x00\n") {
		return in, fmt.Errorf("commit %q is not a revision: %w", in.commit, sdk.ErrInvalidConfig)
	}
	eval, err := cleanEval(req.GetEvaluation())
	if err != nil {
		return in, err
	}
	in.eval = eval
	if in.repo, err = filepath.Abs(req.GetRepo()); err != nil {
		return in, err
	}
	if fi, err := os.Stat(in.repo); err != nil || !fi.IsDir() {
		return in, fmt.Errorf("repository %s is not a directory: %w", in.repo, sdk.ErrInvalidConfig)
	}
	if in.dir, err = emptyDir("workspace", req.GetDir()); err != nil {
		return in, err
	}
	if in.eval != "" {
		if req.GetEvalDir() == "" {
			return in, fmt.Errorf("evaluation folder %s named but no directory to put it in: %w", in.eval, sdk.ErrInvalidConfig)
		}
		if in.evalDir, err = emptyDir("evaluation", req.GetEvalDir()); err != nil {
			return in, err
		}
	}
	return in, nil
}

// cleanEval returns the evaluation folder as a clean slash path relative
// to the repository's root ("" for none): "eval/" and "eval" are the same
// folder; an absolute path or one that climbs out is refused.
func cleanEval(e string) (string, error) {
	if e == "" {
		return "", nil
	}
	s := strings.TrimSuffix(filepath.ToSlash(e), "/")
	c := path.Clean(s)
	if strings.HasPrefix(s, "/") || c != s || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("evaluation folder %q must be a clean path inside the repository: %w", e, sdk.ErrInvalidConfig)
	}
	if err := checkPath(c); err != nil {
		return "", fmt.Errorf("evaluation folder %q: %w", e, err)
	}
	return c, nil
}

// emptyDir returns dir made absolute after checking it is an empty directory.
func emptyDir(what, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("%s directory %s: %w: %w", what, abs, err, sdk.ErrInvalidConfig)
	}
	if len(ents) > 0 {
		return "", fmt.Errorf("%s directory %s is not empty: %w", what, abs, sdk.ErrInvalidConfig)
	}
	return abs, nil
}

// repoInfo is where the user's repository keeps what the target must not see.
type repoInfo struct {
	gitDir    string // the repository's git directory (a worktree's own, for a linked worktree)
	commonDir string // the shared git directory: objects and refs
	top       string // the work tree's root; "" for a bare repository
}

func inspectRepo(ctx context.Context, env []string, repo string) (repoInfo, error) {
	var r repoInfo
	args := []string{"rev-parse", "--absolute-git-dir", "--git-common-dir", "--is-bare-repository"}
	out, err := git(ctx, env, repo, append(args, "--show-toplevel")...)
	if err != nil {
		// A bare repository has no work tree to show; ask again without.
		if out, err = git(ctx, env, repo, args...); err != nil {
			return r, fmt.Errorf("%s is not a git repository: %v: %w", repo, err, sdk.ErrInvalidConfig)
		}
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 {
		return r, fmt.Errorf("git rev-parse in %s: unexpected answer %q", repo, out)
	}
	r.gitDir = lines[0]
	r.commonDir = lines[1]
	if !filepath.IsAbs(r.commonDir) {
		r.commonDir = filepath.Join(repo, r.commonDir)
	}
	r.commonDir = filepath.Clean(r.commonDir)
	if lines[2] == "false" && len(lines) == 4 {
		r.top = lines[3]
	}
	return r, nil
}

// export reads the commit from the user's object store and writes its
// tree into the workspace and the evaluation directory.
func export(ctx context.Context, env []string, in request) (files, evalFiles int, c commit, err error) {
	o, err := openObjects(ctx, env, in.repo)
	if err != nil {
		return 0, 0, c, err
	}
	defer o.abort()
	if c, err = o.resolve(in.commit); errors.Is(err, errMissing) {
		return 0, 0, c, fmt.Errorf("commit %q does not resolve to a commit in %s: %w", in.commit, in.repo, sdk.ErrInvalidConfig)
	} else if err != nil {
		return 0, 0, c, fmt.Errorf("unable to read commit %q in %s: %w", in.commit, in.repo, err)
	}
	entries, err := o.walk(c.tree, "")
	if err != nil {
		return 0, 0, c, fmt.Errorf("unable to read the tree of commit %s in %s: %w", c.id, in.repo, err)
	}
	kept, withheld, err := split(entries, in.eval)
	if err != nil {
		return 0, 0, c, fmt.Errorf("commit %s (%s) in %s: %w", in.commit, c.id, in.repo, err)
	}
	if files, err = materialize(o, in.dir, kept, ""); err != nil {
		return 0, 0, c, fmt.Errorf("unable to export commit %s of %s into %s: %w", c.id, in.repo, in.dir, err)
	}
	if in.eval != "" {
		if evalFiles, err = materialize(o, in.evalDir, withheld, in.eval); err != nil {
			return 0, 0, c, fmt.Errorf("unable to export %s of commit %s into %s: %w", in.eval, c.id, in.evalDir, err)
		}
	}
	if err := o.close(); err != nil {
		return 0, 0, c, fmt.Errorf("reading commit %s of %s: %w", c.id, in.repo, err)
	}
	return files, evalFiles, c, nil
}

// split parts the entries into those the workspace gets and those beneath
// the evaluation folder. Naming a folder the commit does not hold is an
// error: a pipeline whose hidden tests are missing must not run.
func split(entries []entry, eval string) (kept, withheld []entry, err error) {
	if eval == "" {
		return entries, nil, nil
	}
	for _, e := range entries {
		switch {
		case e.path == eval:
			return nil, nil, fmt.Errorf("evaluation folder %s is not a folder (a file, symlink or submodule): %w", eval, sdk.ErrInvalidConfig)
		case strings.HasPrefix(e.path, eval+"/"):
			withheld = append(withheld, e)
		default:
			kept = append(kept, e)
		}
	}
	if len(withheld) == 0 {
		return nil, nil, fmt.Errorf("no evaluation folder %s: %w", eval, sdk.ErrInvalidConfig)
	}
	return kept, withheld, nil
}

// commitWorkspace makes dir a fresh repository whose one commit holds what
// dir holds, and returns that commit's tree. Git runs there with no system
// or user configuration (an empty HOME), no templates (so no hooks), no
// automatic maintenance (nothing is left running), and a fixed identity.
func (p *Plugin) commitWorkspace(ctx context.Context, dir string, c commit) (string, error) {
	p.mu.Lock()
	scratch := p.privateDir
	p.mu.Unlock()
	home, err := os.MkdirTemp(scratch, "warden-workspace-home-")
	if err != nil {
		return "", fmt.Errorf("unable to make an empty home for git: %w", err)
	}
	defer os.RemoveAll(home)

	env := gitEnv(
		"GIT_CONFIG_NOSYSTEM=1",
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_AUTHOR_NAME="+authorName, "GIT_AUTHOR_EMAIL="+authorEmail, "GIT_AUTHOR_DATE=@"+c.authorDate,
		"GIT_COMMITTER_NAME="+authorName, "GIT_COMMITTER_EMAIL="+authorEmail, "GIT_COMMITTER_DATE=@"+c.committerDate,
	)
	quiet := []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.fsmonitor=false"}
	steps := [][]string{
		{"-c", "init.defaultBranch=main", "init", "-q", "--template=", "."},
		append(quiet, "add", "-A", "-f", "."),
		append(quiet, "commit", "-q", "--no-verify", "--no-gpg-sign", "--allow-empty", "-m", "warden workspace at "+c.id),
	}
	for _, args := range steps {
		if _, err := git(ctx, env, dir, args...); err != nil {
			return "", fmt.Errorf("unable to make the workspace %s a repository: %w", dir, err)
		}
	}
	tree, err := git(ctx, env, dir, "rev-parse", "HEAD^{tree}")
	if err != nil {
		return "", fmt.Errorf("unable to read the workspace commit in %s: %w", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "hooks")); !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("workspace %s: git made a hooks directory from a template", dir)
	}
	return tree, nil
}
