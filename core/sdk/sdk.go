// Package sdk is what a platform team imports to write a warden plugin: one
// small interface per stage, one Serve call. A complete confine backend:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/warden-run/warden/core/sdk"
//	)
//
//	type nojail struct{}
//
//	func (nojail) Describe() sdk.Description {
//		return sdk.Description{Name: "nojail", Version: "0.1.0", Summary: "runs the target as is"}
//	}
//
//	func (nojail) Probe(ctx context.Context, h *sdk.HostInfo) *sdk.ProbeResponse {
//		return sdk.Healthy("always usable", nil)
//	}
//
//	func (nojail) Plan(ctx context.Context, spec *sdk.LaunchSpec) (*sdk.LaunchPlan, error) {
//		return &sdk.LaunchPlan{Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir}, nil
//	}
//
//	func main() { sdk.Serve(nojail{}) }
//
// Build it as warden-plugin-nojail, put it on $WARDEN_PLUGIN_PATH, and name
// it in a pipeline: `- confine: {plugin: nojail}`.
//
// The contract every plugin keeps (checked by core/sdk/conformance):
//   - Describe is static and its Name equals the <name> of the binary's
//     file name warden-plugin-<name>.
//   - Probe answers Healthy only when the host can really do the work; any
//     other answer stops a run that needs the plugin with exit 12 and the
//     reason the plugin gave.
//   - Stage calls return plans and findings, never start the target: the
//     core launches and supervises every process a plan names, and writes
//     every byte of the run directory.
//   - The plugin never writes to stdout (it would break the handshake), logs
//     through Logger() as JSON on stderr, and returns errors classed with the
//     Err* values below so the core maps them to the right exit code.
//
// The SDK imports only the protocol, go-plugin and core/errdefs; nothing of
// the core's internals reaches a third-party plugin.
package sdk

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/warden-run/warden/core/errdefs"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// Version is the SDK's semver, reported in Describe.
const Version = "1.0.0"

// ProtocolVersion is the plugin protocol major this SDK speaks.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake every warden plugin and the core
// share. The cookie is not a secret: it only tells a user who runs a plugin
// binary by hand that it is not meant to be run that way.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "WARDEN_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "7f3c1e0a9d5b4c2e8a6f1d3b5c7e9a0b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c",
}

// The protocol's messages, under the names plugin authors use.
type (
	HostInfo          = pb.HostInfo
	ProbeResponse     = pb.ProbeResponse
	ConfigureRequest  = pb.ConfigureRequest
	LaunchSpec        = pb.LaunchSpec
	LaunchPlan        = pb.LaunchPlan
	BuildRequest      = pb.BuildRequest
	BuildResponse     = pb.BuildResponse
	WrapRequest       = pb.WrapRequest
	WrapResponse      = pb.WrapResponse
	JudgeHeader       = pb.JudgeHeader
	Findings          = pb.Findings
	Access            = pb.Access
	ScorePlanRequest  = pb.ScorePlanRequest
	ScorePlanResponse = pb.ScorePlanResponse
	ScoreParseRequest = pb.ScoreParseRequest
	ScoreResult       = pb.ScoreResult
	SealRequest       = pb.SealRequest
	SealResponse      = pb.SealResponse
	Platform          = pb.Platform
	Capabilities      = pb.Capabilities
)

// Error classes a plugin returns (wrap them with %w). The core turns them
// into exit codes: ErrHostUnsupported 12, ErrInvalidConfig 2, ErrIntegrity
// 12, ErrInternal 5. An unclassed error is ErrInternal.
var (
	ErrHostUnsupported = errdefs.ErrHostUnsupported
	ErrInvalidConfig   = errdefs.ErrInvalid
	ErrIntegrity       = errdefs.ErrIntegrity
	ErrInternal        = errdefs.ErrPlugin
)

// Description is what Describe returns. The SDK fills in the stages (from
// the interfaces the plugin implements), the protocol versions and its own
// version.
type Description struct {
	Name    string // must equal <name> in the binary's name warden-plugin-<name>
	Version string // semver, e.g. "1.2.0"
	Summary string // one line for `warden plugins`
	// WithSchema is the JSON Schema (draft-07) of the stage's `with:` block;
	// nil means the block must be empty. The core validates the block against
	// it before Configure, so Configure can decode without re-checking.
	WithSchema []byte
	// Platforms lists where the plugin works; empty means everywhere.
	Platforms    []*Platform
	Capabilities *Capabilities
}

// Plugin is what every plugin implements; a stage interface adds the calls
// of its stage.
type Plugin interface {
	// Describe is static: no host I/O, the same answer every time.
	Describe() Description
	// Probe checks this host. It returns Healthy only when a trial would
	// really work (e.g. a trial sandbox actually starts), and otherwise
	// says why in the reason an operator reads.
	Probe(ctx context.Context, host *HostInfo) *ProbeResponse
}

// Configurer is optional: a plugin with a `with:` block receives it here,
// already validated against WithSchema, before any stage call.
type Configurer interface {
	Configure(ctx context.Context, req *ConfigureRequest) error
}

// Closer is optional: Close runs before the core ends the plugin's process.
type Closer interface {
	Close(ctx context.Context) error
}

// Workspacer builds the disposable checkout the target works in.
//
// Build gets the repository, the commit, the folder to withhold, an empty
// directory to build the checkout in and an empty private directory for the
// withheld folder. It returns where the checkout is and which host paths
// the target must not see. Helper processes (git) are the plugin's own and
// must end with the call (use Command).
type Workspacer interface {
	Plugin
	Build(ctx context.Context, req *BuildRequest) (*BuildResponse, error)
}

