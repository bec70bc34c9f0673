package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/grantwire"
	"github.com/warden-run/warden/core/pipeline"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/supervise"
)

// traceChunk is the size of the pieces a trace file travels in to Judge.
const traceChunk = 1 << 20

// trial runs the target once: guard, confine plan, audit wrap, launch,
// judge, release. A trial whose head is missing or refused is recorded
// without a launch; an observer that failed is no evidence and stops the
// run with 12.
func (r *run) trial(ctx context.Context, i int) error {
	t := TrialRecord{Index: i, ObservedMounts: []Access{}}
	defer func() { r.rec.Trials = append(r.rec.Trials, t) }()
	what := "trial"
	if r.opts.Preflight {
		what = "leg"
	}
	done := r.prog.step("%s %d: %s", what, i, strings.Join(r.p.Target.Run, " "))

	tmp, err := r.parent.CallDir("target-tmp")
	if err != nil {
		done(err, "")
		return err
	}
	defer r.parent.RemoveDir(tmp)
	home, _ := os.UserHomeDir()
	table, err := r.compile(tmp, home)
	if err != nil {
		done(err, "")
		return err
	}
	env := r.targetEnv(tmp, home)
	head := grant.ResolveHead(r.p.Target.Run[0], r.ws, envValue(env, "PATH"))
	if herr := head.Err(); herr != nil {
		t.ExitCode, t.Refused = errdefs.Code(herr), herr.Error()
		done(herr, "not launched")
		return nil
	}
	adm, err := table.CheckExec(head, r.p.Target.Run)
	if err != nil {
		var denied *grant.DeniedError
		if !errors.As(err, &denied) {
			done(err, "")
			return err
		}
		t.Refused = err.Error()
		t.ExitCode = errdefs.ExitAccess
		a := Access{Path: denied.Decision.Subject, Op: "exec", Syscall: "guard", Trial: i,
			Rule: denied.Decision.Rule.String(), Reason: denied.Decision.Reason, Spelled: head.Shown}
		t.ObservedMounts = append(t.ObservedMounts, a)
		r.rec.ObservedMounts = append(r.rec.ObservedMounts, a)
		done(err, "refused by the guard")
		return r.writeRecord()
	}

	spec := &pb.LaunchSpec{
		Argv: adm.Args(), Path: adm.Path(), Env: env, Dir: r.ws, Workspace: r.ws,
		CallDirs:    []*pb.CallDir{{Name: filepath.Base(tmp), HostPath: tmp, SandboxPath: tmp}},
		PrivateRoot: r.root.Path(), PrivateParent: r.parent.Path(), Home: home,
		Cover: r.cover, Grants: r.layersProto(), Trial: int32(i),
		Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()),
	}
	plan := &pb.LaunchPlan{Argv: append([]string{adm.Path()}, adm.Args()[1:]...), Env: env, Dir: r.ws}
	var traceFiles []string
	var memoryLimit int64
	if r.p.Confinement {
		if plan, err = r.confine(ctx, spec); err != nil {
			done(err, "")
			return err
		}
		// Taken from the confine plan itself: a wrapper cannot drop it.
		memoryLimit = plan.GetMemoryLimitBytes()
		t.Confinement = rawJSON(plan.GetFactsJson())
		defer func() { t.Released = r.release(plan.GetCleanup()) }()
		if plan, traceFiles, err = r.wrap(ctx, spec, plan, i); err != nil {
			done(err, "")
			return err
		}
	}

	res, err := r.launch(ctx, plan, adm, i, &t, memoryLimit)
	if err != nil {
		done(err, "")
		return err
	}
	t.Launched = true
	t.ExitCode, t.DurationMs, t.TimedOut, t.Stopped = res.ExitCode, res.Duration.Milliseconds(), res.TimedOut, res.Stopped
	t.LimitExceeded = res.LimitExceeded
	if res.Signal != 0 {
		t.Signal = res.Signal.String()
	}
	if r.p.Confinement {
		f, err := r.judge(ctx, spec, res, traceFiles)
		if err != nil {
			done(err, "")
			return err
		}
		t.Audit = rawJSON(f.GetFactsJson())
		for _, a := range f.GetAccesses() {
			acc := Access{Path: a.GetPath(), Op: a.GetOp(), Syscall: a.GetSyscall(), PID: a.GetPid(), Trial: i,
				Result: a.GetResult(), Rule: a.GetRule(), Reason: a.GetReason(), Spelled: a.GetSpelled()}
			t.ObservedMounts = append(t.ObservedMounts, acc)
			r.rec.ObservedMounts = append(r.rec.ObservedMounts, acc)
		}
		r.rec.ObservedMountsChannel = append(r.rec.ObservedMountsChannel, ChannelEntry{
			ConditionArm: "target", TrialIndex: i, Completeness: completeness(f.GetCompleteness()),
		})
	}
	note := res.String()
	if n := len(t.ObservedMounts); n > 0 {
		note += fmt.Sprintf(", %d access(es) outside the grants", n)
	}
	done(res.Err(), note)
	return r.writeRecord()
}

