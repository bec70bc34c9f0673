package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pipeline"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/supervise"
)

// scoreTimeout bounds the evaluator.
const scoreTimeout = 30 * time.Minute

// score restores the withheld folder into the workspace, runs the
// evaluator the score plugin names, has the plugin parse its output, and
// records score.json.
//
// Departure, until the scorer issue lands: the evaluator runs unconfined,
// with the target's environment, after every target process has ended.
func (r *run) score(ctx context.Context) error {
	sp := r.plugins[pipeline.StageScore]
	done := r.prog.step("score")
	if r.p.Evaluation != "" {
		if err := restoreTree(r.evalDir, r.ws, r.p.Evaluation); err != nil {
			done(err, "")
			return err
		}
	}
	c := pb.NewScoreClient(sp.plugin.Conn())
	pctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	plan, err := c.Plan(pctx, &pb.ScorePlanRequest{Workspace: r.ws, Evaluation: r.p.Evaluation})
	if err != nil {
		err = sp.plugin.CallError(pctx, "Score.Plan", err)
		done(err, "")
		return err
	}
	argv := plan.GetPlan().GetArgv()
	if len(argv) == 0 {
		err := errdefs.Errorf(errdefs.ErrPlugin, "plugin %s planned an empty evaluator command", sp.plugin.Name)
		done(err, "")
		return err
	}
	path, err := lookPath(argv[0], r.ws)
	if err != nil {
		err = errdefs.Errorf(errdefs.ErrInvalid, "%s: the evaluator %s: %v", posString(sp.stage.Pos), argv[0], err)
		done(err, "")
		return err
	}
	staging, err := r.parent.Dir("score")
	if err != nil {
		done(err, "")
		return err
	}
	tmp, err := r.parent.CallDir("score-tmp")
	if err != nil {
		done(err, "")
		return err
	}
	home, _ := os.UserHomeDir()
	env := r.targetEnv(tmp, home)
	for _, e := range plan.GetPlan().GetEnv() {
		if k, v, ok := cut(e); ok {
			env = setEnv(env, k, v)
		}
	}
	dir := plan.GetPlan().GetDir()
	if dir == "" {
		dir = r.ws
	}
	timeout := scoreTimeout
	if ms := plan.GetTimeoutMs(); ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	res, err := supervise.Run(ctx, supervise.Spec{
		Path: path, Args: argv, Env: env, Dir: dir,
		StdoutPath: filepath.Join(staging, "stdout"), StderrPath: filepath.Join(staging, "stderr"),
		Timeout: timeout,
	})
	if err != nil {
		err = errdefs.Errorf(errdefs.ErrPlugin, "unable to run the evaluator: %w", err)
		done(err, "")
		return err
	}
	if res.Stopped {
		done(context.Cause(ctx), "")
		return context.Cause(ctx)
	}
	stdout, _ := os.ReadFile(filepath.Join(staging, "stdout"))
	stderr, _ := os.ReadFile(filepath.Join(staging, "stderr"))
	if err := r.w.Mkdir("score"); err != nil {
		done(err, "")
		return err
	}
	for name, b := range map[string][]byte{"stdout": stdout, "stderr": stderr} {
		if err := r.w.WriteFile("score/"+name, b); err != nil {
			done(err, "")
			return err
		}
	}
	sctx, cancel2 := context.WithTimeout(ctx, planTimeout)
	defer cancel2()
	out, err := c.Parse(sctx, &pb.ScoreParseRequest{Format: plan.GetFormat(), Stdout: stdout, Stderr: stderr, ExitCode: int32(res.ExitCode)})
	if err != nil {
		err = sp.plugin.CallError(sctx, "Score.Parse", err)
		done(err, "")
		return err
	}
	rec := &ScoreRecord{
		Format: plan.GetFormat(), Argv: argv, ExitCode: res.ExitCode,
		Passed: out.GetPassed(), Failed: out.GetFailed(), Skipped: out.GetSkipped(),
		Pass: out.GetPass() && !res.TimedOut, Summary: out.GetSummary(), Details: rawJSON(out.GetDetailsJson()),
	}
	if res.TimedOut {
		rec.Summary = "the evaluator timed out after " + timeout.String()
	}
	r.rec.Score = rec
	if err := r.w.WriteJSON("score.json", rec); err != nil {
		done(err, "")
		return err
	}
	verdict := "pass"
	if !rec.Pass {
		verdict = "FAIL"
	}
	done(nil, verdict+": "+scoreLine(rec))
	return r.writeRecord()
}

func scoreLine(s *ScoreRecord) string {
	if s.Summary != "" {
		return s.Summary
	}
	return fmt.Sprintf("%d passed, %d failed, %d skipped", s.Passed, s.Failed, s.Skipped)
}

// seal writes the final run.json and has the seal plugin seal every file
// of the run directory, then checks the directory holds exactly what the
// core wrote.
func (r *run) seal() error {
	sp, ok := r.plugins[pipeline.StageSeal]
	if !ok {
		return r.writeRecord()
	}
	done := r.prog.step("seal")
	if err := r.writeRecord(); err != nil {
		done(err, "")
		return err
	}
	runJSON, err := r.w.ReadBack("run.json")
	if err != nil {
		done(err, "")
		return err
	}
	files := r.w.Files()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	req := &pb.SealRequest{InvocationId: r.rec.InvocationID, RunJson: runJSON}
	for _, n := range names {
		req.Files = append(req.Files, &pb.FileDigest{Path: n, Sha256: files[n]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	res, err := pb.NewSealClient(sp.plugin.Conn()).Seal(ctx, req)
	if err != nil {
		err = sp.plugin.CallError(ctx, "Seal", err)
		done(err, "")
		return err
	}
	for _, f := range res.GetFiles() {
		if _, exists := files[f.GetPath()]; exists || !safeRel(f.GetPath()) {
			err := errdefs.Errorf(errdefs.ErrPlugin, "plugin %s returned a seal file %q that is not a new plain file name", sp.plugin.Name, f.GetPath())
			done(err, "")
			return err
		}
		if err := r.w.WriteFile(f.GetPath(), f.GetData()); err != nil {
			done(err, "")
			return err
		}
	}
	err = r.w.Verify()
	done(err, "")
	return err
}

func safeRel(p string) bool {
	return p != "" && !filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.Contains("/"+p+"/", "/../")
}

func cut(e string) (string, string, bool) {
	for i := 0; i < len(e); i++ {
		if e[i] == '=' {
			return e[:i], e[i+1:], i > 0
		}
	}
	return "", "", false
}