// Confiner plans the confined launch of a target.
//
// Plan receives the launch spec (the admitted program and argv, its
// environment, the workspace, the call directories, the grants and the
// paths to cover) and returns the command that runs it confined: for
// bubblewrap, `bwrap <mounts> -- <argv>`. Plan starts nothing; it must be
// deterministic for one spec and host, must not go through a shell, and
// must refuse (ErrHostUnsupported) rather than return a weaker plan.
type Confiner interface {
	Plugin
	Plan(ctx context.Context, spec *LaunchSpec) (*LaunchPlan, error)
}

// Releaser is optional for a Confiner: Release undoes what a plan left on
// the host (the plan's Cleanup tokens) once its process has ended, and
// returns what it removed.
type Releaser interface {
	Release(ctx context.Context, cleanup []string) ([]string, error)
}

// Auditor observes a confined launch and judges what it saw.
//
// Wrap receives the confined plan and a private trace directory and returns
// the plan with the observer around it (strace -f -o <trace_dir>/… -- bwrap …)
// and the trace files to hand back. After the process has ended, the core
// streams those files to Judge, which judges every access against the
// grants in the header's spec (with core/grant, the one verdict function)
// and returns the accesses outside them and the channel's completeness. An
// observer that failed (died, truncated trace, no start of the target) is
// reported with ObserverFailed, never as an empty list.
type Auditor interface {
	Plugin
	Wrap(ctx context.Context, req *WrapRequest) (*WrapResponse, error)
	Judge(ctx context.Context, obs *Observations) (*Findings, error)
}

// Scorer names the evaluator command and reads its result.
//
// PlanScore returns the command the core runs in the workspace after the
// target (with the withheld folder restored) and the output format; Parse
// turns the evaluator's output and exit into counts and a pass verdict.
type Scorer interface {
	Plugin
	PlanScore(ctx context.Context, req *ScorePlanRequest) (*ScorePlanResponse, error)
	Parse(ctx context.Context, req *ScoreParseRequest) (*ScoreResult, error)
}

// Sealer seals the run: it gets the digest of every file of the run
// directory and run.json's bytes and returns the files that seal them,
// which the core writes.
type Sealer interface {
	Plugin
	Seal(ctx context.Context, req *SealRequest) (*SealResponse, error)
}

// Healthy returns a healthy probe answer.
func Healthy(note string, facts map[string]string) *ProbeResponse {
	return &ProbeResponse{Health: pb.ProbeResponse_HEALTH_HEALTHY, Reason: note, Facts: facts}
}

// Unhealthy returns a probe answer that stops a run needing the plugin,
// with the reason an operator reads.
func Unhealthy(reason string, facts map[string]string) *ProbeResponse {
	return &ProbeResponse{Health: pb.ProbeResponse_HEALTH_UNHEALTHY, Reason: reason, Facts: facts}
}

var logger hclog.Logger = hclog.NewNullLogger()

// Logger is the plugin's logger: JSON lines on stderr at the level the core
// passes in WARDEN_LOG (default warn). The core keeps the last lines for
// its error messages.
func Logger() hclog.Logger { return logger }

// Serve runs p as a plugin until the core ends it. It never returns
// normally. Run by hand (without the core's handshake), it prints what the
// binary is and exits 1.
func Serve(p Plugin) {
	level := hclog.LevelFromString(os.Getenv("WARDEN_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	logger = hclog.New(&hclog.LoggerOptions{
		Name:       p.Describe().Name,
		Level:      level,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	go watchParent(os.Getppid())
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: PluginSet(p)},
		GRPCServer:       newGRPCServer,
		Logger:           logger,
	})
	os.Exit(0)
}

// watchParent ends the plugin when the core that started it is gone. On
// Linux the core also sets Pdeathsig; on other systems this is the only
// tie, so no plugin outlives a core killed with SIGKILL.
func watchParent(ppid int) {
	for {
		time.Sleep(500 * time.Millisecond)
		if os.Getppid() != ppid {
			os.Exit(1)
		}
	}
}

// Observations is what Judge reads: the header, then each trace file in
// the order the core sends them.
type Observations struct {
	Header *JudgeHeader
	next   func() (string, io.Reader, error)
}

// Next returns the next trace file's name and a reader over its bytes, or
// io.EOF after the last one. Calling Next discards what is left unread of
// the previous file.
func (o *Observations) Next() (string, io.Reader, error) { return o.next() }

// NewObservations makes Observations from in-memory files, for tests of a
// Judge implementation.
func NewObservations(h *JudgeHeader, names []string, files [][]byte) *Observations {
	i := 0
	return &Observations{Header: h, next: func() (string, io.Reader, error) {
		if i >= len(names) {
			return "", nil, io.EOF
		}
		i++
		return names[i-1], bytesReader(files[i-1]), nil
	}}
}

// StageOf lists the stages p serves, from the interfaces it implements.
func StageOf(p Plugin) []pb.Stage {
	var s []pb.Stage
	if _, ok := p.(Workspacer); ok {
		s = append(s, pb.Stage_STAGE_WORKSPACE)
	}
	if _, ok := p.(Confiner); ok {
		s = append(s, pb.Stage_STAGE_CONFINE)
	}
	if _, ok := p.(Auditor); ok {
		s = append(s, pb.Stage_STAGE_AUDIT)
	}
	if _, ok := p.(Scorer); ok {
		s = append(s, pb.Stage_STAGE_SCORE)
	}
	if _, ok := p.(Sealer); ok {
		s = append(s, pb.Stage_STAGE_SEAL)
	}
	return s
}
