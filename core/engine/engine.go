// Package engine runs a pipeline: it resolves and probes the stage
// plugins, makes the private parent and the run directory, builds the
// workspace, runs every trial confined and audited, scores the workspace
// and seals the record (DESIGN.md "Data flow"). The engine owns every
// process and every byte of the run directory; plugins only plan and judge.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/pipeline"
	"github.com/warden-run/warden/core/pluginhost"
	"github.com/warden-run/warden/core/privroot"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/rundir"
	"github.com/warden-run/warden/core/supervise"
)

// DefaultPolicy is the host policy file read when --policy is not given.
const DefaultPolicy = "/etc/warden/policy.yaml"

// Options configure one run.
type Options struct {
	Pipeline   string   // the pipeline file
	Policy     string   // a host policy file; "" means DefaultPolicy when it exists
	RunsDir    string   // default "runs" in the working directory
	SearchPath []string // plugin search path; nil means pluginhost.SearchPath()
	Stream     bool     // echo the target's output to Stdout/Stderr
	Stdout     io.Writer
	Stderr     io.Writer // progress lines
	LogLevel   string    // WARDEN_LOG for plugins and the core's logger
	Version    string    // warden's version, for the records
	// Preflight runs the probes, the workspace and the target's legs (one
	// per trial), confined and audited, and reports the accesses every leg
	// made; it neither scores nor keeps the run's verdict beyond that.
	Preflight bool
	// PrivateBase overrides /tmp as the private root's base (tests only).
	PrivateBase string
}

// Summary is what `warden run --json` prints.
type Summary struct {
	InvocationID   string       `json:"invocationId"`
	RunDir         string       `json:"runDir"`
	Status         string       `json:"status"`
	ExitCode       int          `json:"exitCode"`
	Error          string       `json:"error,omitempty"`
	ObservedMounts []Access     `json:"observedMounts"`
	Score          *ScoreRecord `json:"score"`
}

// run is the state of one invocation.
type run struct {
	opts    Options
	p       *pipeline.Pipeline
	policy  *grant.Layer
	prog    *progress
	log     hclog.Logger
	root    *privroot.Root
	parent  *privroot.Parent
	w       *rundir.Writer
	rec     Record
	plugins map[pipeline.StageKind]*stagePlugin
	ws      string // the workspace
	wsDir   string // the temp directory holding it
	evalDir string // the withheld folder's private copy
	wsFacts json.RawMessage
	// cover lists the host paths every target is denied: the private root,
	// the runs directory, then what the workspace plugin names. The runs
	// directory is added by createRunDir while the workspace builds, so
	// both appends hold coverMu.
	coverMu sync.Mutex
	cover   []string
}

// Run runs the pipeline and returns the summary. Its error carries the
// class of the highest-priority failure (errdefs.Code gives the exit code);
// the summary's ExitCode is the same code.
func Run(ctx context.Context, o Options) (Summary, error) {
	r := &run{opts: o, prog: newProgress(o.Stderr), plugins: map[pipeline.StageKind]*stagePlugin{}}
	r.log = hclog.New(&hclog.LoggerOptions{Name: "warden", Level: hclog.LevelFromString(o.LogLevel), Output: o.Stderr})
	if r.log.GetLevel() == hclog.NoLevel {
		r.log.SetLevel(hclog.Warn)
	}
	err := r.execute(ctx)
	var intr *supervise.Interrupted
	if cause := context.Cause(ctx); errors.As(cause, &intr) {
		// Departure: DESIGN.md has no exit code for an interrupted run; it
		// did not complete, which is the structural failure of exit 4.
		err = errdefs.Errorf(errdefs.ErrTimeout, "interrupted by %v: the run did not complete: %w", intr.Signal, intr)
	} else if err == nil && cause != nil {
		err = errdefs.Errorf(errdefs.ErrTimeout, "the run was cancelled: %w", cause)
	}
	return r.finish(err)
}