func completeness(c pb.Completeness) string {
	if c == pb.Completeness_COMPLETENESS_LOSSY {
		return "lossy"
	}
	return "complete"
}

// compile builds the one table every verdict of this trial comes from.
func (r *run) compile(tmp, home string) (grant.Table, error) {
	places := grant.Places{Workspace: r.ws, CallDirs: []string{tmp}, Hidden: r.cover}
	if r.p.Confinement {
		// Under confinement the home the target sees is a private, empty one.
		places.PrivateHome = home
	}
	layers := []grant.Layer{r.p.Grants.Layer("pipeline")}
	if r.policy != nil {
		layers = append(layers, *r.policy)
	}
	return grant.Compile(places, grant.Tools{}, layers...)
}

func (r *run) layersProto() []*pb.GrantLayer {
	layers := []grant.Layer{r.p.Grants.Layer("pipeline")}
	if r.policy != nil {
		layers = append(layers, *r.policy)
	}
	out := make([]*pb.GrantLayer, 0, len(layers))
	for _, l := range layers {
		out = append(out, grantwire.ToProto(l, r.p.Grants.Egress))
	}
	return out
}

// targetEnv is the target's whole environment: a few variables of the
// host's that programs need, the call directory as TMPDIR/TMP/TEMP, then
// the pipeline's target.env. Nothing else of the operator's environment
// (tokens, agent sockets) reaches the target.
func (r *run) targetEnv(tmp, home string) []string {
	env := []string{}
	for _, k := range []string{"PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if envValue(env, "PATH") == "" {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
	for k, v := range r.p.Target.Env {
		env = setEnv(env, k, v)
	}
	return env
}

func envValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

func setEnv(env []string, k, v string) []string {
	out := env[:0]
	for _, e := range env {
		if !strings.HasPrefix(e, k+"=") {
			out = append(out, e)
		}
	}
	return append(out, k+"="+v)
}

func (r *run) confine(ctx context.Context, spec *pb.LaunchSpec) (*pb.LaunchPlan, error) {
	sp := r.plugins[pipeline.StageConfine]
	cctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	res, err := pb.NewConfineClient(sp.plugin.Conn()).Plan(cctx, &pb.PlanRequest{Spec: spec})
	if err != nil {
		return nil, sp.plugin.CallError(cctx, "Plan", err)
	}
	if len(res.GetPlan().GetArgv()) == 0 {
		return nil, errdefs.Errorf(errdefs.ErrPlugin, "plugin %s returned an empty launch plan", sp.plugin.Name)
	}
	return res.GetPlan(), nil
}

func (r *run) release(cleanup []string) []string {
	if len(cleanup) == 0 {
		return nil
	}
	sp := r.plugins[pipeline.StageConfine]
	cctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	res, err := pb.NewConfineClient(sp.plugin.Conn()).Release(cctx, &pb.ReleaseRequest{Cleanup: cleanup})
	if err != nil {
		r.prog.note("%v", sp.plugin.CallError(cctx, "Release", err))
		return nil
	}
	return res.GetRemoved()
}

func (r *run) wrap(ctx context.Context, spec *pb.LaunchSpec, plan *pb.LaunchPlan, i int) (*pb.LaunchPlan, []string, error) {
	sp := r.plugins[pipeline.StageAudit]
	traceDir, err := r.parent.Dir(fmt.Sprintf("trace-%d", i))
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	res, err := pb.NewAuditClient(sp.plugin.Conn()).Wrap(cctx, &pb.WrapRequest{Spec: spec, Plan: plan, TraceDir: traceDir})
	if err != nil {
		return nil, nil, sp.plugin.CallError(cctx, "Wrap", err)
	}
	for _, f := range res.GetTraceFiles() {
		if !within(f, traceDir) {
			return nil, nil, errdefs.Errorf(errdefs.ErrPlugin, "plugin %s named a trace file %s outside its trace directory %s", sp.plugin.Name, f, traceDir)
		}
	}
	if len(res.GetPlan().GetArgv()) == 0 {
		return nil, nil, errdefs.Errorf(errdefs.ErrPlugin, "plugin %s returned an empty launch plan", sp.plugin.Name)
	}
	return res.GetPlan(), res.GetTraceFiles(), nil
}

// launch runs the plan under supervision and copies its output into the
// run directory. Only an Admitted program reaches here: unconfined, the
// plan is exactly its real path and argv.
func (r *run) launch(ctx context.Context, plan *pb.LaunchPlan, adm grant.Admitted, i int, t *TrialRecord, memoryLimit int64) (supervise.Result, error) {
	argv := plan.GetArgv()
	path := argv[0]
	args := argv
	if !r.p.Confinement {
		path, args = adm.Path(), adm.Args()
	} else if !filepath.IsAbs(path) {
		lp, err := exec.LookPath(path)
		if err != nil {
			return supervise.Result{}, errdefs.Errorf(errdefs.ErrHostUnsupported, "the confined launch needs %s: %v", path, err)
		}
		path = lp
	}
	staging, err := r.parent.Dir(fmt.Sprintf("trial-%d", i))
	if err != nil {
		return supervise.Result{}, err
	}
	spec := supervise.Spec{
		Path: path, Args: args, Env: plan.GetEnv(), Dir: plan.GetDir(),
		StdoutPath: filepath.Join(staging, "stdout"), StderrPath: filepath.Join(staging, "stderr"),
		Timeout: r.p.Target.Timeout, MemoryLimit: memoryLimit,
	}
	if r.opts.Stream {
		spec.StdoutEcho, spec.StderrEcho = r.opts.Stdout, r.opts.Stderr
	}
	res, err := supervise.Run(ctx, spec)
	if err != nil {
		return res, errdefs.Errorf(errdefs.ErrPlugin, "unable to launch the target: %w", err)
	}
	dir := fmt.Sprintf("trials/%d", i)
	if err := r.w.Mkdir(dir); err != nil && !errors.Is(err, os.ErrExist) {
		return res, err
	}
	for _, s := range []struct {
		name string
		out  **OutputRecord
	}{{"stdout", &t.Stdout}, {"stderr", &t.Stderr}} {
		f, err := os.Open(filepath.Join(staging, s.name))
		if err != nil {
			return res, err
		}
		c, err := r.w.CopyFrom(dir+"/"+s.name, f, 16<<20)
		f.Close()
		if err != nil {
			return res, err
		}
		total := res.StdoutBytes
		trunc := res.StdoutTruncated
		if s.name == "stderr" {
			total, trunc = res.StderrBytes, res.StderrTruncated
		}
		*s.out = &OutputRecord{Path: dir + "/" + s.name, Bytes: total, Truncated: trunc || c.Truncated}
	}
	return res, nil
}

// judge streams the trace files to the audit plugin and returns its
// findings. An observer that failed, or a channel that is not evidence,
// stops the run with 12 and leaves the trial without an audit record.
func (r *run) judge(ctx context.Context, spec *pb.LaunchSpec, res supervise.Result, files []string) (*pb.Findings, error) {
	sp := r.plugins[pipeline.StageAudit]
	jctx, cancel := context.WithTimeout(ctx, judgeTimeout)
	defer cancel()
	stream, err := pb.NewAuditClient(sp.plugin.Conn()).Judge(jctx)
	if err != nil {
		return nil, sp.plugin.CallError(jctx, "Judge", err)
	}
	exit := &pb.LaunchExit{ExitCode: int32(res.ExitCode), TimedOut: res.TimedOut, Stopped: res.Stopped}
	if res.Signal != 0 {
		exit.Signal = res.Signal.String()
	}
	if err := stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Header{Header: &pb.JudgeHeader{Spec: spec, Exit: exit, TraceFiles: files}}}); err != nil {
		return nil, sp.plugin.CallError(jctx, "Judge", err)
	}
	for _, name := range files {
		if err := sendFile(stream, name); err != nil {
			return nil, err
		}
	}
	f, err := stream.CloseAndRecv()
	if err != nil {
		return nil, sp.plugin.CallError(jctx, "Judge", err)
	}
	if f.GetObserverFailed() {
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "the audit observer (plugin %s) failed, so trial %d is no evidence: %s",
			sp.plugin.Name, spec.GetTrial(), f.GetObserverError())
	}
	if f.GetCompleteness() == pb.Completeness_COMPLETENESS_UNSPECIFIED {
		return nil, errdefs.Errorf(errdefs.ErrHostUnsupported, "plugin %s did not say whether its audit of trial %d is complete", sp.plugin.Name, spec.GetTrial())
	}
	return f, nil
}

func sendFile(stream pb.Audit_JudgeClient, name string) error {
	f, err := os.Open(name)
	if err != nil {
		// A trace file the observer never wrote is the observer's failure;
		// the plugin judges an empty file and says so.
		if errors.Is(err, os.ErrNotExist) {
			return stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Chunk{Chunk: &pb.TraceChunk{File: name, Eof: true}}})
		}
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to read the trace %s: %w", name, err)
	}
	defer f.Close()
	buf := make([]byte, traceChunk)
	for {
		n, rerr := io.ReadFull(f, buf)
		eof := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !eof {
			return errdefs.Errorf(errdefs.ErrHostUnsupported, "unable to read the trace %s: %w", name, rerr)
		}
		if err := stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Chunk{Chunk: &pb.TraceChunk{File: name, Data: buf[:n], Eof: eof}}}); err != nil {
			return errdefs.Errorf(errdefs.ErrPlugin, "sending the trace %s: %w", name, err)
		}
		if eof {
			return nil
		}
	}
}
