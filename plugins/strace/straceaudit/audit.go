// Package straceaudit is warden's Linux audit backend: it wraps the confined
// plan in strace (package trace builds the command line) and judges the
// trace against the grants with core/grant, the one verdict function.
package straceaudit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/grantwire"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/strace/trace"
)

// TraceName is the trace file beneath the trace directory.
const TraceName = "strace.trace"

// Audit is the strace auditor. Strace is the program it runs ("strace",
// found with PATH by the core, when empty).
type Audit struct {
	Strace string
}

// New returns the auditor.
func New() *Audit { return &Audit{} }

// Describe names the plugin.
func (a *Audit) Describe() sdk.Description {
	return sdk.Description{Name: "strace", Version: "0.1.0",
		Summary:   "audits a confined launch with strace -f --seccomp-bpf and lists every access outside the grants",
		Platforms: []*sdk.Platform{{Goos: "linux"}}}
}

func (a *Audit) strace() string {
	if a.Strace != "" {
		return a.Strace
	}
	return "strace"
}

// Wrap puts strace around the plan, its trace in the trace directory.
func (a *Audit) Wrap(ctx context.Context, req *sdk.WrapRequest) (*sdk.WrapResponse, error) {
	plan := req.GetPlan()
	if len(plan.GetArgv()) == 0 {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "strace: nothing to wrap: the plan has no argv")
	}
	if !filepath.IsAbs(req.GetTraceDir()) {
		return nil, errdefs.Errorf(errdefs.ErrInvalid, "strace: the trace directory %q is not absolute", req.GetTraceDir())
	}
	file := filepath.Join(req.GetTraceDir(), TraceName)
	out := &pb.LaunchPlan{
		Argv: trace.Argv(a.strace(), file, plan.GetArgv()), Env: plan.GetEnv(), Dir: plan.GetDir(),
		FactsJson: plan.GetFactsJson(), Cleanup: plan.GetCleanup(),
	}
	return &sdk.WrapResponse{Plan: out, TraceFiles: []string{file}}, nil
}

// Judge judges the trace of one launch.
func (a *Audit) Judge(ctx context.Context, obs *sdk.Observations) (*sdk.Findings, error) {
	h := obs.Header
	spec := h.GetSpec()
	table, err := Table(spec)
	if err != nil {
		return nil, err
	}
	j := &trace.Judge{Table: table.Files, Exec: table.Exec, Real: hostReal, Targets: Targets(spec), Map: SandboxMap(spec), Cwd: spec.GetDir()}
	var rep trace.Report
	n := 0
	for {
		name, r, err := obs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("strace: unable to read the trace: %w", err)
		}
		if filepath.Base(name) != TraceName {
			continue
		}
		n++
		rep = j.Read(r)
	}
	f := &sdk.Findings{Lines: rep.Lines}
	switch {
	case n == 0:
		return failed(f, "no strace trace was handed back"), nil
	case rep.Error != "":
		return failed(f, rep.Error), nil
	}
	if sig := h.GetExit().GetSignal(); sig != "" && !h.GetExit().GetTimedOut() && !h.GetExit().GetStopped() && !sameSignal(sig, rep.FirstKilled) {
		// strace re-raises the signal that killed its tracee; any other
		// death by a signal is the observer's own.
		return failed(f, fmt.Sprintf("strace itself died by a signal (%s)", sig)), nil
	}
	for _, x := range rep.Findings {
		f.Accesses = append(f.Accesses, &pb.Access{Path: x.Path, Op: x.Op.String(), Syscall: x.Syscall, Pid: int32(x.Pid),
			Result: x.Result, Rule: x.Rule, Reason: x.Reason, Spelled: x.Spelled})
	}
	counts := map[string]int{}
	for _, x := range rep.Findings {
		counts[x.Op.String()+" "+x.Path] = x.Count
	}
	f.FactsJson, _ = json.Marshal(map[string]any{"observer": "strace", "calls": counts})
	f.Completeness = pb.Completeness_COMPLETENESS_COMPLETE
	return f, nil
}

// sameSignal compares the core's name of a signal (Go's, "killed") with
// strace's ("SIGKILL").
func sameSignal(core, strace string) bool {
	if strace == "" {
		return false
	}
	n := unix.SignalNum(strace)
	return core == strace || (n != 0 && syscall.Signal(n).String() == core)
}

// Targets are the argvs that start the target: the spec's argv, and the
// admitted path with the spec's arguments (what bwrap runs, since it has no
// --argv0).
func Targets(spec *pb.LaunchSpec) [][]string {
	argv := spec.GetArgv()
	if len(argv) == 0 {
		return nil
	}
	t := [][]string{argv}
	if p := spec.GetPath(); p != "" && p != argv[0] {
		t = append(t, append([]string{p}, argv[1:]...))
	}
	return t
}

func failed(f *sdk.Findings, why string) *sdk.Findings {
	f.ObserverFailed = true
	f.ObserverError = "strace: " + why
	f.Completeness = pb.Completeness_COMPLETENESS_UNSPECIFIED
	return f
}

// Table compiles the launch's grant table: the layers of the spec and the
// places of the sandbox (the workspace at its own path, the call directories,
// the private home at the home path, the covered paths hidden).
func Table(spec *pb.LaunchSpec) (grant.Table, error) {
	places := grant.Places{Workspace: spec.GetWorkspace(), PrivateHome: spec.GetHome(), Hidden: spec.GetCover()}
	for _, d := range spec.GetCallDirs() {
		places.CallDirs = append(places.CallDirs, d.GetHostPath())
	}
	if pr := spec.GetPrivateRoot(); pr != "" {
		places.Hidden = append(places.Hidden, pr)
	}
	var layers []grant.Layer
	for _, g := range spec.GetGrants() {
		layers = append(layers, grantwire.FromProto(g))
	}
	t, err := grant.Compile(places, grant.Tools{}, layers...)
	if err != nil {
		return grant.Table{}, fmt.Errorf("strace: unable to compile the grants: %w", err)
	}
	return t, nil
}

// hostReal is the real path of p on the host, "" when it cannot be read.
// The sandbox's root is the host's, read-only, so a system path's links are
// the host's; a link the target made and removed reads as "" and its
// access is judged by its spelling.
func hostReal(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// SandboxMap maps a path in the sandbox's view to the host's: a call
// directory's sandbox path (/dev/<name>) to its host path.
func SandboxMap(spec *pb.LaunchSpec) func(string) string {
	dirs := spec.GetCallDirs()
	return func(p string) string {
		for _, d := range dirs {
			s := strings.TrimSuffix(d.GetSandboxPath(), "/")
			if s == "" || s == d.GetHostPath() {
				continue
			}
			if p == s {
				return d.GetHostPath()
			}
			if strings.HasPrefix(p, s+"/") {
				return d.GetHostPath() + p[len(s):]
			}
		}
		return p
	}
}