func (r *run) execute(ctx context.Context) (err error) {
	o := r.opts
	done := r.prog.step("load %s", o.Pipeline)
	p, err := pipeline.Load(o.Pipeline)
	if err == nil {
		r.p = p
		err = r.loadPolicy()
	}
	done(err, "")
	if err != nil {
		return err
	}
	searchPath := o.SearchPath
	if searchPath == nil {
		searchPath = pluginhost.SearchPath()
	}
	rs, err := Resolve(p, searchPath)
	if err != nil {
		return err
	}

	// The private parent exists before any plugin starts: plugin sockets
	// and scratch directories live in it.
	if o.PrivateBase != "" {
		r.root, err = privroot.OpenIn(o.PrivateBase)
	} else {
		r.root, err = privroot.Open()
	}
	if err != nil {
		return err
	}
	reclaimed, err := r.root.Reclaim()
	for _, rc := range reclaimed {
		r.prog.note("reclaimed the private parent of a dead run: %s", rc)
	}
	if err != nil {
		r.prog.note("%v", err)
	}
	r.rec.Reclaimed = reclaimed
	if r.parent, err = r.root.NewParent(); err != nil {
		return err
	}
	sockets, err := r.parent.Dir(privroot.SocketsDir)
	if err != nil {
		return err
	}

	id := rundir.NewInvocationID()
	done = r.prog.step("start plugins")
	sps, err := startPlugins(ctx, rs, sockets, r.log, o.LogLevel)
	if err != nil {
		done(err, "")
		return err
	}
	for _, sp := range sps {
		r.plugins[sp.kind] = sp
	}
	// The workspace is built as soon as its plugin is configured, while the
	// other plugins still probe; a probe that fails cancels the build.
	bctx, cancelBuild := context.WithCancel(ctx)
	defer cancelBuild()
	built := make(chan error, 1)
	building := false // set by ready, read after probeAndConfigure has waited for it
	err = probeAndConfigure(ctx, r.log, sps, hostInfo(r.root.Path()), id, r.parent.Dir, func(sp *stagePlugin) {
		if sp.kind == pipeline.StageWorkspace {
			building = true
			go func() { built <- r.buildWorkspace(bctx) }()
		}
	})
	done(err, pluginNames(sps))
	if err != nil {
		cancelBuild()
		if building {
			<-built
		}
		return err
	}
	if err := r.createRunDir(id); err != nil {
		cancelBuild()
		<-built
		return err
	}
	if err := <-built; err != nil {
		return err
	}
	r.rec.Workspace = r.wsFacts
	if err := r.writeRecord(); err != nil {
		return err
	}
	for i := 1; i <= p.Trials; i++ {
		if err := r.trial(ctx, i); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	if o.Preflight {
		r.rec.ObservedMounts = everyLeg(r.rec.Trials)
		return r.writeRecord()
	}
	return r.score(ctx)
}

// everyLeg is what a preflight reports: the accesses every one of its legs
// made (spec 001: "preflight exits 3 for a path every one of its legs
// opened"), so an access that depends on timing does not send the operator
// after a grant the target does not need. Legs that launched nothing do not
// count.
func everyLeg(trials []TrialRecord) []Access {
	type key struct{ path, op string }
	count := map[key]int{}
	first := map[key]Access{}
	legs := 0
	var order []key
	for _, t := range trials {
		if !t.Launched && t.Refused == "" {
			continue
		}
		legs++
		seen := map[key]bool{}
		for _, a := range t.ObservedMounts {
			k := key{a.Path, a.Op}
			if seen[k] {
				continue
			}
			seen[k] = true
			if count[k] == 0 {
				first[k] = a
				order = append(order, k)
			}
			count[k]++
		}
	}
	out := []Access{}
	for _, k := range order {
		if count[k] == legs {
			out = append(out, first[k])
		}
	}
	return out
}

// writeSARIF writes the observed accesses as audit.sarif, every result
// pointing at the pipeline's grants.
func (r *run) writeSARIF() error {
	pos := r.p.Grants.Pos
	return r.w.WriteJSON("audit.sarif", auditSARIF(&r.rec, r.opts.Version, sarifURI(r.p.Path, r.p.Repo), pos.Line, pos.Col))
}

func (r *run) loadPolicy() error {
	path := r.opts.Policy
	if path == "" {
		if _, err := os.Stat(DefaultPolicy); err != nil {
			return nil
		}
		path = DefaultPolicy
	}
	l, err := pipeline.LoadPolicy(path)
	if err != nil {
		return err
	}
	r.policy = &l
	digest, _ := pluginhost.FileSHA256(path)
	r.rec.Policy = &PipelineRef{Path: path, Digest: digest}
	return nil
}

func pluginNames(sps []*stagePlugin) string {
	var s []string
	for _, sp := range sps {
		if sp != nil {
			s = append(s, sp.plugin.Name+" "+sp.plugin.Desc.GetVersion())
		}
	}
	return strings.Join(s, ", ")
}

func (r *run) createRunDir(id string) error {
	runs := r.opts.RunsDir
	if runs == "" {
		runs = "runs"
	}
	runs, err := filepath.Abs(runs)
	if err != nil {
		return err
	}
	if r.w, err = rundir.Create(runs, id); err != nil {
		return err
	}
	host, _ := os.Hostname()
	kind := "run"
	if r.opts.Preflight {
		kind = "preflight"
	}
	r.rec = Record{
		Schema: RunSchema, Kind: kind, InvocationID: id, Status: "running", StartedAt: time.Now().UTC(),
		Pipeline:    PipelineRef{Path: r.p.Path, Digest: r.p.Digest, Name: r.p.Name},
		Policy:      r.rec.Policy,
		Host:        HostRecord{OS: runtime.GOOS, Arch: runtime.GOARCH, Hostname: host, UID: os.Getuid(), Kernel: kernelRelease()},
		Confinement: r.p.Confinement,
		Reclaimed:   r.rec.Reclaimed,
		Trials:      []TrialRecord{}, ObservedMounts: []Access{}, ObservedMountsChannel: []ChannelEntry{},
	}
	for _, k := range pipeline.StageKinds {
		if sp, ok := r.plugins[k]; ok {
			r.rec.Plugins = append(r.rec.Plugins, pluginRecords([]*stagePlugin{sp})...)
		}
	}
	r.coverMu.Lock()
	r.cover = append(r.cover, r.root.Path(), runs)
	r.coverMu.Unlock()
	return r.writeRecord()
}

// writeRecord replaces run.json with the record as it stands.
func (r *run) writeRecord() error {
	r.rec.Files = r.w.Files()
	delete(r.rec.Files, "run.json")
	return r.w.ReplaceJSON("run.json", r.rec)
}

func (r *run) buildWorkspace(ctx context.Context) error {
	sp := r.plugins[pipeline.StageWorkspace]
	done := r.prog.step("workspace: check out %s at %s", r.p.Repo, r.p.Commit)
	var err error
	r.wsDir, err = os.MkdirTemp("", privroot.OwnedPrefix)
	if err == nil {
		// Listed in the parent, so a run that reclaims a killed one removes it.
		err = r.parent.Own(r.wsDir)
	}
	if err == nil {
		r.evalDir, err = r.parent.Dir("eval")
	}
	if err != nil {
		done(err, "")
		return err
	}
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	res, err := pb.NewWorkspaceClient(sp.plugin.Conn()).Build(bctx, &pb.BuildRequest{
		Repo: r.p.Repo, Commit: r.p.Commit, Evaluation: r.p.Evaluation, Dir: r.wsDir, EvalDir: r.evalDir,
	})
	if err != nil {
		err = sp.plugin.CallError(bctx, "Build", err)
		done(err, "")
		return err
	}
	r.ws = res.GetWorkspace()
	if !within(r.ws, r.wsDir) {
		err = errdefs.Errorf(errdefs.ErrPlugin, "plugin %s put the workspace at %s, outside %s", sp.plugin.Name, r.ws, r.wsDir)
		done(err, "")
		return err
	}
	r.coverMu.Lock()
	r.cover = append(r.cover, res.GetCover()...)
	r.coverMu.Unlock()
	r.wsFacts = rawJSON(res.GetFactsJson())
	done(nil, "commit "+short(res.GetCommit()))
	return nil
}

// finish ends the run: it records the outcome in run.json, seals a
// completed run, removes the workspace and the private parent, and ends the
// plugins.
func (r *run) finish(err error) (Summary, error) {
	code := errdefs.Code(err)
	if err == nil {
		code = r.outcomeCode()
		if code != errdefs.ExitPassed {
			err = r.outcomeErr(code)
		}
	}
	status := "completed"
	if r.incomplete(err) {
		status = "failed"
	}
	var sum Summary
	if r.w != nil {
		now := time.Now().UTC()
		r.rec.Status, r.rec.ExitCode, r.rec.EndedAt = status, code, &now
		if err != nil {
			r.rec.Error = err.Error()
		}
		if len(r.rec.Trials) > 0 {
			if serr := r.writeSARIF(); serr != nil {
				err = errors.Join(err, serr)
				code = errdefs.Code(err)
				r.rec.Status, r.rec.ExitCode, r.rec.Error = "failed", code, err.Error()
			}
		}
		if r.rec.Status == "completed" {
			if serr := r.seal(); serr != nil {
				err = errors.Join(err, serr)
				code = errdefs.Code(err)
				r.rec.Status, r.rec.ExitCode, r.rec.Error = "failed", code, err.Error()
			}
		}
		if r.rec.Status != "completed" {
			if werr := r.writeRecord(); werr != nil {
				err = errors.Join(err, werr)
				code = errdefs.Code(err)
			}
		}
		sum = Summary{InvocationID: r.rec.InvocationID, RunDir: r.w.Path(), Status: r.rec.Status,
			ObservedMounts: r.rec.ObservedMounts, Score: r.rec.Score}
		r.w.Close()
	}
	killAll(mapValues(r.plugins))
	if r.wsDir != "" {
		if rerr := privroot.RemoveTree(r.wsDir); rerr != nil {
			r.prog.note("unable to remove the workspace %s: %v", r.wsDir, rerr)
		}
	}
	if r.parent != nil {
		if rerr := r.parent.Remove(); rerr != nil {
			r.prog.note("unable to remove the private parent %s: %v", r.parent.Path(), rerr)
		}
	}
	if r.root != nil {
		r.root.Close()
	}
	sum.ExitCode = code
	if sum.ObservedMounts == nil {
		sum.ObservedMounts = []Access{}
	}
	if err != nil {
		sum.Error = err.Error()
	}
	return sum, err
}

// incomplete reports whether err means the run did not complete: anything
// but the verdicts a completed run can carry (observed accesses, a failed
// score, a target program that is missing or refused).
func (r *run) incomplete(err error) bool {
	if err == nil {
		return false
	}
	switch errdefs.Code(err) {
	case errdefs.ExitAccess, errdefs.ExitEvalFailed, errdefs.ExitNotFound, errdefs.ExitNotExecutable, errdefs.ExitTimeout:
		var intr *supervise.Interrupted
		return errors.As(err, &intr)
	}
	return true
}

// outcomeCode is the exit code of a run that completed: the worst of its
// trials and its score.
func (r *run) outcomeCode() int {
	var codes []int
	if len(r.rec.ObservedMounts) > 0 {
		codes = append(codes, errdefs.ExitAccess)
	}
	for _, t := range r.rec.Trials {
		switch {
		case t.TimedOut, t.LimitExceeded != "":
			codes = append(codes, errdefs.ExitTimeout)
		case !t.Launched && t.ExitCode >= 126:
			codes = append(codes, t.ExitCode)
		}
	}
	if r.rec.Score != nil && !r.rec.Score.Pass {
		codes = append(codes, errdefs.ExitEvalFailed)
	}
	return errdefs.Worst(codes...)
}

func (r *run) outcomeErr(code int) error {
	switch code {
	case errdefs.ExitAccess:
		return errdefs.Errorf(errdefs.ErrAccessObserved, "%d access(es) outside the grants observed (see observedMounts in %s)",
			len(r.rec.ObservedMounts), filepath.Join(r.w.Path(), "run.json"))
	case errdefs.ExitTimeout:
		for _, t := range r.rec.Trials {
			if t.LimitExceeded != "" {
				return errdefs.Errorf(errdefs.ErrTimeout, "trial %d exceeded its %s", t.Index, t.LimitExceeded)
			}
		}
		return errdefs.Errorf(errdefs.ErrTimeout, "the target timed out after %s", r.p.Target.Timeout)
	case errdefs.ExitNotFound, errdefs.ExitNotExecutable:
		for _, t := range r.rec.Trials {
			if t.Refused != "" {
				return errdefs.Errorf(map[int]error{126: errdefs.ErrNotExecutable, 127: errdefs.ErrNotFound}[code], "%s", t.Refused)
			}
		}
	case errdefs.ExitEvalFailed:
		return errdefs.Errorf(errdefs.ErrEvalFailed, "the evaluation failed: %s", r.rec.Score.Summary)
	}
	return errdefs.Errorf(errdefs.ErrPlugin, "run ended with exit %d", code)
}

func mapValues(m map[pipeline.StageKind]*stagePlugin) []*stagePlugin {
	var out []*stagePlugin
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
